"""Tables: created and changed by admins; read by every role, each with its own faults.

A `calibration_id` is checked when it is set (create or change): one that cannot name a calibration file
(a path, `..`, over 64 characters) is 422, one with no calibration stored under it 404, one whose file is
damaged or was recalibrated since 422, each with the reason; so a table is never pointed at nothing. What
goes wrong later (a file damaged on disk, a camera lost) is that table's fault, shown in `faults`
(api/table_faults.py), and stops only that table.
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, Request, status
from sqlalchemy import select

from api import table_service
from api.db.models import GameTable
from api.deps import Admin, AnyRole, DatabaseDep, SettingsDep
from api.schemas.errors import ANY_UNPROCESSABLE, AUTH_RESPONSES, errors
from api.schemas.tables import TableIn, TableOut, TableUpdate

router = APIRouter(prefix="/v1/tables", tags=["tables"], responses=AUTH_RESPONSES)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TableOut,
    responses=errors(
        400,
        (404, "The calibration_id names no stored calibration."),
        (409, "A table with this id exists."),
        (
            422,
            "A malformed table, a paytable or settings the rules engine refuses (by clause), or a "
            "calibration_id that cannot name a calibration or whose file is damaged.",
        ),
        unprocessable=ANY_UNPROCESSABLE,
    ),
)
def create_table(
    body: TableIn, principal: Admin, database: DatabaseDep, settings: SettingsDep, request: Request
) -> TableOut:
    """Create a table (admin). The paytable and settings are checked by the rules engine, the calibration
    it names is loaded."""
    return table_service.create_table(
        database=database, settings=settings, request=request, body=body, actor=principal.actor
    )


@router.get("", response_model=list[TableOut])
def list_tables(_: AnyRole, database: DatabaseDep, settings: SettingsDep, request: Request) -> list[TableOut]:
    """Every table (any role), each with its faults."""
    with database.read_session() as session:
        rows = list(session.scalars(select(GameTable).order_by(GameTable.id)))
        faults = table_service.faults_of(session, request=request, settings=settings, rows=rows)
        return [table_service.table_out(row, faults[row.id]) for row in rows]


@router.get("/{table_id}", response_model=TableOut, responses=errors(404))
def get_table(
    table_id: str, _: AnyRole, database: DatabaseDep, settings: SettingsDep, request: Request
) -> TableOut:
    """One table (any role), with its faults: a calibration or enrollment that cannot be loaded, a
    camera lost or moved."""
    with database.read_session() as session:
        row = session.get(GameTable, table_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
        return table_service.table_out(
            row, table_service.faults_of(session, request=request, settings=settings, rows=[row])[row.id]
        )


@router.patch(
    "/{table_id}",
    response_model=TableOut,
    responses=errors(
        400,
        (404, "No such table, or the calibration_id names no stored calibration."),
        (
            422,
            "A malformed change, settings set to null, a paytable or settings the engine refuses, or a "
            "calibration_id that cannot name a calibration or whose file is damaged.",
        ),
        unprocessable=ANY_UNPROCESSABLE,
    ),
)
def update_table(
    table_id: str,
    body: TableUpdate,
    principal: Admin,
    database: DatabaseDep,
    settings: SettingsDep,
    request: Request,
) -> TableOut:
    """Change a table (admin); rounds already open keep the configuration they were opened with. A
    calibration_id set is loaded first (null takes the calibration away)."""
    return table_service.update_table(
        database=database,
        settings=settings,
        request=request,
        table_id=table_id,
        body=body,
        actor=principal.actor,
    )
