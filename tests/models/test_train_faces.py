"""`throwbox train faces` on a handful of tiny drawn dice: the run card, resuming a checkpoint, the ONNX
export (two outputs: probabilities and the embedding enrollment reads). Skipped without the `train` extra."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from models.data import LabelledImage

# torch's legacy (TorchScript) ONNX exporter warns that it is deprecated, and that it cannot fold the slices
# of Lite0's static "same" padding; every export here goes through it.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Constant folding:UserWarning"),
]

PIPS = {1: [(0, 0)], 2: [(-1, -1), (1, 1)], 3: [(-1, -1), (0, 0), (1, 1)]}


def tiny_dice(folder: Path, count: int = 6) -> list[LabelledImage]:
    """`count` 96x96 photos of one drawn die each (white square, black pips), faces 1..3 in turn."""
    folder.mkdir(parents=True, exist_ok=True)
    items = []
    for k in range(count):
        face = k % 3 + 1
        img = np.full((96, 96, 3), (40, 110, 40), np.uint8)
        cv2.rectangle(img, (28, 28), (68, 68), (235, 235, 235), -1)
        for dx, dy in PIPS[face]:
            cv2.circle(img, (48 + 11 * dx, 48 + 11 * dy), 4, (10, 10, 10), -1)
        path = folder / f"die{k}.png"
        cv2.imwrite(str(path), img)
        items.append(
            LabelledImage(
                path=path,
                boxes_xyxy=np.array([[28, 28, 68, 68]], np.float32),
                faces=np.array([face], np.int64),
            )
        )
    return items


def test_train_faces_help_answers_without_torch() -> None:
    from api.cli import app

    out = CliRunner().invoke(app, ["train", "faces", "--help"])
    assert out.exit_code == 0, out.output
    for option in ("--minutes", "--seed", "--resume", "--device"):
        assert option in out.output


def test_missing_extra_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from api.cli import app
    from models import cli

    real_find = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find(name, *a)
    )
    message = cli.torch_missing_message()
    assert message is not None and "[train]" in message and "torch" in message
    out = CliRunner().invoke(app, ["train", "faces", "--max-steps", "1"])
    assert out.exit_code == 2
    assert "[train]" in out.output


def test_train_resume_card_and_export(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from models.train_faces import CARD_JSON, CARD_MD, CHECKPOINT, FacesConfig, train_faces

    train = {"drawn": tiny_dice(tmp_path / "train")}
    unseen = {"drawn unseen": tiny_dice(tmp_path / "unseen", 3)}
    out = tmp_path / "run"

    def config(max_steps: int, *, resume: bool = False) -> FacesConfig:
        return FacesConfig(
            out=out, max_steps=max_steps, resume=resume, blocks=2, embed=16, batch=4, threads=1,
            pretrained=False, minutes=5.0, seed=3,
        )  # fmt: skip

    first = train_faces(config(2), train, unseen, progress=False)
    assert first.steps == 2
    assert (out / CHECKPOINT).is_file()
    state = torch.load(out / CHECKPOINT, weights_only=False)
    assert state["steps"] == 2

    resumed = train_faces(config(5, resume=True), train, unseen, progress=False)
    assert resumed.steps == 5  # counted on from the checkpoint's 2, not from 0
    card = json.loads((out / CARD_JSON).read_text())
    assert card["steps"] == 5 and card["resumed"] is True and card["seed"] == 3
    assert card["data_seen_dice"] == {"drawn": 6}
    fig = card["figures_unseen_classifier_alone"]["drawn unseen"]
    assert fig["dice"] == 3 and 0 <= fig["right"] <= 3
    assert "drawn unseen" in (out / CARD_MD).read_text()

    from vision.onnx_session import sha256_of
    from vision.pips.crops import crops_to_tensor

    assert card["sha256"] == sha256_of(resumed.onnx)
    session = ort.InferenceSession(str(resumed.onnx), providers=["CPUExecutionProvider"])
    assert [o.name for o in session.get_outputs()] == ["probs", "embedding"]
    crops = [
        np.zeros((64, 64, 3), np.uint8),
        np.full((64, 64, 3), 200, np.uint8),
        np.eye(64, dtype=np.uint8)[..., None].repeat(3, 2) * 255,
    ]
    probs, embedding = session.run(None, {"crops": crops_to_tensor(crops)})
    assert probs.shape == (3, 6) and embedding.shape == (3, 16)
    assert np.allclose(probs.sum(axis=1), 1.0, atol=1e-5)


def test_resume_without_checkpoint_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    from models.train_faces import FacesConfig, train_faces

    cfg = FacesConfig(out=tmp_path / "none", resume=True, blocks=1, embed=8, pretrained=False, max_steps=1)
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train_faces(cfg, {"drawn": tiny_dice(tmp_path / "d", 3)}, {}, progress=False)


def test_synthetic_share_of_each_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("onnx")
    from models.train_faces import CARD_JSON, CHECKPOINT, FacesConfig, train_faces
    from models.train_pips import CropSampler

    drawn: list[tuple[int, int]] = []  # (dice the sampler holds, crops drawn from it)
    real_draw = CropSampler.draw

    def draw(self: CropSampler, n: int) -> tuple[np.ndarray, np.ndarray]:
        drawn.append((len(self.dice), n))
        return real_draw(self, n)

    monkeypatch.setattr(CropSampler, "draw", draw)
    # 3 photos, 9 rendered dice: one sampler over all would draw three rendered crops to one real one.
    train = {"drawn": tiny_dice(tmp_path / "real", 3), "synthetic drawn": tiny_dice(tmp_path / "synth", 9)}
    cfg = FacesConfig(
        out=tmp_path / "run", max_steps=2, blocks=1, embed=8, batch=8, threads=1, pretrained=False,
        synth_share=0.25,
    )  # fmt: skip
    train_faces(cfg, train, {}, progress=False)
    assert drawn == [(3, 6), (9, 2)] * 2
    card = json.loads((tmp_path / "run" / CARD_JSON).read_text())
    assert card["settings"]["synth_share"] == 0.25
    assert card["data_seen_dice"] == {"drawn": 3, "synthetic drawn": 9}
    assert len(torch.load(tmp_path / "run" / CHECKPOINT, weights_only=False)["sampler_rngs"]) == 2
    with pytest.raises(ValueError, match="share"):
        train_faces(FacesConfig(out=tmp_path / "bad", synth_share=1.5), train, {}, progress=False)
