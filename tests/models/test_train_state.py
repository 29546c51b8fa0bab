"""`throwbox train state` on a handful of drawn crops: the run card, resuming a checkpoint, and an ONNX export
the reader's die-state classifier reads (seven states and the tilt). Skipped without the `train` extra."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from numpy.typing import NDArray
from typer.testing import CliRunner

from models.train_die_state import StateData, stack_crops

# torch's legacy (TorchScript) ONNX exporter warns that it is deprecated, and that it cannot fold the slices
# of Lite0's static "same" padding; every export here goes through it.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Constant folding:UserWarning"),
]


def drawn_crops(count: int, seed: int) -> tuple[NDArray[np.uint8], NDArray[np.int64]]:
    """`count` 64x64 context crops: a die drawn square (flat, label 0) or turned and smeared (cocked, 1)."""
    rng = np.random.default_rng(seed)
    crops, labels = [], []
    for k in range(count):
        img = np.full((64, 64, 3), (40, 110, 40), np.uint8)
        cocked = k % 2
        centre = (32 + int(rng.integers(-3, 4)), 32 + int(rng.integers(-3, 4)))
        size = (20, 12) if cocked else (20, 20)
        box = cv2.boxPoints((centre, size, 30.0 * cocked))
        cv2.fillConvexPoly(img, box.astype(np.int32), (235, 235, 235))
        crops.append(img)
        labels.append(cocked)
    return np.stack(crops), np.array(labels, np.int64)


def tiny_data(seed: int = 0) -> StateData:

    x_tr, y_tr = drawn_crops(12, seed)
    x_va, y_va = drawn_crops(6, seed + 1)
    empty = stack_crops([])
    return StateData(
        x_tr=x_tr, y_tr=y_tr, t_tr=(y_tr * 30.0).astype(np.float32), x_va=x_va, y_va=y_va,
        train_scenes=12, val_scenes=6, real_va=x_va[:2], real_none_va=empty, top_va=empty,
        top_none_va=empty,
    )  # fmt: skip


def test_train_state_help_answers_without_torch() -> None:
    from api.cli import app

    out = CliRunner().invoke(app, ["train", "state", "--help"])
    assert out.exit_code == 0, out.output
    for option in ("--minutes", "--seed", "--resume", "--device", "--threads", "--synth"):
        assert option in out.output


def test_train_state_refuses_without_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import importlib.util

    from api.cli import app

    real_find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find(name, *a)
    )
    out = CliRunner().invoke(app, ["train", "state", "--synth", str(tmp_path), "--max-steps", "1"])
    assert out.exit_code == 2
    assert "[train]" in out.output


def test_train_state_resume_card_and_export(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from models.train_faces import CARD_JSON, CARD_MD, CHECKPOINT
    from models.train_state import StateConfig, train_state

    data = tiny_data()
    out = tmp_path / "run"

    def config(max_steps: int, *, resume: bool = False) -> StateConfig:
        return StateConfig(
            out=out, max_steps=max_steps, resume=resume, blocks=2, embed=16, batch=4, threads=1,
            pretrained=False, minutes=5.0, seed=5, data={"drawn": 12},
        )  # fmt: skip

    first = train_state(config(2), data, progress=False)
    assert first.steps == 2
    assert torch.load(out / CHECKPOINT, weights_only=False)["steps"] == 2
    resumed = train_state(config(4, resume=True), data, progress=False)
    assert resumed.steps == 4  # counted on from the checkpoint's 2
    card = json.loads((out / CARD_JSON).read_text())
    assert card["steps"] == 4 and card["resumed"] is True and card["seed"] == 5
    assert card["data_seen"]["drawn"] == 12 and card["data_seen"]["train_scenes"] == 12
    assert card["data_seen"]["train_crops_per_state"]["flat"] == 6
    assert card["data_seen"]["train_crops_per_state"]["cocked"] == 6
    held = card["held_back"]
    assert held["support"]["flat"] == 3 and held["support"]["cocked"] == 3
    assert 0.0 <= held["recall_pct"]["cocked"] <= 100.0 and held["recall_pct"]["stacked"] is None
    assert held["real_flat"]["crops"] == 2
    assert "| cocked | 3 |" in (out / CARD_MD).read_text()

    # The export keeps the reader's contract: the shipped classifier reads it, 8 outputs per crop.
    import onnxruntime as ort

    from vision.onnx_session import sha256_of
    from vision.state.model import STATE_LABELS, crops_to_tensor, states_from_output

    assert card["sha256"] == sha256_of(resumed.onnx)
    session = ort.InferenceSession(str(resumed.onnx), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["state"]
    out_arr = session.run(None, {"crops": crops_to_tensor(list(data.x_va))})[0]
    assert out_arr.shape == (6, len(STATE_LABELS) + 1)
    assert np.allclose(out_arr[:, : len(STATE_LABELS)].sum(axis=1), 1.0, atol=1e-5)
    assert ((out_arr[:, -1] >= 0) & (out_arr[:, -1] <= 90)).all()  # the tilt in degrees
    states = states_from_output(out_arr)
    assert len(states) == 6 and all(s.label in STATE_LABELS for s in states)
