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
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from calibration.store import check_table_id
from calibration.table import canonical_json
from vision.onnx_session import ModelSpec, OnnxModel

ENROLLMENT_FORMAT = "throwbox.face-enrollment"
ENROLLMENT_VERSION = 1


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
        return body

    def tag(self, model_tag: str) -> str:
        return f"{model_tag}+enroll:{self.table_id}:{self.checksum[:8]}"


def enrollment_path(data_dir: Path, table_id: str) -> Path:
    return data_dir / f"{check_table_id(table_id)}.enrollment.json"


def save_enrollment(enrollment: Enrollment, data_dir: Path) -> Enrollment:
    """Write atomically; the enrollment with its checksum."""
    body = enrollment.body()
    checksum = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    doc: dict[str, Any] = {
        "format": ENROLLMENT_FORMAT,
        "version": ENROLLMENT_VERSION,
        "checksum": f"sha256:{checksum}",
        "body": body,
    }
    path = enrollment_path(data_dir, enrollment.table_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, 0o644)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, sort_keys=True, allow_nan=False)
            fh.write("\n")
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
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
    if doc.get("version") != ENROLLMENT_VERSION:
        raise EnrollmentError(
            f"{path}: version {doc.get('version')!r}, this throwbox reads {ENROLLMENT_VERSION}"
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
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise EnrollmentError(f"{path}: malformed body ({exc!r})") from exc
    if d_weight.ndim != 2 or d_weight.shape[0] != 6 or d_bias.shape != (6,):
        raise EnrollmentError(f"{path}: correction shapes {d_weight.shape} and {d_bias.shape}")
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


class EnrolledModel:
    """A face model read through a table's enrollment: `run` as `OnnxModel.run`, its first output the
    corrected probabilities. Its `spec` is the shipped model's; `tag` names the enrollment."""

    def __init__(self, base: OnnxModel, enrollment: Enrollment) -> None:
        if enrollment.model_sha256 != base.spec.sha256:
            raise EnrollmentError(
                f"table {enrollment.table_id!r} was enrolled on face model "
                f"{enrollment.model_sha256[:12]}..., the reader runs {base.spec.sha256[:12]}...: "
                "enroll the table again"
            )
        self.base = base
        self.enrollment = enrollment
        self.spec: ModelSpec = base.spec
        self.tag = enrollment.tag(base.spec.tag)

    @property
    def run_ms(self) -> float:
        return self.base.run_ms

    @property
    def runs(self) -> int:
        return self.base.runs

    def run(self, batch: NDArray[np.float32]) -> list[NDArray[np.float32]]:
        outputs = self.base.run(batch)
        if len(outputs) < 2:
            raise EnrollmentError(
                f"face model {self.spec.tag} has no embedding output: it cannot be enrolled"
            )
        probs, embedding = outputs[0], outputs[1]
        e = self.enrollment
        return [corrected(probs, embedding, e.d_weight, e.d_bias), embedding, *outputs[2:]]
