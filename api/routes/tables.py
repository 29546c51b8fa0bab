"""Tables: created and changed by admins; read by every role, each with its own faults.

A `calibration_id` is checked when it is set (create or change): one that cannot name a calibration file
(a path, `..`, over 64 characters) is 422, one with no calibration stored under it 404, one whose file is
damaged or was recalibrated since 422, each with the reason; so a table is never pointed at nothing. What
goes wrong later (a file damaged on disk, a camera lost) is that table's fault, shown in `faults`
(api/table_faults.py), and stops only that table.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, Request, status
from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit
from api.db.models import GameTable
from api.deps import Admin, AnyRole, DatabaseDep, SettingsDep
from api.errors import RulesRefusedError
from api.rounds import check_table_config
from api.schemas.errors import ANY_UNPROCESSABLE, AUTH_RESPONSES, errors
from api.schemas.tables import TableFaultOut, TableIn, TableOut, TableUpdate
from api.settings import Settings
from api.table_faults import TableFault, table_faults

router = APIRouter(prefix="/v1/tables", tags=["tables"], responses=AUTH_RESPONSES)


def table_out(row: GameTable, faults: Sequence[TableFault] = ()) -> TableOut:
    """Response form of a table, with its faults."""
    out = TableOut.model_validate(row, from_attributes=True)
    out.faults = [TableFaultOut(part=f.part, detail=f.detail) for f in faults]
    return out


def faults_of(
    session: Session, *, request: Request, settings: Settings, rows: Sequence[GameTable]
) -> dict[str, tuple[TableFault, ...]]:
    """The faults of each table in `rows` (its calibration, enrollment, camera; api/table_faults.py)."""
    from vision import onnx_session

    live = getattr(request.app.state, "live", None)
    return table_faults(
        session,
        tables=[(row.id, row.calibration_id) for row in rows],
        calibration_dir=settings.calibration_dir,
        manifest_path=onnx_session.MANIFEST_PATH,
        loop_fault=None if live is None else live.loop_fault,
    )


def check_calibration_id(settings: Settings, calibration_id: str) -> None:
    """Refuse a calibration id that names no usable calibration: 422 malformed or damaged, 404 unknown."""
    from calibration.errors import (
        CalibrationError,
        CalibrationNotFoundError,
        InvalidTableIdError,
    )
    from calibration.store import load_table

    try:
        load_table(settings.calibration_dir, calibration_id)
    except InvalidTableIdError as exc:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            detail=f"calibration_id {calibration_id[:80]!r} cannot name a calibration: {exc}; use a table id "
            "(`throwbox calibrate table --table ID`) or a recorded id `table@created#checksum`",
        ) from exc
    except CalibrationNotFoundError as exc:
        raise HTTPException(
            status.HTTP_404_NOT_FOUND,
            detail=f"no calibration {calibration_id!r} is stored in the service's calibration folder "
            "(run `throwbox calibrate table` for it first)",
        ) from exc
    except CalibrationError as exc:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            detail=f"calibration {calibration_id!r} cannot be used: {exc}",
        ) from exc


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
    try:
        check_table_config(game=body.game, paytable=body.paytable, settings=body.settings)
    except RulesRefusedError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=exc.detail()) from exc
    if body.calibration_id is not None:
        check_calibration_id(settings, body.calibration_id)
    with database.session() as session:
        if session.get(GameTable, body.id) is not None:
            raise HTTPException(status.HTTP_409_CONFLICT, detail=f"table {body.id!r} already exists")
        row = GameTable(**body.model_dump())
        session.add(row)
        session.flush()
        audit.append(
            session,
            actor=principal.actor,
            action="table.create",
            subject=f"table:{row.id}",
            payload=body.model_dump(),
        )
        return table_out(row, faults_of(session, request=request, settings=settings, rows=[row])[row.id])


@router.get("", response_model=list[TableOut])
def list_tables(_: AnyRole, database: DatabaseDep, settings: SettingsDep, request: Request) -> list[TableOut]:
    """Every table (any role), each with its faults."""
    with database.read_session() as session:
        rows = list(session.scalars(select(GameTable).order_by(GameTable.id)))
        faults = faults_of(session, request=request, settings=settings, rows=rows)
        return [table_out(row, faults[row.id]) for row in rows]


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
        return table_out(row, faults_of(session, request=request, settings=settings, rows=[row])[row.id])


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
    changes = body.model_dump(exclude_unset=True)
    with database.session() as session:
        row = session.get(GameTable, table_id, with_for_update=True)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
        paytable = changes.get("paytable", row.paytable)
        rule_settings = changes.get("settings", row.settings)
        if rule_settings is None:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="settings may not be null")
        try:
            check_table_config(game=row.game, paytable=paytable, settings=rule_settings)
        except RulesRefusedError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=exc.detail()) from exc
        if changes.get("calibration_id") is not None:
            check_calibration_id(settings, changes["calibration_id"])
        for name, value in changes.items():
            setattr(row, name, value)
        row.updated_at = datetime.now(UTC)
        audit.append(
            session, actor=principal.actor, action="table.update", subject=f"table:{row.id}", payload=changes
        )
        session.flush()
        return table_out(row, faults_of(session, request=request, settings=settings, rows=[row])[row.id])
