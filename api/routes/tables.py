"""Tables: created and changed by admins; read by every role."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import APIRouter, HTTPException, status
from sqlalchemy import select

from api import audit
from api.db.models import GameTable
from api.deps import Admin, AnyRole, DatabaseDep
from api.errors import RulesRefusedError
from api.rounds import check_table_config
from api.schemas.errors import ANY_UNPROCESSABLE, AUTH_RESPONSES, RULES_OR_VALIDATION, errors
from api.schemas.tables import TableIn, TableOut, TableUpdate

router = APIRouter(prefix="/v1/tables", tags=["tables"], responses=AUTH_RESPONSES)


def table_out(row: GameTable) -> TableOut:
    """Response form of a table."""
    return TableOut.model_validate(row, from_attributes=True)


@router.post(
    "",
    status_code=status.HTTP_201_CREATED,
    response_model=TableOut,
    responses=errors(
        400,
        (409, "A table with this id exists."),
        (422, "A malformed table, or a paytable or settings the rules engine refuses, by clause."),
        unprocessable=RULES_OR_VALIDATION,
    ),
)
def create_table(body: TableIn, principal: Admin, database: DatabaseDep) -> TableOut:
    """Create a table (admin). The paytable and settings are checked by the rules engine."""
    try:
        check_table_config(game=body.game, paytable=body.paytable, settings=body.settings)
    except RulesRefusedError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=exc.detail()) from exc
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
        return table_out(row)


@router.get("", response_model=list[TableOut])
def list_tables(_: AnyRole, database: DatabaseDep) -> list[TableOut]:
    """Every table (any role)."""
    with database.read_session() as session:
        return [table_out(row) for row in session.scalars(select(GameTable).order_by(GameTable.id))]


@router.get("/{table_id}", response_model=TableOut, responses=errors(404))
def get_table(table_id: str, _: AnyRole, database: DatabaseDep) -> TableOut:
    """One table (any role)."""
    with database.read_session() as session:
        row = session.get(GameTable, table_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
        return table_out(row)


@router.patch(
    "/{table_id}",
    response_model=TableOut,
    responses=errors(
        400,
        404,
        (422, "A malformed change, settings set to null, or a paytable or settings the engine refuses."),
        unprocessable=ANY_UNPROCESSABLE,
    ),
)
def update_table(table_id: str, body: TableUpdate, principal: Admin, database: DatabaseDep) -> TableOut:
    """Change a table (admin); rounds already open keep the configuration they were opened with."""
    changes = body.model_dump(exclude_unset=True)
    with database.session() as session:
        row = session.get(GameTable, table_id, with_for_update=True)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
        paytable = changes.get("paytable", row.paytable)
        settings = changes.get("settings", row.settings)
        if settings is None:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail="settings may not be null")
        try:
            check_table_config(game=row.game, paytable=paytable, settings=settings)
        except RulesRefusedError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, detail=exc.detail()) from exc
        for name, value in changes.items():
            setattr(row, name, value)
        row.updated_at = datetime.now(UTC)
        audit.append(
            session, actor=principal.actor, action="table.update", subject=f"table:{row.id}", payload=changes
        )
        session.flush()
        return table_out(row)
