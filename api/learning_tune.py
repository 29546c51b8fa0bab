"""The table's refit by fine-tune (issue 56, item 3; `api.learning.refit` takes this path where torch and
`models.table_finetune` are importable): the job folder, the niced child, its result, the guard, the store.

- **The job folder** (`write_job`, a temporary folder): the labelled dice as the reader cuts them
  (`crops.npz`: crops, faces, and `held_out`, one stratified fold of `FOLDS` chosen here by
  `vision.pips.enroll.fold_of`, so the dice the candidate is judged on are the service's choice), and
  `job.json`: the shipped face model's file and SHA-256, the reader's bar and temperature, the budget.
- **The child** (`api.learning.fine_tune_argv`, run by `api.learning.run_niced` in the refit's thread,
  never in a request): `models/table_finetune.py` writes `candidate.onnx` and `result.json` there. A child
  that exits with an error, runs past `FINE_TUNE_TIMEOUT_S` or writes no readable result fails the job,
  saying why, and nothing changes.
- **The guard** (`check_result`): the result must name the shipped model's SHA-256 and the candidate's own,
  the candidate must load in onnxruntime with the shipped model's outputs, and on the held-out dice it must
  pass the head refit's own rule (`vision.pips.enroll.Validation.helps`: more read right, no more sure and
  wrong than the shipped model). Otherwise the job fails with both figures.
- **The store** (`store`): the candidate beside the table's calibration, named by its SHA-256
  (`<table>.finetune-<sha>.onnx`), and the table's enrollment record naming it (`vision.pips.enrolled`,
  version 2), so the reads, the rollback (the replaced record is kept as the previous by the caller), the
  table's state and line treat it as the head's correction. Model files no record names any more are
  removed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from api.db.models import EnrollmentJob
from api.db.session import Database
from api.enrollment import _set, enrollment_summary, now_utc, record_change
from api.enrollment_sources import Example
from vision.onnx_session import OnnxModel
from vision.pips.enroll import FOLDS, EnrollDataError, Validation, fold_of
from vision.pips.enrolled import Enrollment, save_enrollment

# The child's limit (its budget is 150 s of training; a stuck child is killed): under the enrollment jobs'
# STALE_AFTER (10 min), after which a job whose row has not moved no longer blocks another for the table.
FINE_TUNE_TIMEOUT_S = 480.0
FINE_TUNE_SECONDS = 150.0
FINE_TUNE_STEPS = 600
# The colour changes milder than training's (no hue turned, no inversion) and no label smoothing: the
# fine-tune learns one table's look and should grow sure of it (the learn-bench's second run,
# docs/status.md; the first ran training's own, 300 steps or 90 s).
FINE_TUNE_STRONG_COLOUR = False
FINE_TUNE_LABEL_SMOOTHING = 0.0
FINE_TUNE_THREADS = 2
HELD_OUT_FOLD = 0
TUNED_GLOB = "{table}.finetune-*.onnx"

Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def write_job(work: Path, *, model: OnnxModel, examples: Sequence[Example], min_confidence: float) -> None:
    """The job folder the child reads (see the module docstring)."""
    from vision.pips.crops import CROP_PX

    crops = np.stack([np.asarray(c, np.uint8) for c, _ in examples])
    if crops.shape[1:] != (CROP_PX, CROP_PX, 3):
        raise EnrollDataError(f"labelled crops of shape {crops.shape[1:]}, the face model reads {CROP_PX} px")
    faces = np.array([f for _, f in examples], np.int64)
    held = fold_of(faces.tolist(), FOLDS) == HELD_OUT_FOLD
    np.savez(work / "crops.npz", crops=crops, faces=faces, held_out=held)
    job = {
        "base_model": str(model.path),
        "base_sha256": model.spec.sha256,
        "min_confidence": min_confidence,
        "temperature": model.spec.temperature or 1.0,
        "seed": 0,
        "max_seconds": FINE_TUNE_SECONDS,
        "max_steps": FINE_TUNE_STEPS,
        "threads": FINE_TUNE_THREADS,
        "strong_colour": FINE_TUNE_STRONG_COLOUR,
        "label_smoothing": FINE_TUNE_LABEL_SMOOTHING,
    }
    (work / "job.json").write_text(json.dumps(job, indent=1) + "\n", encoding="utf-8")


def run_child(argv: Sequence[str], *, run: Runner, work: Path) -> dict[str, Any]:
    """Run the child; its `result.json`, or EnrollDataError saying why there is none."""
    try:
        done = run(argv, timeout_s=FINE_TUNE_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        raise EnrollDataError(f"the fine-tune ran past {exc.timeout:g} s and was stopped") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-1:] or ["no output"]
        raise EnrollDataError(f"the fine-tune's process failed (exit {done.returncode}): {tail[0][:300]}")
    try:
        result = json.loads((work / "result.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise EnrollDataError(f"the fine-tune wrote no readable result.json ({exc})") from exc
    if not isinstance(result, dict):
        raise EnrollDataError("the fine-tune's result.json is not an object")
    return result


def check_result(
    result: dict[str, Any],
    *,
    work: Path,
    model: OnnxModel,
    examples: Sequence[Example],
    min_confidence: float,
) -> tuple[Path, Validation]:
    """The candidate's file and its held-out figures as the head's `Validation` (EnrollDataError where the
    result or the candidate is not the job's); the caller applies `Validation.helps`."""
    from vision.onnx_session import DEFAULT_PROVIDERS, onnxruntime_session, sha256_of
    from vision.pips.crops import crops_to_tensor

    try:
        held = result["held_out"]
        candidate = work / Path(str(result["candidate"])).name
        validation = Validation(
            folds=FOLDS,
            dice=int(held["dice"]),
            shipped_right=int(held["shipped_right"]),
            enrolled_right=int(held["tuned_right"]),
            shipped_sure_wrong=int(held["shipped_sure_wrong"]),
            enrolled_sure_wrong=int(held["tuned_sure_wrong"]),
            min_confidence=min_confidence,
        )
        named_base, named_sha = str(result["base_sha256"]), str(result["candidate_sha256"])
    except (KeyError, TypeError, ValueError) as exc:
        raise EnrollDataError(f"the fine-tune's result.json lacks its figures ({exc!r})") from exc
    expected = int((fold_of([f for _, f in examples], FOLDS) == HELD_OUT_FOLD).sum())
    if validation.dice != expected:
        raise EnrollDataError(f"the fine-tune held out {validation.dice} dice, the job {expected}")
    if named_base != model.spec.sha256:
        raise EnrollDataError(
            f"the fine-tune started from face model {named_base[:12]}..., not the shipped one"
        )
    if not candidate.is_file() or sha256_of(candidate) != named_sha:
        raise EnrollDataError(
            f"the fine-tune's candidate {candidate.name} is missing or not the one it names"
        )
    sample = crops_to_tensor([np.asarray(c, np.uint8) for c, _ in examples[:2]])
    try:
        session = onnxruntime_session(candidate, 1, DEFAULT_PROVIDERS)
        outputs = session.run(None, {str(session.get_inputs()[0].name): sample})
    except Exception as exc:  # onnxruntime raises its own untyped errors for a bad graph
        raise EnrollDataError(f"the fine-tune's candidate does not load: {exc}") from exc
    shipped = model.run(sample)
    shapes = [np.asarray(o).shape for o in outputs]
    if shapes != [o.shape for o in shipped]:
        raise EnrollDataError(
            f"the fine-tune's candidate has outputs {shapes}, the shipped model {[o.shape for o in shipped]}"
        )
    return candidate, validation


def refusal(validation: Validation) -> str:
    """Why a fine-tune that did not prove itself was not stored, with both figures."""
    v = validation
    return (
        f"the fine-tune does not prove itself, so it was not stored: on {v.dice} held-out confirmed dice it "
        f"did not train on, the shipped model read {v.shipped_right} right ({v.shipped_sure_wrong} sure and "
        f"wrong), the fine-tune {v.enrolled_right} ({v.enrolled_sure_wrong}); it must read more right and be "
        "sure and wrong on no more"
    )


def store(
    *,
    candidate: Path,
    calibration_dir: Path,
    table_id: str,
    model: OnnxModel,
    examples: Sequence[Example],
    validation: Validation,
) -> Enrollment:
    """The candidate beside the table's calibration and the record naming it (the table reads with it)."""
    from vision.onnx_session import sha256_of

    sha = sha256_of(candidate)
    name = TUNED_GLOB.format(table=table_id).replace("*", sha[:16])
    target = calibration_dir / name
    calibration_dir.mkdir(parents=True, exist_ok=True)
    if not target.is_file() or sha256_of(target) != sha:
        staged = calibration_dir / f".{name}.part"
        shutil.copyfile(candidate, staged)
        staged.replace(target)
    document = {
        **validation.document(),
        "kind": "fine_tune",
        "held_out": f"fold {HELD_OUT_FOLD + 1} of {FOLDS}",
    }
    enrollment = Enrollment(
        table_id=table_id,
        model_sha256=model.spec.sha256,
        d_weight=np.zeros((6, 0), np.float32),
        d_bias=np.zeros(6, np.float32),
        examples={str(f): sum(1 for _, g in examples if g == f) for f in range(1, 7)},
        fitted_at=datetime.now(UTC).isoformat(timespec="seconds"),
        validation=document,
        model_file=name,
        model_file_sha256=sha,
    )
    return save_enrollment(enrollment, calibration_dir)


def remove_unnamed(calibration_dir: Path, table_id: str, records: Sequence[Path]) -> None:
    """Remove the table's fine-tuned model files that none of `records` (current, previous) names."""
    named: set[str] = set()
    for record in records:
        if not record.is_file():
            continue
        try:
            named.add(str(json.loads(record.read_text(encoding="utf-8"))["body"].get("model_file")))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return  # a record not read: keep every file rather than remove one it may name
    for path in calibration_dir.glob(TUNED_GLOB.format(table=table_id)):
        if path.name not in named:
            path.unlink(missing_ok=True)


def fine_tune_job(
    *,
    database: Database,
    job_id: str,
    table_id: str,
    model: OnnxModel,
    examples: Sequence[Example],
    calibration_dir: Path,
    actor: str,
    webhook_urls: list[str],
    argv: Callable[..., list[str]],
    run: Runner,
) -> None:
    """One fine-tune refit as an enrollment job: running, then done (stored, recorded) or failed (why)."""
    from vision.judge.validity import ValidityConfig

    bar = ValidityConfig().min_confidence
    _set(database, job_id, state="running")
    with tempfile.TemporaryDirectory(prefix=f"throwbox-finetune-{table_id}-") as tmp:
        work = Path(tmp)
        write_job(work, model=model, examples=examples, min_confidence=bar)
        result = run_child(argv(work_dir=work, table_id=table_id), run=run, work=work)
        candidate, validation = check_result(
            result, work=work, model=model, examples=examples, min_confidence=bar
        )
        figures = {"validation": {**validation.document(), "kind": "fine_tune"}, "fine_tune": _brief(result)}
        if not validation.helps:
            with database.session() as session:
                row = session.get(EnrollmentJob, job_id)
                if row is not None:
                    row.state, row.error, row.finished_at = "failed", refusal(validation), now_utc()
                    row.updated_at = row.finished_at
                    row.examples = {**row.examples, **figures}
            return
        saved = store(
            candidate=candidate,
            calibration_dir=calibration_dir,
            table_id=table_id,
            model=model,
            examples=examples,
            validation=validation,
        )
    with database.session() as session:
        row = session.get(EnrollmentJob, job_id)
        if row is None:  # pragma: no cover - a job row is never deleted
            return
        row.state, row.progress, row.finished_at = "done", 1.0, now_utc()
        row.updated_at = row.finished_at
        row.result_sha256 = saved.checksum
        row.examples = {**row.examples, **figures}
        record_change(
            session,
            action="fitted",
            summary=enrollment_summary(saved),
            actor=actor,
            webhook_urls=webhook_urls,
            extra={"job_id": job_id, "face_model": model.spec.tag, "kind": "fine_tune", "forced": False},
        )


def _brief(result: dict[str, Any]) -> dict[str, Any]:
    """What the job row keeps of the child's result."""
    keys = ("candidate_sha256", "trained_on_dice", "steps", "seconds", "seed", "loss_last_50")
    return {k: result.get(k) for k in keys}
