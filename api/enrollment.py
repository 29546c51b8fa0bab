"""Table enrollment in the service (issue 47): labelled dice from the dealer-confirmed rolls it stores, the
background job that fits a table's enrollment, and the record of every change (audit entry and event).

The fit itself and the photo and frame sources are `vision.pips.enroll` and `api.enrollment_sources`, shared
with `throwbox enroll`. What is the service's own:

- **Confirmed rolls** (`confirmed_examples`): a roll the dealer keyed (`source` "dealer", verdict valid,
  applied) is a confirmed result. Its read is the one its submission named (`read_id`, taken from the roll's
  audited submission, checked against the roll's `request_sha256`), or else the table's read whose evidence
  frame is the roll's. The read gives the die boxes and the reader's faces, the roll's evidence frame (or
  the read's) the pixels, and `api.enrollment_sources.assign_confirmed` which dice's faces are certain.
  Cocked, stacked and off-table dice are left out (their crop is not a flat die's). The newest rolls first.
- **Jobs** (`start_job`, `run_job`): a row of `enrollment_jobs` (state queued -> running -> done | failed,
  progress 0..1), so any replica answers for it; the fit runs in a thread of the replica that took it. A job
  whose row has not moved for `STALE_AFTER` is taken as dead (its replica stopped) and no longer blocks a
  new one for the table. A fit that does not prove itself by cross-validation
  (`vision.pips.enroll.Validation`) is not stored: the job ends `failed`, its error giving both figures and
  its `validation` them all, unless it was asked with `force` (stored, and recorded as forced).
- **Record** (`record_change`): every change of a table's enrollment (fitted, deleted) is an audit entry and
  an `enrollment` event in one transaction.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit
from api.audit import EvidenceError, canonical_json, load_evidence
from api.db.models import AuditEntry, EnrollmentJob, GameTable, Read, Roll
from api.db.session import Database
from api.enrollment_sources import FACES, MAX_DICE, Example, assign_confirmed, balanced, dice_per_face
from api.events import publish
from vision.onnx_session import OnnxModel
from vision.pips.enroll import EnrollDataError
from vision.pips.enrolled import Enrollment

log = logging.getLogger("throwbox.enrollment")

SOURCES = ("photos", "frames", "confirmed")
ACTIVE_STATES = ("queued", "running")
STALE_AFTER = timedelta(minutes=10)
MAX_LISTED = 100  # rolls named in a job's report of what was used and skipped
ROLLS_LOOKED_AT = 2_000  # the newest confirmed rolls a confirmed enrollment looks through


def now_utc() -> datetime:
    return datetime.now(UTC)


# --- confirmed rolls -------------------------------------------------------------------------------------


@dataclass
class ConfirmedExamples:
    """Labelled dice from confirmed rolls, and what was used and skipped (roll by roll)."""

    examples: list[Example]
    used: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    rolls_looked_at: int = 0

    def report(self) -> dict[str, Any]:
        return {
            "rolls_looked_at": self.rolls_looked_at,
            "rolls_used": len(self.used),
            "rolls_skipped": len(self.skipped),
            "used": self.used[:MAX_LISTED],
            "skipped": self.skipped[:MAX_LISTED],
        }


def submitted_read_id(session: Session, roll: Roll) -> str | None:
    """The read the roll's submission named: its audited body, whose hash must be the roll's own."""
    if roll.round_id is None:
        return None
    entries = session.scalars(
        select(AuditEntry).where(
            AuditEntry.action == "roll.submit", AuditEntry.subject == f"round:{roll.round_id}"
        )
    )
    for entry in entries:
        try:
            body = json.loads(entry.payload)["roll"]
        except (ValueError, KeyError, TypeError):
            continue
        if not isinstance(body, dict) or body.get("roll_id") != roll.id:
            continue
        if hashlib.sha256(canonical_json(body).encode()).hexdigest() != roll.request_sha256:
            continue
        read_id = body.get("read_id")
        return read_id if isinstance(read_id, str) else None
    return None


def plain_frame(session: Session, evidence_dir: Path, read: Read | None) -> Any:
    """The read's plain frame (the camera's, nothing drawn on it: `api.read_records.FRAME_KEY`), decoded.
    An `EvidenceError` where the read kept none: its evidence frame has the reader's boxes and words drawn
    over the dice, and a table that learned from those crops would learn the drawing (reads stored before
    2026-12-08 kept only that one)."""
    from api.read_records import FRAME_KEY

    sha256 = read.result.get(FRAME_KEY) if read is not None and isinstance(read.result, dict) else None
    if not isinstance(sha256, str):
        raise EvidenceError(
            "no plain frame: the read kept only its annotated evidence frame, not fit to learn from"
        )
    return _frame(session, evidence_dir, sha256)


def _frame(session: Session, evidence_dir: Path, sha256: str) -> Any:
    import cv2
    import numpy as np

    data, _ = load_evidence(session, evidence_dir=evidence_dir, sha256=sha256)
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    if image is None:
        raise EvidenceError(f"evidence frame {sha256} is not a readable image")
    return image


def confirmed_examples(
    session: Session,
    *,
    table_id: str,
    evidence_dir: Path,
    limit: int = MAX_DICE,
    skip_roll_ids: frozenset[str] = frozenset(),
) -> ConfirmedExamples:
    """Labelled dice from the table's dealer-confirmed rolls, newest first, balanced over faces; the rolls
    of `skip_roll_ids` are left out (a refit takes the console's rolls from their labelled boxes)."""
    from vision.pips.crops import crop_die

    rolls = session.scalars(
        select(Roll)
        .where(Roll.table_id == table_id, Roll.source == "dealer", Roll.verdict == "valid", Roll.applied)
        .order_by(Roll.created_at.desc(), Roll.id)
        .limit(ROLLS_LOOKED_AT)
    ).all()
    out = ConfirmedExamples(examples=[], rolls_looked_at=len(rolls))
    by_face: dict[int, list[Example]] = {face: [] for face in FACES}
    for roll in rolls:
        if all(len(v) >= limit for v in by_face.values()):
            break

        def skip(why: str, roll: Roll = roll) -> None:
            out.skipped.append({"roll_id": roll.id, "reason": why})

        if roll.id in skip_roll_ids:
            continue
        read_id = submitted_read_id(session, roll)
        read = session.get(Read, read_id) if read_id is not None else None
        if read is None and roll.evidence_sha256 is not None:
            read = session.scalars(
                select(Read).where(Read.table_id == table_id, Read.evidence_sha256 == roll.evidence_sha256)
            ).first()
        if read is None:
            skip("no read: the roll names none, and no read of this table has its evidence frame")
            continue
        if read.table_id not in (None, table_id):
            skip(f"its read {read.id} is of table {read.table_id!r}")
            continue
        dice = read.result.get("dice") if isinstance(read.result, dict) else None
        if not isinstance(dice, list) or not all(isinstance(d, dict) for d in dice):
            skip(f"its read {read.id} has no dice")
            continue
        read_faces = [
            d.get("face") if isinstance(d.get("face"), int) and not d.get("uncertain") else None for d in dice
        ]
        assignment = assign_confirmed(read_faces, [int(f) for f in roll.faces])
        if assignment.roll_skipped is not None:
            skip(assignment.roll_skipped)
            continue
        try:
            image = plain_frame(session, evidence_dir, read)
        except EvidenceError as exc:
            skip(str(exc))
            continue
        used_here: dict[str, int] = {}
        dice_skipped = dict(assignment.skipped)
        for index, face in sorted(assignment.labels.items()):
            die = dice[index]
            bad = [k for k in ("cocked", "stacked", "off_table") if die.get(k)]
            if bad:
                dice_skipped[index] = f"{' and '.join(bad)}: not a flat die's crop"
                continue
            box = die.get("box_xyxy")
            if not (isinstance(box, list) and len(box) == 4):
                dice_skipped[index] = "no box"
                continue
            if len(by_face[face]) < limit:
                by_face[face].append((crop_die(image, tuple(float(v) for v in box)), face))
                used_here[str(face)] = used_here.get(str(face), 0) + 1
        out.used.append(
            {
                "roll_id": roll.id,
                "read_id": read.id,
                "how": assignment.how,
                "dice_used": sum(used_here.values()),
                "dice_skipped": {str(i + 1): why for i, why in sorted(dice_skipped.items())},
            }
        )
    out.examples = balanced(by_face, limit=limit)
    return out


# --- jobs ------------------------------------------------------------------------------------------------


class JobConflictError(Exception):
    """The table has an enrollment job queued or running."""


def job_document(row: EnrollmentJob) -> dict[str, Any]:
    """The JSON form of a job (`GET /v1/enrollment-jobs/{id}`)."""
    return {
        "job_id": row.id,
        "table_id": row.table_id,
        "source": row.source,
        "state": row.state,
        "progress": round(float(row.progress), 4),
        "dice_per_face": row.dice_per_face,
        "examples": row.examples,
        "result_sha256": row.result_sha256,
        "held_in_accuracy": row.held_in_accuracy,
        "validation": row.examples.get("validation") if isinstance(row.examples, dict) else None,
        "error": row.error,
        "created_by": row.created_by,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
        "finished_at": row.finished_at,
    }


def create_job(
    database: Database,
    *,
    table_id: str,
    source: str,
    examples: Sequence[Example],
    report: dict[str, Any],
    actor: str,
    force: bool = False,
) -> EnrollmentJob:
    """Store a queued job (refused with JobConflictError while another for the table is live) and audit it."""
    with database.session() as session:
        # The table's row is locked first, so two requests at once for one table make one job (PostgreSQL).
        session.scalars(select(GameTable).where(GameTable.id == table_id).with_for_update()).first()
        live = session.scalars(
            select(EnrollmentJob)
            .where(EnrollmentJob.table_id == table_id, EnrollmentJob.state.in_(ACTIVE_STATES))
            .with_for_update()
        ).all()
        for other in live:
            if now_utc() - other.updated_at < STALE_AFTER:
                raise JobConflictError(f"table {table_id!r} has enrollment job {other.id} {other.state}")
            other.state = "failed"
            other.error = f"no progress for {STALE_AFTER}: the replica running it stopped"
            other.finished_at = now_utc()
        row = EnrollmentJob(
            id=uuid.uuid4().hex,
            table_id=table_id,
            source=source,
            state="queued",
            progress=0.0,
            dice_per_face=dice_per_face(examples),
            examples=report,
            created_by=actor,
        )
        session.add(row)
        session.flush()
        audit.append(
            session,
            actor=actor,
            action="enrollment.request",
            subject=f"table:{table_id}",
            payload={
                "job_id": row.id,
                "source": source,
                "dice_per_face": row.dice_per_face,
                "force": force,
            },
        )
        session.expunge(row)
        return row


def _set(database: Database, job_id: str, **values: Any) -> None:
    with database.session() as session:
        row = session.get(EnrollmentJob, job_id)
        if row is None:  # pragma: no cover - a job row is never deleted
            return
        for key, value in values.items():
            setattr(row, key, value)
        row.updated_at = now_utc()


def run_job(
    *,
    database: Database,
    job_id: str,
    table_id: str,
    model: OnnxModel,
    examples: Sequence[Example],
    calibration_dir: Path,
    actor: str,
    webhook_urls: list[str],
    force: bool = False,
) -> None:
    """Fit the enrollment and cross-validate it; store it and record it when it proves itself (or `force`);
    the job row follows (progress, then done, or failed with the figures)."""
    from vision.pips.enroll import enroll_table, forced
    from vision.pips.enrolled import save_enrollment

    last = [0.0, 0.0]  # progress told, when

    def progress(share: float) -> None:
        if share - last[0] >= 0.05 or time.monotonic() - last[1] >= 1.0:
            last[:] = [share, time.monotonic()]
            _set(database, job_id, progress=min(share, 0.99))

    try:
        _set(database, job_id, state="running")
        result = enroll_table(model, table_id, examples, progress=progress)
        validation = result.validation
        is_forced = not validation.helps
        if is_forced and not force:
            with database.session() as session:
                row = session.get(EnrollmentJob, job_id)
                if row is None:  # pragma: no cover - a job row is never deleted
                    return
                row.state, row.error, row.finished_at = "failed", validation.refusal(), now_utc()
                row.updated_at = row.finished_at
                row.held_in_accuracy = round(result.train_accuracy_after, 4)
                row.examples = {
                    **row.examples,
                    "validation": validation.document(),
                    "seconds": round(result.seconds, 2),
                }
            return
        if is_forced:
            result = forced(result)
        saved = save_enrollment(result.enrollment, calibration_dir)
        with database.session() as session:
            row = session.get(EnrollmentJob, job_id)
            if row is None:  # pragma: no cover - a job row is never deleted
                return
            row.state, row.progress, row.finished_at = "done", 1.0, now_utc()
            row.updated_at = row.finished_at
            row.result_sha256 = saved.checksum
            row.held_in_accuracy = round(result.train_accuracy_after, 4)
            row.examples = {
                **row.examples,
                "held_in_accuracy_before": round(result.train_accuracy_before, 4),
                "seconds": round(result.seconds, 2),
                "validation": validation.document(forced=is_forced),
            }
            record_change(
                session,
                action="fitted",
                summary=enrollment_summary(saved),
                actor=actor,
                webhook_urls=webhook_urls,
                extra={"job_id": job_id, "face_model": model.spec.tag, "forced": is_forced},
            )
    except Exception as exc:  # any failure of the fit is the job's answer, said in its row
        log.exception("enrollment job %s failed", job_id)
        message = str(exc) if isinstance(exc, EnrollDataError) else f"{type(exc).__name__}: {exc}"
        _set(database, job_id, state="failed", error=message, finished_at=now_utc())


def start_job(**kwargs: Any) -> threading.Thread:
    """`run_job` in a thread of its own (the caller has stored the job)."""
    thread = threading.Thread(
        target=run_job, kwargs=kwargs, name=f"enroll-{kwargs['job_id'][:8]}", daemon=True
    )
    thread.start()
    return thread


# --- the record of a change -----------------------------------------------------------------------------


def enrollment_summary(enrollment: Enrollment) -> dict[str, Any]:
    """What `GET /v1/tables/{id}/enrollment` says of an enrollment."""
    return {
        "table_id": enrollment.table_id,
        "face_model_sha256": enrollment.model_sha256,
        "sha256": enrollment.checksum,
        "dice_per_face": dict(enrollment.examples),
        "fitted_at": enrollment.fitted_at,
        "validation": enrollment.validation,
    }


def record_change(
    session: Session,
    *,
    action: str,
    summary: dict[str, Any],
    actor: str,
    webhook_urls: list[str],
    extra: dict[str, Any] | None = None,
) -> None:
    """Audit a change of a table's enrollment (`fitted`, `deleted`; its `enrollment_summary`) and publish its
    `enrollment` event, in the caller's transaction."""
    table_id = str(summary["table_id"])
    data = {"action": action, **summary, **(extra or {})}
    audit.append(
        session, actor=actor, action=f"enrollment.{action}", subject=f"table:{table_id}", payload=data
    )
    publish(session, event_type="enrollment", table_id=table_id, data=data, webhook_urls=webhook_urls)


def delete_recorded(
    *, database: Database, calibration_dir: Path, summary: dict[str, Any], actor: str, webhook_urls: list[str]
) -> None:
    """Remove the table's enrollment file (it reads with the shipped model again), audited as `deleted`
    with `summary` (what it was) and published, in one transaction."""
    from vision.pips.enrolled import delete_enrollment

    with database.session() as session:
        record_change(session, action="deleted", summary=summary, actor=actor, webhook_urls=webhook_urls)
        delete_enrollment(calibration_dir, str(summary["table_id"]))
