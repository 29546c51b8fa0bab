"""The table learns from its people (issue 56, item 3): refits from its confirmed dice, guarded, reversible.

- **Labelled dice.** A confirmed roll is labelled dice: a console decision (`console_decisions`) by its
  labelled boxes, each die the person gave a face (the reader's dice and the ones the person added by a
  click); any other dealer-confirmed roll as the enrollment reads it (`api.enrollment.confirmed_examples`:
  only dice whose face is certain). Every crop is cut from the read's plain frame (`api.enrollment.
  plain_frame`), never from its annotated evidence frame. The console's boxes (dice added, boxes struck out
  as no die) are also the detector's labelled boxes (`labelled_boxes`), for a fine-tune.
- **When.** After every `learn_every_dice` confirmed dice (a table setting, `PUT /v1/tables/{id}/learning`;
  `LEARN_EVERY_DICE` where none is set) the next confirmation starts a refit in the background
  (`after_confirmation`): the request that confirmed only counts and claims; the crops, the fit and the
  guard run in a thread of their own, so no read waits on them.
- **How** (`refit_path`): the numpy correction of the face model's head (`vision.pips.enroll`, no torch).
  Where torch is importable and the fine-tune entry point `FINE_TUNE_MODULE` is present, the fine-tune runs
  in a process of its own at nice `FINE_TUNE_NICE` (`run_niced`), never in the service's process; its job
  folder, its result, the guard and the stored model are `api.learning_tune`'s. The table then reads with
  its fine-tuned model (`vision.pips.enrolled`: the table's enrollment record names the file).
- **The guard.** A refit is an enrollment job (`api.enrollment.run_job`, source `learning`): it is stored
  only when, cross-validated on confirmed dice it did not train on, it reads more of them right and is sure
  and wrong on no more than the shipped head (the fine-tune: on one held-out fold of them, the same rule).
  A refit that fails (too few dice, the guard, an error, a child that crashes or stops) is a failed job
  saying why, and the table keeps what it had.
- **Back.** The refit it replaced is kept (`previous_path`); `rollback` goes back to the shipped model or
  to that refit in one call, audited and published as an `enrollment` event.
- **Boxes struck out** (`learn_no_die`): at each refit, before the faces, the table's no-die filter is fitted
  on the console's labelled boxes (vision/table/no_die.py), stored only when it proves itself on frames it
  did not learn from, audited (`learning.no_die`) either way; a failure there never stops the face refit.
- **State** (`learning_state`): one line for the console, e.g. "learned from 1,840 dice on 2026-12-07,
  reads 97 % of its held-out dice".
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit
from api.audit import EvidenceError
from api.db.models import ConsoleDecision, EnrollmentJob, GameTable, Read, Roll, TableLearning
from api.db.session import Database
from api.enrollment import (
    ACTIVE_STATES,
    JobConflictError,
    confirmed_examples,
    create_job,
    plain_frame,
    record_change,
    run_job,
)
from api.enrollment_sources import FACES, Example, balanced, check_enough
from vision.onnx_session import OnnxModel
from vision.pips.enroll import EnrollDataError

log = logging.getLogger("throwbox.learning")

LEARN_EVERY_DICE = 300  # a refit after every 300 confirmed dice (30 rolls of ten) where a table sets none
MIN_EVERY_DICE, MAX_EVERY_DICE = 6, 100_000
LEARN_MAX_DICE = 600  # labelled dice the head's refit uses at most: the newest, balanced over the faces
# The fine-tune's: more of the table's own dice, as a casino table confirms thousands a shift. Its training
# budget (steps, seconds) is the same; the held-out fold its guard reads grows with it. Raised from 600 after
# the learn-bench counted why rolls are still left (docs/history/learning-more-dice.md).
FINE_TUNE_MAX_DICE = 3000
LEARN_SOURCE = "learning"
LEARN_ACTOR = "learning:refit"
FINE_TUNE_MODULE = "models.table_finetune"  # the torch fine-tune's entry point (the `train` extra)
FINE_TUNE_NICE = 15
RefitPath = Literal["head", "fine_tune"]
RollbackTo = Literal["shipped", "previous"]


class LearningError(Exception):
    """A learning request that cannot be done (no such table, nothing to roll back to); says why."""


# --- labelled dice and boxes -----------------------------------------------------------------------------


def confirmed_dice(session: Session, table_id: str) -> int:
    """The dice of the table's confirmed rolls (dealer rolls, valid and applied; the console's among them)."""
    faces = session.scalars(
        select(Roll.faces).where(
            Roll.table_id == table_id, Roll.source == "dealer", Roll.verdict == "valid", Roll.applied
        )
    )
    return sum(len(f) for f in faces if isinstance(f, list))


def console_examples(
    session: Session, *, table_id: str, evidence_dir: Path, limit: int
) -> tuple[dict[int, list[Example]], set[str], list[dict[str, Any]]]:
    """(crops by face, the dealer rolls they came from, what was skipped) of the table's valid console
    decisions, newest first: every box the person gave a face, cut from the read's plain frame."""
    from vision.pips.crops import crop_die

    by_face: dict[int, list[Example]] = {face: [] for face in FACES}
    used: set[str] = set()
    skipped: list[dict[str, Any]] = []
    rows = session.scalars(
        select(ConsoleDecision)
        .where(ConsoleDecision.table_id == table_id, ConsoleDecision.verdict == "valid")
        .order_by(ConsoleDecision.created_at.desc())
    ).all()
    for row in rows:
        if all(len(v) >= limit for v in by_face.values()):
            break
        used.add(row.dealer_roll_id)  # taken from here or not at all, never a second time from the roll
        try:
            image = plain_frame(session, evidence_dir, session.get(Read, row.read_id))
        except EvidenceError as exc:
            skipped.append({"roll_id": row.dealer_roll_id, "reason": str(exc)})
            continue
        for box in row.boxes:
            face = box.get("face")
            if box.get("label") != "die" or box.get("kept") or not isinstance(face, int) or face not in FACES:
                continue
            if len(by_face[face]) < limit:
                by_face[face].append((crop_die(image, tuple(float(v) for v in box["box_xyxy"])), face))
    return by_face, used, skipped


def labelled_boxes(session: Session, table_id: str) -> list[dict[str, Any]]:
    """The detector's labelled boxes of the table's console decisions: per evidence frame (and the plain
    frame to cut them from), each box a die (with its face, added by the person or the reader's) or struck
    out as no die."""
    from api.read_records import FRAME_KEY

    rows = session.scalars(
        select(ConsoleDecision)
        .where(ConsoleDecision.table_id == table_id, ConsoleDecision.evidence_sha256.is_not(None))
        .order_by(ConsoleDecision.created_at)
    )

    def plain(read_id: str) -> str | None:
        read = session.get(Read, read_id)
        sha = read.result.get(FRAME_KEY) if read is not None and isinstance(read.result, dict) else None
        return sha if isinstance(sha, str) else None

    return [
        {
            "evidence_sha256": row.evidence_sha256,
            # the plain frame the boxes are to be cut from (None: the read kept only the annotated one)
            FRAME_KEY: plain(row.read_id),
            "boxes": [
                {"box_xyxy": b["box_xyxy"], "label": b["label"], "face": b.get("face"), "origin": b["origin"]}
                for b in row.boxes
                if not b.get("kept")
            ],
        }
        for row in rows
    ]


def learning_examples(
    session: Session, *, table_id: str, evidence_dir: Path, limit: int = LEARN_MAX_DICE
) -> tuple[list[Example], dict[str, Any]]:
    """A refit's labelled dice: the console's decisions by their boxes, then the other confirmed rolls,
    newest first, balanced over the faces; and the report of what was used and skipped."""
    per_face = max(1, limit // len(FACES))
    by_face, console_rolls, skipped = console_examples(
        session, table_id=table_id, evidence_dir=evidence_dir, limit=per_face
    )
    others = confirmed_examples(
        session,
        table_id=table_id,
        evidence_dir=evidence_dir,
        limit=limit,
        skip_roll_ids=frozenset(console_rolls),
    )
    for crop, face in others.examples:
        if len(by_face[face]) < per_face:
            by_face[face].append((crop, face))
    report = others.report()
    report["console_rolls"] = len(console_rolls)
    report["console_skipped"] = skipped[:100]
    return balanced(by_face, limit=limit), report


# --- the refit -------------------------------------------------------------------------------------------


def refit_path() -> RefitPath:
    """The torch fine-tune where torch and its entry point are importable (the `train` extra), else the
    numpy correction of the head."""
    try:
        ready = all(importlib.util.find_spec(m) is not None for m in ("torch", FINE_TUNE_MODULE))
    except (ImportError, ValueError):
        ready = False
    return "fine_tune" if ready else "head"


def max_dice(path: RefitPath) -> int:
    """The labelled dice a refit of this path uses at most (`LEARN_MAX_DICE`, `FINE_TUNE_MAX_DICE`)."""
    return FINE_TUNE_MAX_DICE if path == "fine_tune" else LEARN_MAX_DICE


def fine_tune_argv(*, work_dir: Path, table_id: str) -> list[str]:
    """The fine-tune's command: a process of its own, niced, reading the job's folder and writing its
    candidate and `result.json` there (the service guards and stores it, never the child)."""
    return [
        sys.executable,
        "-m",
        FINE_TUNE_MODULE,
        "--work",
        str(work_dir),
        "--table",
        table_id,
    ]


def run_niced(
    argv: Sequence[str], *, nice: int = FINE_TUNE_NICE, timeout_s: float = 3600.0
) -> subprocess.CompletedProcess[str]:
    """Run `argv` in a process of its own at `nice` (below the service's reads), its output captured."""
    return subprocess.run(
        list(argv),
        preexec_fn=lambda: os.nice(nice),
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def _learning_row(session: Session, table_id: str, *, lock: bool = False) -> TableLearning:
    row = session.get(TableLearning, table_id, with_for_update=lock)
    if row is None:
        row = TableLearning(table_id=table_id, learn_every_dice=LEARN_EVERY_DICE, dice_at_last_refit=0)
        session.add(row)
        session.flush()
    return row


def claim_refit(database: Database, table_id: str) -> int | None:
    """The confirmed dice count when a refit is due (and marks it started there), else None: fewer than
    `learn_every_dice` since the last, or a job of the table's is live."""
    with database.session() as session:
        if session.get(GameTable, table_id, with_for_update=True) is None:
            return None
        row = _learning_row(session, table_id, lock=True)
        count = confirmed_dice(session, table_id)
        if count - row.dice_at_last_refit < row.learn_every_dice:
            return None
        live = session.scalars(
            select(EnrollmentJob.id).where(
                EnrollmentJob.table_id == table_id, EnrollmentJob.state.in_(ACTIVE_STATES)
            )
        ).first()
        if live is not None:
            return None
        row.dice_at_last_refit = count
        row.updated_at = datetime.now(UTC)
        return count


def after_confirmation(
    *,
    database: Database,
    calibration_dir: Path,
    evidence_dir: Path,
    table_id: str,
    face_model: Callable[[], OnnxModel],
    webhook_urls: list[str],
) -> threading.Thread | None:
    """Called after a roll is confirmed: start the table's refit in a thread when one is due."""
    count = claim_refit(database, table_id)
    if count is None:
        return None
    thread = threading.Thread(
        target=refit,
        kwargs={
            "database": database,
            "calibration_dir": calibration_dir,
            "evidence_dir": evidence_dir,
            "table_id": table_id,
            "face_model": face_model,
            "webhook_urls": webhook_urls,
            "confirmed": count,
        },
        name=f"learn-{table_id}",
        daemon=True,
    )
    thread.start()
    return thread


def refit(
    *,
    database: Database,
    calibration_dir: Path,
    evidence_dir: Path,
    table_id: str,
    face_model: Callable[[], OnnxModel],
    webhook_urls: list[str],
    confirmed: int,
) -> str | None:
    """One refit: gather the labelled dice, fit, guard, store (keeping the refit it replaces). Answers the
    job's id (None when another job of the table was live); every failure is the job's error."""
    from vision.pips.enrolled import enrollment_path

    path = refit_path()
    with database.read_session() as session:
        examples, report = learning_examples(
            session, table_id=table_id, evidence_dir=evidence_dir, limit=max_dice(path)
        )
    report = {**report, "confirmed_dice": confirmed, "path": path}
    try:
        job = create_job(
            database,
            table_id=table_id,
            source=LEARN_SOURCE,
            examples=examples,
            report=report,
            actor=LEARN_ACTOR,
        )
    except JobConflictError:
        return None
    learn_no_die(database, calibration_dir=calibration_dir, evidence_dir=evidence_dir, table_id=table_id)
    try:
        check_enough(examples)
        model = face_model()
    except Exception as exc:  # too few dice, no model: the job says why and nothing changes
        _fail(database, job.id, _why(exc))
        return job.id
    current = enrollment_path(calibration_dir, table_id)
    staged = current.with_name(f".{current.name}.before-{job.id}")
    if current.is_file():
        shutil.copy2(current, staged)
    try:
        if report["path"] == "fine_tune":
            _fine_tune(
                database=database,
                job_id=job.id,
                table_id=table_id,
                model=model,
                examples=examples,
                calibration_dir=calibration_dir,
                webhook_urls=webhook_urls,
            )
        else:
            run_job(
                database=database,
                job_id=job.id,
                table_id=table_id,
                model=model,
                examples=examples,
                calibration_dir=calibration_dir,
                actor=LEARN_ACTOR,
                webhook_urls=webhook_urls,
            )
        with database.read_session() as session:
            row = session.get(EnrollmentJob, job.id)
            stored = row is not None and row.state == "done"
        if stored and staged.is_file():
            os.replace(staged, previous_path(calibration_dir, table_id))
        if stored:
            from api.learning_tune import remove_unnamed

            remove_unnamed(calibration_dir, table_id, [current, previous_path(calibration_dir, table_id)])
    finally:
        staged.unlink(missing_ok=True)
    return job.id


NO_DIE_DECISIONS = 500  # the newest console decisions a no-die filter learns from


def no_die_boxes(
    session: Session, *, table_id: str, evidence_dir: Path, limit: int = NO_DIE_DECISIONS
) -> tuple[Any, Any, Any, list[dict[str, Any]]]:
    """(features, struck-out flags, frame index of each box, what was skipped) of the boxes of the table's
    newest valid console decisions, each frame's boxes cut from its plain frame together: the reader's
    boxes the person kept as dice, and those struck out as no die (a die the person added is no box the
    detector made, and no kept die of an Extra Roll is counted)."""
    import numpy as np

    from vision.table.no_die import N_FEATURES, features

    rows = session.scalars(
        select(ConsoleDecision)
        .where(ConsoleDecision.table_id == table_id, ConsoleDecision.verdict == "valid")
        .order_by(ConsoleDecision.created_at.desc())
        .limit(limit)
    ).all()
    xs, struck, frame_of, skipped = [], [], [], []
    for n, row in enumerate(rows):
        boxes = [b for b in row.boxes if b.get("origin") == "reader" and not b.get("kept")]
        if not boxes:
            continue
        try:
            image = plain_frame(session, evidence_dir, session.get(Read, row.read_id))
        except EvidenceError as exc:
            skipped.append({"roll_id": row.dealer_roll_id, "reason": str(exc)})
            continue
        xyxy = [
            (float(x0), float(y0), float(x1), float(y1)) for x0, y0, x1, y1 in (b["box_xyxy"] for b in boxes)
        ]
        xs.append(features(image, xyxy))
        struck += [b.get("label") == "no_die" for b in boxes]
        frame_of += [n] * len(boxes)
    x = np.vstack(xs) if xs else np.zeros((0, N_FEATURES))
    return x, np.asarray(struck, np.bool_), np.asarray(frame_of, np.int64), skipped


def learn_no_die(
    database: Database, *, calibration_dir: Path, evidence_dir: Path, table_id: str
) -> dict[str, Any]:
    """Fit the table's no-die filter from its console decisions (vision/table/no_die.py) and store it when
    it proves itself on frames it did not learn from; audited as `learning.no_die` either way (what it
    learned from, the figures, stored or why not). Never raises: the face refit goes on whatever happens."""
    from vision.table.no_die import cross_validate, fit_no_die, save_no_die, too_few

    outcome: dict[str, Any] = {"stored": False}
    try:
        with database.read_session() as session:
            x, struck, frame_of, skipped = no_die_boxes(session, table_id=table_id, evidence_dir=evidence_dir)
        outcome.update(dice=int((~struck).sum()), struck=int(struck.sum()), frames_skipped=len(skipped))
        why = too_few(struck)
        if not why:
            validation = cross_validate(x, struck, frame_of, table_id=table_id)
            outcome["validation"] = validation.document()
            why = validation.refusal()
            if not why:
                fitted = fit_no_die(
                    x, struck, table_id=table_id, fitted_at=datetime.now(UTC).isoformat(timespec="seconds")
                )
                saved = save_no_die(replace(fitted, validation=validation.document()), calibration_dir)
                outcome.update(stored=True, sha256=saved.checksum)
        outcome["why_not"] = why or None
    except Exception as exc:  # a failure of the filter changes nothing and says why
        log.exception("no-die filter of table %s failed", table_id)
        outcome["why_not"] = f"{type(exc).__name__}: {exc}"
    try:
        audit.append_alone(
            database=database,
            actor=LEARN_ACTOR,
            action="learning.no_die",
            subject=f"table:{table_id}",
            payload=outcome,
        )
    except Exception:  # pragma: no cover - the audit's own failure is logged, the refit goes on
        log.exception("audit of table %s's no-die filter failed", table_id)
    return outcome


def _fine_tune(
    *,
    database: Database,
    job_id: str,
    table_id: str,
    model: OnnxModel,
    examples: Sequence[Example],
    calibration_dir: Path,
    webhook_urls: list[str],
) -> None:
    """The fine-tune path (`api.learning_tune`): its child through `fine_tune_argv` and `run_niced`, looked
    up here at call time (tests give a fake child); any failure is the job's error and changes nothing."""
    from api.learning_tune import fine_tune_job

    try:
        fine_tune_job(
            database=database,
            job_id=job_id,
            table_id=table_id,
            model=model,
            examples=examples,
            calibration_dir=calibration_dir,
            actor=LEARN_ACTOR,
            webhook_urls=webhook_urls,
            argv=fine_tune_argv,
            run=run_niced,
        )
    except Exception as exc:  # a crashed, stopped or silent child, a bad candidate: the job says why
        log.exception("fine-tune refit %s of table %s failed", job_id, table_id)
        _fail(database, job_id, _why(exc))


def _why(exc: Exception) -> str:
    return str(exc) if isinstance(exc, EnrollDataError) else f"{type(exc).__name__}: {exc}"


def _fail(database: Database, job_id: str, error: str) -> None:
    with database.session() as session:
        row = session.get(EnrollmentJob, job_id)
        if row is not None:
            now = datetime.now(UTC)
            row.state, row.error, row.finished_at, row.updated_at = "failed", error, now, now


# --- the table's state, its setting, and going back -------------------------------------------------------


def previous_path(calibration_dir: Path, table_id: str) -> Path:
    """Where the refit that the current one replaced is kept."""
    from vision.pips.enrolled import enrollment_path

    current = enrollment_path(calibration_dir, table_id)
    return current.with_name(current.name.replace(".enrollment.json", ".enrollment.previous.json"))


@dataclass(frozen=True)
class LearningState:
    """What the table has learned, in figures and in the console's one line."""

    table_id: str
    learn_every_dice: int
    confirmed_dice: int
    next_refit_in_dice: int
    learned_from_dice: int | None  # None: the shipped model
    learned_on: str | None
    held_out_accuracy: float | None
    shipped_accuracy: float | None
    has_previous: bool
    last_refit: dict[str, Any] | None  # the newest learning job: state, error, when
    path: RefitPath
    line: str
    # The table's no-die filter (vision/table/no_die.py): boxes struck out and dice it learned from, its
    # cross-validated figures; None: it has none.
    no_die: dict[str, Any] | None = None


def learning_state(database: Database, *, calibration_dir: Path, table_id: str) -> LearningState:
    """The table's learning state (LearningError: no such table; EnrollmentError: a damaged file)."""
    from vision.pips.enrolled import load_enrollment

    with database.read_session() as session:
        if session.get(GameTable, table_id) is None:
            raise LearningError(f"no table {table_id!r}")
        row = session.get(TableLearning, table_id)
        every = row.learn_every_dice if row is not None else LEARN_EVERY_DICE
        last_at = row.dice_at_last_refit if row is not None else 0
        count = confirmed_dice(session, table_id)
        job = session.scalars(
            select(EnrollmentJob)
            .where(EnrollmentJob.table_id == table_id, EnrollmentJob.source == LEARN_SOURCE)
            .order_by(EnrollmentJob.created_at.desc())
        ).first()
        last = None if job is None else {
            "job_id": job.id, "state": job.state, "error": job.error,
            "finished_at": None if job.finished_at is None else job.finished_at.isoformat(),
        }  # fmt: skip
    enrollment = load_enrollment(calibration_dir, table_id)
    validation = enrollment.validation if enrollment is not None else None
    dice = sum(enrollment.examples.values()) if enrollment is not None else None
    on = (enrollment.fitted_at or "")[:10] if enrollment is not None else None
    held = float(validation["enrolled_accuracy"]) if validation else None
    shipped = float(validation["shipped_accuracy"]) if validation else None
    next_in = max(0, every - (count - last_at))
    if enrollment is None:
        line = f"reads with the shipped model; {count:,} confirmed dice, next refit after {next_in:,} more"
    else:
        reads = f", reads {round(100 * held)} % of its held-out dice" if held is not None else ""
        line = f"learned from {dice:,} dice on {on or 'an unknown day'}{reads}"
    no_die = _no_die_state(calibration_dir, table_id)
    if no_die is not None:
        line += f"; sets aside boxes like the {no_die['struck']:,} its people struck out"
    if last is not None and last["state"] == "failed":
        line += f"; the last refit changed nothing: {last['error']}"
    elif last is not None and last["state"] in ACTIVE_STATES:
        line += "; refitting now"
    return LearningState(
        table_id=table_id,
        learn_every_dice=every,
        confirmed_dice=count,
        next_refit_in_dice=next_in,
        learned_from_dice=dice,
        learned_on=on,
        held_out_accuracy=held,
        shipped_accuracy=shipped,
        has_previous=previous_path(calibration_dir, table_id).is_file(),
        last_refit=last,
        path=refit_path(),
        line=line,
        no_die=no_die,
    )


def _no_die_state(calibration_dir: Path, table_id: str) -> dict[str, Any] | None:
    """The table's no-die filter in figures (None: it has none, or its file cannot be used)."""
    from vision.table.no_die import NoDieError, load_no_die

    try:
        fitted = load_no_die(calibration_dir, table_id)
    except NoDieError:
        return None
    if fitted is None:
        return None
    return {
        "struck": fitted.examples.get("no_die", 0),
        "dice": fitted.examples.get("die", 0),
        "fitted_at": fitted.fitted_at,
        "validation": fitted.validation,
        "sha256": fitted.checksum,
    }


def set_learn_every(database: Database, *, table_id: str, every_dice: int, actor: str) -> None:
    """Set how many confirmed dice between refits (audited); LearningError for no table or a bad value."""
    if not MIN_EVERY_DICE <= every_dice <= MAX_EVERY_DICE:
        raise LearningError(
            f"learn_every_dice must be {MIN_EVERY_DICE} .. {MAX_EVERY_DICE}, got {every_dice}"
        )
    with database.session() as session:
        if session.get(GameTable, table_id) is None:
            raise LearningError(f"no table {table_id!r}")
        row = _learning_row(session, table_id, lock=True)
        before = row.learn_every_dice
        row.learn_every_dice = every_dice
        row.updated_at = datetime.now(UTC)
        audit.append(
            session,
            actor=actor,
            action="learning.settings",
            subject=f"table:{table_id}",
            payload={"learn_every_dice": every_dice, "was": before},
        )


def rollback(
    database: Database,
    *,
    calibration_dir: Path,
    table_id: str,
    to: RollbackTo,
    actor: str,
    webhook_urls: list[str],
) -> dict[str, Any]:
    """Go back to the shipped model (the current refit is kept as the previous; the table's no-die filter is
    removed) or to the previous refit (the two swap; the filter stays); audited as `enrollment.rolled_back`.
    LearningError when there is nothing to go back to."""
    from api.enrollment import enrollment_summary
    from vision.pips.enrolled import enrollment_path, load_enrollment

    current, previous = enrollment_path(calibration_dir, table_id), previous_path(calibration_dir, table_id)
    with database.session() as session:
        if session.get(GameTable, table_id) is None:
            raise LearningError(f"no table {table_id!r}")
        no_die_removed = False
        if to == "shipped":
            from vision.table.no_die import delete_no_die, no_die_path

            if not current.is_file() and not no_die_path(calibration_dir, table_id).is_file():
                raise LearningError(f"table {table_id!r} reads with the shipped model already")
            if current.is_file():
                os.replace(current, previous)
            no_die_removed = delete_no_die(calibration_dir, table_id)  # the shipped reader has none
        else:
            if not previous.is_file():
                raise LearningError(f"table {table_id!r} has no previous refit to go back to")
            swap = current.with_name(f".{current.name}.swap")
            if current.is_file():
                os.replace(current, swap)
            os.replace(previous, current)
            if swap.is_file():
                os.replace(swap, previous)
        now = load_enrollment(calibration_dir, table_id)
        summary = enrollment_summary(now) if now is not None else {"table_id": table_id, "sha256": None}
        record_change(
            session,
            action="rolled_back",
            summary=summary,
            actor=actor,
            webhook_urls=webhook_urls,
            extra={"to": to, "no_die_removed": no_die_removed},
        )
    return summary
