"""`models.train_die_state --init FILE.onnx` end to end: continue training from a committed export.

The committed die-state model is the starting point; the run trains on the six committed synthetic judge
frames (tests/vision/fixtures/judge) for a few seconds at a learning rate too small to move a weight, exports
to a temporary folder and registers in a temporary manifest (models/manifest.json is not touched). The new
export must read the dice as the committed model does: a run that ignored --init (a fresh net) gives
near-uniform probabilities and fails.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

pytest.importorskip("torch", reason="training only: pip install -e '.[train]'")
pytest.importorskip("onnx")

from datasets.format import read_scene
from vision.onnx_session import MANIFEST_PATH, OnnxModel, load_model, manifest_lists
from vision.state.model import crop_context, crops_to_tensor, reference_die_px

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "vision" / "fixtures" / "judge"


def _fixture_folder(root: Path) -> Path:
    """The committed judge frames laid out as a `throwbox lab synth` folder (images beside labels/)."""
    (root / "labels").mkdir(parents=True)
    for label in sorted(FIXTURES.glob("*.json")):
        scene = read_scene(label)
        shutil.copy(label, root / "labels" / label.name)
        shutil.copy(FIXTURES / scene.image, root / scene.image)
    return root


def _probabilities(model: OnnxModel, folder: Path) -> np.ndarray:
    """The model's state probabilities for every die in view of every frame, cut around its true box."""
    crops = []
    for label in sorted((folder / "labels").glob("*.json")):
        scene = read_scene(label)
        image = np.asarray(cv2.imread(str(folder / scene.image), cv2.IMREAD_COLOR), np.uint8)
        boxes = [d.box_xyxy for d in scene.dice if d.in_image and d.visible_fraction >= 0.5]
        ref = reference_die_px([tuple(b) for b in boxes])
        crops += [crop_context(image, tuple(b), ref_px=ref) for b in boxes]
    return np.asarray(model.run(crops_to_tensor(crops))[0], np.float32)


@pytest.mark.skipif(not manifest_lists("die_state"), reason="models/manifest.json lists no die_state model")
def test_training_continues_from_the_committed_onnx(tmp_path: Path) -> None:
    committed = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))["models"]["die_state"]
    onnx_file = MANIFEST_PATH.parent / committed["file"]
    folder = _fixture_folder(tmp_path / "scenes")
    out, manifest = tmp_path / "out", tmp_path / "manifest.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "models.train_die_state",
            "--synth",
            str(folder),
            "--init",
            str(onnx_file),
            "--minutes",
            "0.03",
            "--batch",
            "8",
            "--lr",
            "1e-9",
            "--out",
            str(out),
            "--manifest",
            str(manifest),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert f"starting from {onnx_file}" in run.stdout
    entry = json.loads(manifest.read_text(encoding="utf-8"))["models"]["die_state"]
    assert entry["sha256"] != committed["sha256"]  # a new export, not a copy of the committed file
    assert (out / "metrics.json").is_file()

    before = _probabilities(load_model("die_state"), folder)
    after = _probabilities(load_model("die_state", manifest_path=manifest), folder)
    labels = committed["labels"]
    assert len(before) >= 40  # the six frames hold about ten dice each
    # The same reading, up to the batch norms rebuilt from 512 crops and a few steps of train-mode statistics.
    assert (before[:, : len(labels)].argmax(1) == after[:, : len(labels)].argmax(1)).mean() >= 0.95
    assert float(np.abs(before[:, : len(labels)] - after[:, : len(labels)]).mean()) < 0.05
