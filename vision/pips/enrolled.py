"""Table enrollment at read time: a shipped face model plus a table's own linear correction, numpy only.

A face model whose ONNX export has a second output, `embedding` (`models/nets_lite.py`), can be adapted to
one table's dice without torch: `vision.pips.enroll` fits a correction (dW, db) so that the table's
probabilities are softmax(log p_shipped + embedding @ dW.T + db). With no correction (dW = 0, db = 0) this
is the shipped model exactly, so the shipped head is kept and only nudged where the table's examples ask
for it.

The correction is stored per table beside its calibration (`<data dir>/<table>.enrollment.json`), in the
calibration store's file shape: a format tag, a version, and the SHA-256 of the canonical JSON of its body,
checked on load. It names the SHA-256 of the model it was fitted on and is refused on another. Every read
with it names it: the read's `models["pips"]` becomes `<model tag>+enroll:<table>:<first 8 of its SHA-256>`.

A table's fine-tuned face model (issue 56: `models/table_finetune.py`, where the `train` extra is installed)
is stored the same way, one record per table in the same file, so rollback, deletion and the table's state
treat both kinds alike: the record (version 2, so an older throwbox refuses it rather than read the shipped
model under its name) names the fine-tuned ONNX file beside it (`model_file`) and that file's SHA-256
(`model_file_sha256`), checked when the file is loaded; its correction is empty (6, 0). Its reads name it
`<model tag>+tune:<table>:<first 8 of the record's SHA-256>`. Loaded models are kept by path and SHA-256
(`tuned_model`), so a read does not load the file again.
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.store import check_table_id, write_whole
from calibration.table import canonical_json
from vision.onnx_session import DEFAULT_PROVIDERS, ModelError, ModelSpec, OnnxModel

ENROLLMENT_FORMAT = "throwbox.face-enrollment"
ENROLLMENT_VERSION = 1
FINE_TUNE_VERSION = 2  # a record naming a fine-tuned model file (`Enrollment.model_file`)
TUNED_KEPT = 8  # fine-tuned models kept loaded (`tuned_model`), the oldest dropped first


class EnrollmentError(Exception):
    """A table's enrollment file is unreadable, damaged, or was fitted on another face model."""


@dataclass(frozen=True)
class Enrollment:
    """A table's correction of the face model: dW (6, embed), db (6,), fitted on `model_sha256`."""

    table_id: str
    model_sha256: str
    d_weight: NDArray[np.float32]
    d_bias: NDArray[np.float32]
    examples: dict[str, int]  # face -> labelled dice it was fitted on
    checksum: str = ""  # SHA-256 of the stored body (set when saved or loaded)
    fitted_at: str | None = None  # ISO 8601 UTC; None in a file written before it was kept
    # Cross-validated figures (`vision.pips.enroll.Validation.document`, `forced` when stored though it did
    # not prove itself); None in a file written before they were kept.
    validation: dict[str, Any] | None = None
    # A fine-tuned face model (file name beside the record, its SHA-256); None: a correction of the head.
    model_file: str | None = None
    model_file_sha256: str | None = None
    model_dir: Path | None = None  # the folder it was loaded from (set by load_enrollment), not stored

    @property
    def kind(self) -> str:
        """ "fine_tune" for a record naming a fine-tuned model, else "head"."""
        return "head" if self.model_file is None else "fine_tune"

    def body(self) -> dict[str, Any]:
        body: dict[str, Any] = {
            "table_id": self.table_id,
            "model_sha256": self.model_sha256,
            "d_weight": np.round(self.d_weight.astype(np.float64), 7).tolist(),
            "d_bias": np.round(self.d_bias.astype(np.float64), 7).tolist(),
            "examples": dict(self.examples),
        }
        if self.fitted_at is not None:
            body["fitted_at"] = self.fitted_at
        if self.validation is not None:
            body["validation"] = dict(self.validation)
        if self.model_file is not None:
            body["model_file"] = self.model_file
            body["model_file_sha256"] = self.model_file_sha256
        return body

    def tag(self, model_tag: str) -> str:
        how = "enroll" if self.model_file is None else "tune"
        return f"{model_tag}+{how}:{self.table_id}:{self.checksum[:8]}"


def enrollment_path(data_dir: Path, table_id: str) -> Path:
    return data_dir / f"{check_table_id(table_id)}.enrollment.json"


def save_enrollment(enrollment: Enrollment, data_dir: Path) -> Enrollment:
    """Write atomically; the enrollment with its checksum."""
    body = enrollment.body()
    checksum = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    doc: dict[str, Any] = {
        "format": ENROLLMENT_FORMAT,
        "version": ENROLLMENT_VERSION if enrollment.model_file is None else FINE_TUNE_VERSION,
        "checksum": f"sha256:{checksum}",
        "body": body,
    }
    path = enrollment_path(data_dir, enrollment.table_id)
    write_whole(path, (json.dumps(doc, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
    saved = load_enrollment(data_dir, enrollment.table_id)
    if saved is None:  # pragma: no cover - written just above
        raise EnrollmentError(f"{path}: not found after writing it")
    return saved


def delete_enrollment(data_dir: Path, table_id: str) -> bool:
    """Remove the table's enrollment file; False when it had none. Its reads go back to the shipped model."""
    path = enrollment_path(data_dir, table_id)
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def load_enrollment(data_dir: Path, table_id: str) -> Enrollment | None:
    """The table's enrollment, or None when it has none; `EnrollmentError` for a damaged file."""
    path = enrollment_path(data_dir, table_id)
    if not path.is_file():
        return None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EnrollmentError(f"{path}: not readable JSON ({exc})") from exc
    if not isinstance(doc, dict) or doc.get("format") != ENROLLMENT_FORMAT:
        raise EnrollmentError(f"{path}: not a {ENROLLMENT_FORMAT} file")
    if doc.get("version") not in (ENROLLMENT_VERSION, FINE_TUNE_VERSION):
        raise EnrollmentError(
            f"{path}: version {doc.get('version')!r}, this throwbox reads "
            f"{ENROLLMENT_VERSION} and {FINE_TUNE_VERSION}"
        )
    body = doc.get("body")
    if not isinstance(body, dict):
        raise EnrollmentError(f"{path}: no body")
    actual = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    if doc.get("checksum") != f"sha256:{actual}":
        raise EnrollmentError(f"{path}: checksum mismatch: the file was edited or damaged")
    try:
        d_weight = np.asarray(body["d_weight"], np.float32)
        d_bias = np.asarray(body["d_bias"], np.float32)
        enrollment = Enrollment(
            table_id=str(body["table_id"]),
            model_sha256=str(body["model_sha256"]),
            d_weight=d_weight,
            d_bias=d_bias,
            examples={str(k): int(v) for k, v in body["examples"].items()},
            checksum=actual,
            fitted_at=None if body.get("fitted_at") is None else str(body["fitted_at"]),
            validation=None if body.get("validation") is None else dict(body["validation"]),
            model_file=None if body.get("model_file") is None else str(body["model_file"]),
            model_file_sha256=None
            if body.get("model_file_sha256") is None
            else str(body["model_file_sha256"]),
            model_dir=path.parent,
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EnrollmentError(f"{path}: malformed body ({exc!r})") from exc
    if d_weight.ndim != 2 or d_weight.shape[0] != 6 or d_bias.shape != (6,):
        raise EnrollmentError(f"{path}: correction shapes {d_weight.shape} and {d_bias.shape}")
    tuned = enrollment.model_file is not None
    if (doc["version"] == FINE_TUNE_VERSION) != tuned:
        raise EnrollmentError(f"{path}: version {doc['version']} with{'' if tuned else 'out'} a model file")
    if tuned and (
        Path(str(enrollment.model_file)).name != enrollment.model_file or not enrollment.model_file_sha256
    ):
        raise EnrollmentError(f"{path}: model_file must be a file name beside it, with its SHA-256")
    return enrollment


def corrected(
    probs: NDArray[np.float32],
    embedding: NDArray[np.float32],
    d_weight: NDArray[np.float32],
    d_bias: NDArray[np.float32],
) -> NDArray[np.float32]:
    """softmax(log probs + embedding @ d_weight.T + d_bias), row by row."""
    z = np.log(np.maximum(probs, 1e-7)) + embedding @ d_weight.T + d_bias
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return np.asarray(e / e.sum(axis=1, keepdims=True), np.float32)


_tuned: dict[tuple[str, str, int], OnnxModel] = {}
_tuned_lock = threading.Lock()


def tuned_model(enrollment: Enrollment, base: OnnxModel) -> OnnxModel:
    """The table's fine-tuned face model, loaded once (SHA-256 checked) with the base's threads and
    providers and the base's spec otherwise (its temperature, its bar); EnrollmentError when the file is
    missing, changed or not loadable."""
    if enrollment.model_file is None or enrollment.model_file_sha256 is None or enrollment.model_dir is None:
        raise EnrollmentError(f"table {enrollment.table_id!r}: its enrollment names no fine-tuned model")
    path = enrollment.model_dir / enrollment.model_file
    threads, providers = getattr(base, "threads", 1), getattr(base, "providers", DEFAULT_PROVIDERS)
    key = (str(path), enrollment.model_file_sha256, threads)
    with _tuned_lock:
        model = _tuned.get(key)
        if model is None:
            spec = replace(base.spec, file=enrollment.model_file, sha256=enrollment.model_file_sha256)
            try:
                model = OnnxModel(spec, models_dir=enrollment.model_dir, threads=threads, providers=providers)
            except ModelError as exc:
                raise EnrollmentError(f"table {enrollment.table_id!r}: its fine-tuned model: {exc}") from exc
            while len(_tuned) >= TUNED_KEPT:
                _tuned.pop(next(iter(_tuned)))
            _tuned[key] = model
    return model


class EnrolledModel:
    """A face model read through a table's enrollment: `run` as `OnnxModel.run`, its first output the
    corrected probabilities, or the table's fine-tuned model's outputs where the enrollment names one. Its
    `spec` is the shipped model's; `tag` names the enrollment."""

    def __init__(self, base: OnnxModel, enrollment: Enrollment) -> None:
        if enrollment.model_sha256 != base.spec.sha256:
            raise EnrollmentError(
                f"table {enrollment.table_id!r} was enrolled on face model "
                f"{enrollment.model_sha256[:12]}..., the reader runs {base.spec.sha256[:12]}...: "
                "enroll the table again"
            )
        self.base = base
        self.enrollment = enrollment
        self.tuned = None if enrollment.model_file is None else tuned_model(enrollment, base)
        self.spec: ModelSpec = base.spec
        self.tag = enrollment.tag(base.spec.tag)

    @property
    def run_ms(self) -> float:
        return (self.base if self.tuned is None else self.tuned).run_ms

    @property
    def runs(self) -> int:
        return (self.base if self.tuned is None else self.tuned).runs

    def run(self, batch: NDArray[np.float32]) -> list[NDArray[np.float32]]:
        if self.tuned is not None:
            return self.tuned.run(batch)
        outputs = self.base.run(batch)
        if len(outputs) < 2:
            raise EnrollmentError(
                f"face model {self.spec.tag} has no embedding output: it cannot be enrolled"
            )
        probs, embedding = outputs[0], outputs[1]
        e = self.enrollment
        return [corrected(probs, embedding, e.d_weight, e.d_bias), embedding, *outputs[2:]]
