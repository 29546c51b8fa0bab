"""A table's fine-tuned face model as its enrollment record (vision/pips/enrolled.py, version 2): stored and
loaded with the file's SHA-256, read through by `EnrolledModel` (its outputs, its tag), refused when the file
changed or the record is not one."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.vision.enroll_data import fake_face_model
from vision.onnx_session import MODELS_DIR, load_manifest, load_model, sha256_of
from vision.pips.enrolled import (
    FINE_TUNE_VERSION,
    EnrolledModel,
    Enrollment,
    EnrollmentError,
    enrollment_path,
    load_enrollment,
    save_enrollment,
)


def tuned_record(folder: Path, *, base_sha256: str) -> Enrollment:
    """A record naming a copy of the shipped 18c file as the table's fine-tuned model."""
    spec = load_manifest()["pips"]
    shutil.copyfile(MODELS_DIR / spec.file, folder / "T.finetune-x.onnx")
    return Enrollment(
        table_id="T",
        model_sha256=base_sha256,
        d_weight=np.zeros((6, 0), np.float32),
        d_bias=np.zeros(6, np.float32),
        examples={"1": 3},
        model_file="T.finetune-x.onnx",
        model_file_sha256=sha256_of(folder / "T.finetune-x.onnx"),
    )


def test_a_fine_tuned_record_reads_with_its_own_model_and_names_it(tmp_path: Path) -> None:
    base = fake_face_model(tmp_path / "fake")
    saved = save_enrollment(tuned_record(tmp_path, base_sha256=base.spec.sha256), tmp_path)
    assert json.loads(enrollment_path(tmp_path, "T").read_text())["version"] == FINE_TUNE_VERSION
    loaded = load_enrollment(tmp_path, "T")
    assert loaded is not None and loaded.kind == "fine_tune" and loaded.checksum == saved.checksum
    model = EnrolledModel(base, loaded)
    assert model.tag == f"fake_face+tune:T:{saved.checksum[:8]}"
    batch = np.random.default_rng(0).random((3, 3, 64, 64), dtype=np.float32)
    shipped = load_model("pips").run(batch)  # the file it names: the shipped 18c's copy
    out = model.run(batch)
    assert len(out) == 2 and np.allclose(out[0], shipped[0]) and out[1].shape == shipped[1].shape
    assert model.runs == 1 and base.runs == 0  # read by the table's model, not the base


def test_a_changed_model_file_or_a_record_without_one_is_refused(tmp_path: Path) -> None:
    base = fake_face_model(tmp_path / "fake")
    record = tuned_record(tmp_path, base_sha256=base.spec.sha256)
    (tmp_path / "T.finetune-x.onnx").write_bytes(b"changed")
    save_enrollment(record, tmp_path)
    loaded = load_enrollment(tmp_path, "T")
    assert loaded is not None
    with pytest.raises(EnrollmentError, match=r"fine-tuned model.*SHA-256"):
        EnrolledModel(base, loaded)
    # a version-2 record that names no model file (or version 1 naming one) is not read as either kind
    path = enrollment_path(tmp_path, "T")
    doc = json.loads(path.read_text())
    doc["version"] = 1
    path.write_text(json.dumps(doc))
    with pytest.raises(EnrollmentError, match="version 1 with a model file"):
        load_enrollment(tmp_path, "T")
