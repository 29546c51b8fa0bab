"""Table enrollment on tiny data: a fake face model (probabilities that ignore the die, an embedding that
tells the faces apart) through the real onnxruntime wrapper's checks; no torch, no onnxruntime graph."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from api.enrollment_sources import dice_per_face, folder_files, photo_examples
from vision.onnx_session import OnnxModel, load_manifest, sha256_of
from vision.pips.classifier import FaceReader
from vision.pips.crops import crops_to_tensor
from vision.pips.enroll import EnrollDataError, enroll_table, fit_correction, fold_of, photo_crop
from vision.pips.enrolled import (
    EnrolledModel,
    EnrollmentError,
    enrollment_path,
    load_enrollment,
    save_enrollment,
)

EMBED = 8


class FakeFaceSession:
    """A face model that is sure every die shows a 1, and whose embedding is a one-hot of the crop's grey
    level in 8 bins (the drawn dice below are grey 30 * face + 20)."""

    def get_inputs(self) -> list[Any]:
        return [SimpleNamespace(name="crops")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        x = np.asarray(input_feed["crops"])
        level = x.mean(axis=(1, 2, 3)) * 255
        bins = np.clip(((level - 20) / 30).round().astype(int), 0, EMBED - 1)
        emb = np.eye(EMBED, dtype=np.float32)[bins]
        probs = np.tile(np.array([0.9, 0.02, 0.02, 0.02, 0.02, 0.02], np.float32), (len(x), 1))
        return [probs, emb]


def fake_manifest(tmp_path: Path) -> Path:
    weights = tmp_path / "models" / "fake_face.onnx"
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"not a graph: the session is faked")
    manifest = tmp_path / "models" / "manifest.json"
    entry = {
        "file": "fake_face.onnx",
        "sha256": sha256_of(weights),
        "version": "t",
        "input_size_hw": [64, 64],
    }
    manifest.write_text(json.dumps({"models": {"pips": {**entry, "labels": list("123456")}}}))
    return manifest


def fake_model(tmp_path: Path) -> OnnxModel:
    manifest = fake_manifest(tmp_path)
    spec = load_manifest(manifest)["pips"]
    return OnnxModel(spec, models_dir=manifest.parent, session_factory=lambda *a: FakeFaceSession())


def die(face: int) -> np.ndarray:
    return np.full((64, 64, 3), 30 * face + 20, np.uint8)


def photos(folder: Path, per_face: int) -> Path:
    for face in range(1, 7):
        (folder / str(face)).mkdir(parents=True, exist_ok=True)
        for k in range(per_face):
            cv2.imwrite(str(folder / str(face) / f"{k}.jpg"), np.full((80, 70, 3), 30 * face + 20, np.uint8))
    return folder


def test_fit_learns_what_the_shipped_head_misses() -> None:
    rng = np.random.default_rng(0)
    faces = rng.integers(1, 7, size=120)
    emb = np.eye(EMBED, dtype=np.float32)[faces] + rng.normal(0, 0.05, (120, EMBED)).astype(np.float32)
    probs = np.full((120, 6), 1 / 6, np.float32)
    w, b = fit_correction(probs, emb, faces)
    z = np.log(probs) + emb @ w.T + b
    assert (z.argmax(axis=1) + 1 == faces).mean() == 1.0
    # No examples' pull, no correction: a strong ridge keeps the shipped head.
    w0, _ = fit_correction(probs, emb, faces, ridge=1e6)
    assert np.abs(w0).max() < 1e-3


def test_enroll_then_read_through_the_table(tmp_path: Path) -> None:
    model = fake_model(tmp_path)
    examples = [(die(f), f) for f in range(1, 7) for _ in range(10)]  # 60 dice
    result = enroll_table(model, "t1", examples)
    assert result.dice == 60
    assert result.train_accuracy_before == pytest.approx(1 / 6)
    assert result.train_accuracy_after == 1.0
    saved = save_enrollment(result.enrollment, tmp_path / "cal")
    assert len(saved.checksum) == 64 and saved.examples == {str(f): 10 for f in range(1, 7)}

    loaded = load_enrollment(tmp_path / "cal", "t1")
    assert loaded is not None and loaded.checksum == saved.checksum
    enrolled = EnrolledModel(model, loaded)
    assert enrolled.tag == f"fake_face+enroll:t1:{saved.checksum[:8]}"
    reader = FaceReader(enrolled)
    probs = reader.probabilities([die(f) for f in (2, 5, 6, 3)])
    assert list(probs.argmax(axis=1) + 1) == [2, 5, 6, 3]
    # The shipped model alone reads them all as 1.
    plain = FaceReader(model).probabilities([die(f) for f in (2, 5, 6, 3)])
    assert list(plain.argmax(axis=1) + 1) == [1, 1, 1, 1]
    assert np.allclose(enrolled.run(crops_to_tensor([die(4)]))[0].sum(), 1.0)


def test_a_table_without_enrollment_reads_with_the_shipped_model(tmp_path: Path) -> None:
    assert load_enrollment(tmp_path, "t2") is None


def test_damaged_or_foreign_enrollment_refused(tmp_path: Path) -> None:
    model = fake_model(tmp_path)
    result = enroll_table(model, "t1", [(die(f), f) for f in range(1, 7)])
    saved = save_enrollment(result.enrollment, tmp_path / "cal")
    path = enrollment_path(tmp_path / "cal", "t1")
    doc = json.loads(path.read_text())
    doc["body"]["d_bias"][0] += 1.0
    path.write_text(json.dumps(doc))
    with pytest.raises(EnrollmentError, match="checksum"):
        load_enrollment(tmp_path / "cal", "t1")
    foreign = type(saved)(
        table_id="t1", model_sha256="0" * 64, d_weight=saved.d_weight, d_bias=saved.d_bias, examples={}
    )
    with pytest.raises(EnrollmentError, match="enroll the table again"):
        EnrolledModel(model, foreign)


def test_die_photos_balanced_and_cropped(tmp_path: Path) -> None:
    folder = photos(tmp_path / "dice", per_face=15)
    picked = photo_examples(folder_files(folder), limit=60)
    assert len(picked) == 60
    assert dice_per_face(picked) == {str(face): 10 for face in range(1, 7)}
    crop = photo_crop(np.zeros((80, 70, 3), np.uint8))
    assert crop.shape == (64, 64, 3)
    with pytest.raises(EnrollDataError):
        folder_files(tmp_path / "empty-missing")


def test_enroll_command_stores_and_read_names_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import vision.onnx_session as onnx_session
    from api.cli import app

    manifest = fake_manifest(tmp_path)
    monkeypatch.setattr(onnx_session, "onnxruntime_session", lambda *a: FakeFaceSession())
    folder = photos(tmp_path / "dice", per_face=12)
    cal = tmp_path / "cal"
    args = ["enroll", "--table", "t9", "--from", str(folder), "--calibration-dir", str(cal)]
    out = CliRunner().invoke(app, [*args, "--manifest", str(manifest)])
    assert out.exit_code == 0, out.output
    saved = load_enrollment(cal, "t9")
    assert saved is not None and sum(saved.examples.values()) == 60
    assert f"fake_face+enroll:t9:{saved.checksum[:8]}" in out.output
    # Proved by cross-validation (the fake shipped head reads only the 1s right), and said so.
    assert "shipped head 16.7 % (10/60, 50 sure and wrong), enrolled 100.0 % (60/60, 0 sure" in out.output
    assert saved.validation is not None and saved.validation["helps"] and not saved.validation["forced"]
    bad = CliRunner().invoke(
        app, ["enroll", "--table", "../x", "--from", str(folder), "--manifest", str(manifest)]
    )
    assert bad.exit_code == 2


def test_reader_enrolled_names_the_enrollment() -> None:
    from vision.onnx_session import MANIFEST_PATH
    from vision.pips.enrolled import Enrollment
    from vision.reader import Reader

    reader = Reader(threads=1, manifest_path=MANIFEST_PATH)
    pips = reader.onnx_models["pips"]
    enrollment = Enrollment(
        table_id="t3",
        model_sha256=pips.spec.sha256,
        d_weight=np.zeros((6, 4), np.float32),
        d_bias=np.zeros(6, np.float32),
        examples={},
        checksum="ab" * 32,
    )
    enrolled = reader.enrolled(enrollment)
    assert enrolled.models["pips"] == f"{pips.spec.tag}+enroll:t3:abababab"
    assert reader.models["pips"] == pips.spec.tag  # the shared reader itself unchanged
    assert enrolled.faces is not reader.faces and reader.faces.model is pips


def test_service_reads_a_table_through_its_enrollment(tmp_path: Path) -> None:
    from fastapi import HTTPException

    from api.routes.reads import _table_reader

    class StubReader:
        def enrolled(self, enrollment: Any) -> str:
            return f"enrolled:{enrollment.table_id}"

    settings: Any = SimpleNamespace(calibration_dir=tmp_path / "cal")
    reader = StubReader()
    assert _table_reader(reader, settings, None) is reader
    assert _table_reader(reader, settings, "t1") is reader  # not enrolled: the shipped model
    assert _table_reader(reader, settings, "../bad") is reader
    model = fake_model(tmp_path)
    save_enrollment(
        enroll_table(model, "t1", [(die(f), f) for f in range(1, 7)]).enrollment, settings.calibration_dir
    )
    assert _table_reader(reader, settings, "t1") == "enrolled:t1"
    enrollment_path(settings.calibration_dir, "t1").write_text("{broken")
    with pytest.raises(HTTPException) as err:
        _table_reader(reader, settings, "t1")
    assert err.value.status_code == 409  # that table's fault, not the service's (issue 57)


def test_folds_are_stratified_and_fixed() -> None:
    faces = [f for f in range(1, 7) for _ in range(10)]
    fold = fold_of(faces)
    assert fold.tolist() == fold_of(faces).tolist()  # a fixed seed
    for k in range(5):
        held = [faces[i] for i in np.flatnonzero(fold == k)]
        assert sorted(held) == [f for f in range(1, 7) for _ in range(2)]  # two of each face per fold
    assert set(fold_of([1, 2, 3]).tolist()) == {0, 1, 2}  # fewer dice than folds: one die per fold


def test_validation_is_kept_in_the_enrollment_file(tmp_path: Path) -> None:
    result = enroll_table(fake_model(tmp_path), "t1", [(die(f), f) for f in range(1, 7) for _ in range(5)])
    v = result.validation
    assert (v.folds, v.dice, v.shipped_right, v.enrolled_right) == (5, 30, 5, 30)
    assert (v.shipped_sure_wrong, v.enrolled_sure_wrong) == (25, 0) and v.helps
    saved = save_enrollment(result.enrollment, tmp_path / "cal")
    assert saved.validation == v.document() and saved.validation["shipped_accuracy"] == pytest.approx(
        1 / 6, abs=1e-4
    )
    # A file written before validation was kept still loads (no key, same checksum rule).
    old = type(saved)(
        table_id="t0",
        model_sha256=saved.model_sha256,
        d_weight=saved.d_weight,
        d_bias=saved.d_bias,
        examples={},
    )
    assert save_enrollment(old, tmp_path / "cal").validation is None


class SureRightFaceSession(FakeFaceSession):
    """A face model already right and sure on every drawn die: enrollment cannot read them better."""

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        _, emb = super().run(output_names, input_feed)
        probs = np.full((len(emb), 6), 0.004, np.float32)
        probs[np.arange(len(emb)), np.clip(emb.argmax(axis=1) - 1, 0, 5)] = 0.98
        return [probs, emb]


def test_enroll_command_refuses_what_does_not_prove_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import vision.onnx_session as onnx_session
    from api.cli import app

    manifest = fake_manifest(tmp_path)
    monkeypatch.setattr(onnx_session, "onnxruntime_session", lambda *a: SureRightFaceSession())
    folder = photos(tmp_path / "dice", per_face=5)
    cal = tmp_path / "cal"
    args = ["enroll", "--table", "t9", "--from", str(folder), "--calibration-dir", str(cal)]
    out = CliRunner().invoke(app, [*args, "--manifest", str(manifest)])
    assert out.exit_code == 2, out.output
    assert "does not prove itself" in out.output and "shipped head 100.0 % (30/30" in out.output
    assert load_enrollment(cal, "t9") is None  # nothing stored
    out = CliRunner().invoke(app, [*args, "--manifest", str(manifest), "--force"])
    assert out.exit_code == 0, out.output
    assert "stored by --force" in out.output
    saved = load_enrollment(cal, "t9")
    assert saved is not None and saved.validation is not None
    assert saved.validation["forced"] and not saved.validation["helps"]


def test_the_shipped_face_model_can_be_enrolled(tmp_path: Path) -> None:
    """Stage 18c ships with its pooled features as a second output (models/expose_embedding.py): the reader
    still reads with `probs`, and an enrollment fits and cross-validates on it."""
    from vision.onnx_session import MANIFEST_PATH, load_model

    model = load_model("pips", manifest_path=MANIFEST_PATH, threads=1)
    probs, embedding = model.run(crops_to_tensor([die(3), die(5)]))
    assert probs.shape == (2, 6) and embedding.shape == (2, 96)
    result = enroll_table(model, "t1", [(die(f), f) for f in range(1, 7) for _ in range(3)])
    assert result.enrollment.d_weight.shape == (6, 96)
    assert result.validation.dice == 18 and result.validation.folds == 5
    assert 0 <= result.validation.shipped_right <= 18 and 0 <= result.validation.enrolled_right <= 18
