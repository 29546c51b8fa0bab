"""Calibrating the face model's confidence (lab/calibrate.py, `throwbox lab calibrate-faces`) and the reader
reading a manifest's temperature and sure bar (a manifest without them reads as before)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from lab.calibrate import at_temperature, calibrate, choose_bar, ece, fit_temperature
from lab.cli import app
from vision.onnx_session import MANIFEST_PATH, ManifestError, load_manifest, manifest_lists

FIXTURES = Path(__file__).resolve().parents[1] / "vision" / "fixtures"
runner = CliRunner()
needs_models = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state"),
    reason="models/manifest.json lists no detector, face and die-state models (models/train_*.py)",
)


def _drawn(temperature: float, n: int = 4000, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities whose labels are drawn from softmax(logits) but reported at `temperature`: a model
    over- (T < 1) or under-confident (T > 1) by exactly that much."""
    rng = np.random.default_rng(seed)
    logits = rng.normal(0.0, 2.5, size=(n, 6))
    true = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    faces = np.array([rng.choice(6, p=p) + 1 for p in true], np.int64)
    shown = np.exp(logits / temperature)
    return (shown / shown.sum(axis=1, keepdims=True)).astype(np.float32), faces


@pytest.mark.parametrize("shown_at", [0.5, 1.0, 2.0])
def test_the_fitted_temperature_undoes_a_known_miscalibration(shown_at: float) -> None:
    probs, faces = _drawn(shown_at)
    assert fit_temperature(probs, faces) == pytest.approx(1.0 / shown_at, rel=0.1)
    fitted = calibrate(probs, faces, target_per_1000=50.0)
    assert fitted.ece_after <= fitted.ece_before + 1e-3 and fitted.ece_after < 0.03
    assert fitted.nll_after <= fitted.nll_before + 1e-6


def test_ece_is_zero_when_confidence_is_accuracy_and_the_bar_meets_its_target() -> None:
    probs = np.array([[0.9, 0.02, 0.02, 0.02, 0.02, 0.02]] * 10, np.float32)
    faces = np.array([1] * 9 + [2], np.int64)  # 90 % sure, 90 % right
    assert ece(probs, faces) == pytest.approx(0.0, abs=1e-6)
    assert ece(at_temperature(probs, 0.5), faces) > 0.05  # sharpened: sure beyond its accuracy
    sure = np.array([[0.999, 0.0002, 0.0002, 0.0002, 0.0002, 0.0002]] * 5, np.float32)
    unsure = np.array([[0.6, 0.4, 0.0, 0.0, 0.0, 0.0]] * 5, np.float32)
    both = np.concatenate([sure, unsure])
    labels = np.array([1] * 5 + [2] * 5, np.int64)  # the unsure ones are all wrong
    assert choose_bar(both, labels, target_per_1000=1.0) > 0.6
    with pytest.raises(ValueError, match="no labelled dice"):
        fit_temperature(np.zeros((0, 6), np.float32), np.zeros(0, np.int64))


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("temperature", 0.0, "temperature must be a number in"),  # no temperature divides by nothing
        ("temperature", "hot", "temperature must be a number in"),
        ("sure_bar", 1.5, "sure_bar must be a number in"),
        ("sure_bar", True, "sure_bar must be a number in"),  # a bool is not a bar
    ],
)
def test_a_malformed_calibration_in_the_manifest_is_refused(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    raw = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    raw["models"]["pips"][field] = value
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(ManifestError, match=message):
        load_manifest(path)


@needs_models
def test_a_calibrated_manifest_is_written_and_read_and_the_shipped_one_reads_as_before(
    tmp_path: Path,
) -> None:
    from vision.reader import Reader

    scenes = tmp_path / "scenes"
    (scenes / "labels").mkdir(parents=True)
    for f in (FIXTURES / "see_through").glob("s9700-*"):
        shutil.copy(f, scenes / ("labels" if f.suffix == ".json" else "") / f.name)
    written = tmp_path / "elsewhere" / "manifest.json"
    result = runner.invoke(
        app,
        [
            "calibrate-faces", "--tune", str(scenes), "--judge", f"photos={FIXTURES}",
            "--report", str(tmp_path / "rep"), "--out-manifest", str(written),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads((tmp_path / "rep" / "calibration.json").read_text(encoding="utf-8"))
    assert doc["fitted"]["tuning_dice"] == 40 and doc["sets"]["photos"]["dice"] == 38
    assert (tmp_path / "rep" / "reliability.png").stat().st_size > 0
    spec = load_manifest(written)["pips"]
    assert spec.temperature == doc["fitted"]["temperature"] and spec.sure_bar == doc["fitted"]["sure_bar"]
    calibrated = Reader(manifest_path=written)  # the weights found from another folder, checksums and all
    assert calibrated.faces.temperature == spec.temperature
    assert calibrated.config.validity.min_confidence == spec.sure_bar
    shipped, listed = Reader(), load_manifest()["pips"]  # the shipped manifest's own calibration, or none
    assert shipped.faces.temperature == (listed.temperature or 1.0)
    assert shipped.config.validity.min_confidence == (listed.sure_bar or 0.9)
    bad = runner.invoke(app, ["calibrate-faces", "--tune", str(scenes), "--judge", "no-name-given"])
    assert bad.exit_code == 2 and "--judge wants NAME=PATH" in bad.output
