"""The table routes' service: create and change tables, each in one audited transaction, and the response
form of a table with its faults.

Its routes (api/routes/tables.py) only parse and answer; the errors raised here (api/errors.py) become HTTP
answers in api/http_errors.py. A `calibration_id` set is loaded first, so a table never names nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from fastapi import Request
from sqlalchemy.orm import Session

from api import audit
from api.db.models import GameTable
from api.db.session import Database
from api.errors import NotFoundError, StateConflictError, UnprocessableError
from api.rounds import check_table_config
from api.schemas.tables import TableFaultOut, TableIn, TableOut, TableUpdate
from api.settings import Settings
from api.table_faults import TableFault, table_faults


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
    """Refuse a calibration id that names no usable calibration.

    Raises:
        UnprocessableError: the id cannot name a calibration, or its file is damaged.
        NotFoundError: no calibration is stored under it.
    """
    from calibration.errors import (
        CalibrationError,
        CalibrationNotFoundError,
        InvalidTableIdError,
    )
    from calibration.store import load_table

    try:
        load_table(settings.calibration_dir, calibration_id)
    except InvalidTableIdError as exc:
        raise UnprocessableError(
            f"calibration_id {calibration_id[:80]!r} cannot name a calibration: {exc}; use a table id "
            "(`throwbox calibrate table --table ID`) or a recorded id `table@created#checksum`"
        ) from exc
    except CalibrationNotFoundError as exc:
        raise NotFoundError(
            f"no calibration {calibration_id!r} is stored in the service's calibration folder "
            "(run `throwbox calibrate table` for it first)"
        ) from exc
    except CalibrationError as exc:
        raise UnprocessableError(f"calibration {calibration_id!r} cannot be used: {exc}") from exc


def create_table(
    *, database: Database, settings: Settings, request: Request, body: TableIn, actor: str
) -> TableOut:
    """Create a table, its paytable and settings checked by the rules engine and its calibration loaded.

    Raises:
        RulesRefusedError: the engine refuses the paytable or settings.
        UnprocessableError, NotFoundError: the calibration_id (`check_calibration_id`).
        StateConflictError: a table with this id exists.
    """
    check_table_config(game=body.game, paytable=body.paytable, settings=body.settings)
    if body.calibration_id is not None:
        check_calibration_id(settings, body.calibration_id)
    with database.session() as session:
        if session.get(GameTable, body.id) is not None:
            raise StateConflictError(f"table {body.id!r} already exists")
        row = GameTable(**body.model_dump())
        session.add(row)
        session.flush()
        audit.append(
            session, actor=actor, action="table.create", subject=f"table:{row.id}", payload=body.model_dump()
        )
        return table_out(row, faults_of(session, request=request, settings=settings, rows=[row])[row.id])


def update_table(
    *,
    database: Database,
    settings: Settings,
    request: Request,
    table_id: str,
    body: TableUpdate,
    actor: str,
) -> TableOut:
    """Change a table; rounds already open keep the configuration they were opened with.

    Raises:
        NotFoundError: no such table (or the calibration_id, `check_calibration_id`).
        UnprocessableError: settings set to null, or the calibration_id (`check_calibration_id`).
        RulesRefusedError: the engine refuses the paytable or settings.
    """
    changes = body.model_dump(exclude_unset=True)
    with database.session() as session:
        row = session.get(GameTable, table_id, with_for_update=True)
        if row is None:
            raise NotFoundError(f"no table {table_id!r}")
        paytable = changes.get("paytable", row.paytable)
        rule_settings = changes.get("settings", row.settings)
        if rule_settings is None:
            raise UnprocessableError("settings may not be null")
        check_table_config(game=row.game, paytable=paytable, settings=rule_settings)
        if changes.get("calibration_id") is not None:
            check_calibration_id(settings, changes["calibration_id"])
        for name, value in changes.items():
            setattr(row, name, value)
        row.updated_at = datetime.now(UTC)
        audit.append(session, actor=actor, action="table.update", subject=f"table:{row.id}", payload=changes)
        session.flush()
        return table_out(row, faults_of(session, request=request, settings=settings, rows=[row])[row.id])
