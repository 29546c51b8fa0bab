"""The table's fine-tune child (models/table_finetune.py) on a handful of crops for a few steps: it writes
an ONNX that loads in onnxruntime with the shipped face model's outputs, and a result.json whose held-out
figures are those dice read by both files; needs the `train` extra (torch)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch", reason="training only: pip install -e '.[train]'")
pytest.importorskip("onnx")

from models.table_finetune import (
    CANDIDATE_FILE,
    RESULT_FILE,
    FineTuneJobError,
    fine_tune,
    onnx_probs,
)
from tests.vision.enroll_data import frame
from vision.onnx_session import MODELS_DIR, load_manifest, sha256_of
from vision.pips.crops import crop_die
from vision.pips.enroll import fold_of

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")  # torch's legacy exporter


def make_job(work: Path, *, max_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A job folder of 24 drawn dice (four of each face), one fold of five held out, the shipped model."""
    from tests.vision.enroll_data import die_boxes

    faces = [1 + k % 6 for k in range(24)]
    crops = []
    for start in range(0, 24, 8):
        part = faces[start : start + 8]
        image = frame(part)
        crops += [crop_die(image, tuple(float(v) for v in b)) for b in die_boxes(len(part))]
    held = fold_of(faces, 5) == 0
    np.savez(work / "crops.npz", crops=np.stack(crops), faces=np.array(faces), held_out=held)
    spec = load_manifest()["pips"]
    job = {
        "base_model": str(MODELS_DIR / spec.file),
        "base_sha256": spec.sha256,
        "max_steps": max_steps,
        "max_seconds": 60,
        "batch": 8,
        "threads": 1,
    }
    (work / "job.json").write_text(json.dumps(job), encoding="utf-8")
    return np.stack(crops), np.array(faces), held


def test_a_few_steps_write_a_loadable_candidate_and_its_held_out_figures(tmp_path: Path) -> None:
    crops, faces, held = make_job(tmp_path, max_steps=4)
    done = subprocess.run(
        [sys.executable, "-m", "models.table_finetune", "--work", str(tmp_path), "--table", "T"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads((tmp_path / RESULT_FILE).read_text(encoding="utf-8"))
    candidate = tmp_path / CANDIDATE_FILE
    assert result["candidate_sha256"] == sha256_of(candidate) and result["steps"] == 4
    assert result["outputs"] == ["probs", "embedding"] and result["trained_on_dice"] == int((~held).sum())
    probs, outputs = onnx_probs(candidate, crops[held], threads=1, temperature=1.0)
    assert outputs == 2 and probs.shape == (int(held.sum()), 6)
    figures = result["held_out"]
    assert figures["dice"] == int(held.sum()) and figures["min_confidence"] == 0.9
    assert figures["tuned_right"] == int((probs.argmax(axis=1) + 1 == faces[held]).sum())
    shipped, _ = onnx_probs(Path(json.loads((tmp_path / "job.json").read_text())["base_model"]), crops[held],
                            threads=1, temperature=1.0)  # fmt: skip
    assert figures["shipped_right"] == int((shipped.argmax(axis=1) + 1 == faces[held]).sum())


def test_no_step_is_the_shipped_model_again(tmp_path: Path) -> None:
    """Started from the export, its batch norms frozen: with no step taken, the candidate reads as shipped."""
    crops, _, _ = make_job(tmp_path, max_steps=0)
    result = fine_tune(tmp_path, "T")
    base = Path(json.loads((tmp_path / "job.json").read_text())["base_model"])
    tuned, _ = onnx_probs(tmp_path / CANDIDATE_FILE, crops, threads=1, temperature=1.0)
    shipped, _ = onnx_probs(base, crops, threads=1, temperature=1.0)
    assert result["steps"] == 0 and np.abs(tuned - shipped).max() < 1e-4
    assert result["held_out"]["tuned_right"] == result["held_out"]["shipped_right"]


def test_a_job_on_another_base_model_is_refused(tmp_path: Path) -> None:
    make_job(tmp_path, max_steps=1)
    job = json.loads((tmp_path / "job.json").read_text())
    (tmp_path / "job.json").write_text(json.dumps({**job, "base_sha256": "0" * 64}))
    with pytest.raises(FineTuneJobError, match="not the face model"):
        fine_tune(tmp_path, "T")
    assert not (tmp_path / RESULT_FILE).exists()
