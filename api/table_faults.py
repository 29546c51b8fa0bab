"""A table's own trouble: its calibration, its enrollment or its camera, told apart from the service's.

One table's broken calibration file, damaged enrollment or lost camera stops that table, never the others
and never the service's readiness (`/readyz` answers 503 only when the service itself cannot serve). Each
fault is shown where people look: `GET /v1/tables/{id}` (`faults`), `/readyz` (`tables`) and the dashboard.

- calibration: the calibration the table names cannot be loaded (missing, changed since, damaged), as
  `calibration.store.load_table` finds it;
- enrollment: the table's enrollment file is damaged, or was fitted on another face model than the one
  the manifest ships (`vision.pips.enrolled`);
- camera: the table's live loop could not start or stopped (the service's own loop, `api.live_service`),
  or the newest of a camera alert pair (`camera_lost`/`camera_recovered`, `camera_moved`/`camera_in_place`,
  `camera_exposure`/`camera_exposure_ok`) is the bad one and nobody has acknowledged it (a table worker's
  loop raises them by REST too); acknowledging the alert clears the fault shown.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from api.db.models import Alert

FaultPart = Literal["calibration", "enrollment", "camera"]

# Camera alert pairs: the bad kind, and the kind that says it is put right.
CAMERA_ALERT_PAIRS: tuple[tuple[str, str], ...] = (
    ("camera_lost", "camera_recovered"),
    ("camera_moved", "camera_in_place"),
    ("camera_exposure", "camera_exposure_ok"),
)
_CAMERA_KINDS = tuple(kind for pair in CAMERA_ALERT_PAIRS for kind in pair)

# What the service's own live loops know of a table (api.live_service.LiveService.loop_fault).
LoopFault = Callable[[str], str | None]


@dataclass(frozen=True)
class TableFault:
    """One thing wrong with one table: which part, and why, in words."""

    part: FaultPart
    detail: str


def calibration_fault(*, calibration_dir: Path, calibration_id: str | None) -> str | None:
    """Why the table's named calibration cannot be loaded, or None (none named, or it loads intact)."""
    if calibration_id is None:
        return None
    from calibration.errors import CalibrationError
    from calibration.store import load_table

    try:
        load_table(calibration_dir, calibration_id)
    except CalibrationError as exc:
        return f"calibration {calibration_id!r}: {exc}"
    return None


def _shipped_face_model_sha256(manifest_path: Path) -> str | None:
    """The SHA-256 of the face model the manifest ships (None: no manifest to say)."""
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        sha256 = manifest["models"]["pips"]["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return sha256 if isinstance(sha256, str) else None


def enrollment_fault(*, calibration_dir: Path, table_id: str, manifest_path: Path) -> str | None:
    """Why the table's enrollment cannot be used, or None (it has none, or it fits the shipped model)."""
    from calibration.errors import InvalidTableIdError
    from vision.pips.enrolled import EnrollmentError, load_enrollment
    from vision.table.no_die import NoDieError, load_no_die

    try:
        enrollment = load_enrollment(calibration_dir, table_id)
        load_no_die(calibration_dir, table_id)  # the table's no-die filter, learned with it
    except InvalidTableIdError:
        return None  # an id no file can be named after has no enrollment
    except EnrollmentError as exc:
        return f"enrollment: {exc}"
    except NoDieError as exc:
        return f"no-die filter: {exc}"
    if enrollment is None:
        return None
    shipped = _shipped_face_model_sha256(manifest_path)
    if shipped is not None and enrollment.model_sha256 != shipped:
        return (
            f"enrollment: fitted on face model {enrollment.model_sha256[:12]}..., the reader runs "
            f"{shipped[:12]}... (enroll the table again)"
        )
    return None


def camera_alert_faults(session: Session, table_ids: Iterable[str]) -> dict[str, list[TableFault]]:
    """Per table, the camera alerts whose pair's newest alert is the bad one, unacknowledged."""
    wanted = list(table_ids)
    if not wanted:
        return {}
    newest = (
        select(func.max(Alert.id))
        .where(Alert.kind.in_(_CAMERA_KINDS), Alert.table_id.in_(wanted))
        .group_by(Alert.table_id, Alert.kind)
    )
    rows = session.scalars(select(Alert).where(Alert.id.in_(newest))).all()
    latest = {(row.table_id, row.kind): row for row in rows}
    out: dict[str, list[TableFault]] = {}
    for table_id in wanted:
        for bad, good in CAMERA_ALERT_PAIRS:
            alert = latest.get((table_id, bad))
            fixed = latest.get((table_id, good))
            if alert is None or alert.acknowledged_at is not None:
                continue
            if fixed is not None and fixed.id > alert.id:
                continue
            detail = f"alert {alert.id} ({bad}, unacknowledged): {alert.message}"
            out.setdefault(table_id, []).append(TableFault(part="camera", detail=detail))
    return out


def table_faults(
    session: Session,
    *,
    tables: Iterable[tuple[str, str | None]],
    calibration_dir: Path,
    manifest_path: Path,
    loop_fault: LoopFault | None = None,
) -> dict[str, tuple[TableFault, ...]]:
    """Every fault of each `(table_id, calibration_id)`: calibration, enrollment, camera (see the module)."""
    named = list(tables)
    cameras = camera_alert_faults(session, [table_id for table_id, _ in named])
    out: dict[str, tuple[TableFault, ...]] = {}
    for table_id, calibration_id in named:
        found: list[TableFault] = []
        if why := calibration_fault(calibration_dir=calibration_dir, calibration_id=calibration_id):
            found.append(TableFault(part="calibration", detail=why))
        if why := enrollment_fault(
            calibration_dir=calibration_dir, table_id=table_id, manifest_path=manifest_path
        ):
            found.append(TableFault(part="enrollment", detail=why))
        if loop_fault is not None and (why := loop_fault(table_id)):
            found.append(TableFault(part="camera", detail=why))
        found.extend(cameras.get(table_id, ()))
        out[table_id] = tuple(found)
    return out
