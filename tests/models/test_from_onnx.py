"""Starting a training run from a committed ONNX export (models/from_onnx.py); needs the `train` extra."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="training only: pip install -e '.[train]'")
pytest.importorskip("onnx")

from models.from_onnx import init_from_onnx  # noqa: E402
from models.loop import export_onnx  # noqa: E402
from models.nets import DieDetector, FaceClassifier, WideFaceClassifier  # noqa: E402
from vision.onnx_session import DEFAULT_PROVIDERS, onnxruntime_session  # noqa: E402
from vision.pips.crops import crop_die, crops_to_tensor  # noqa: E402

# torch's legacy exporter (the one the training scripts use, for its batch-norm folding) warns of its own end
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def _export(model: Any, path: Path) -> None:
    """As models/train_pips.py exports (the legacy exporter folds each batch norm into its conv)."""
    export_onnx(
        model,
        path,
        example_shape=(2, 3, 64, 64),
        input_name="crops",
        output_name="probs",
        dynamic_axes={"crops": {0: "n"}, "probs": {0: "n"}},
    )


def _onnx_probs(path: Path, crops: Any) -> np.ndarray:
    return np.asarray(onnxruntime_session(path, 1, DEFAULT_PROVIDERS).run(None, {"crops": crops.numpy()})[0])


def _trained_looking(model: Any, seed: int) -> Any:
    """Batch norms with statistics and scales far from their defaults, as after training."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                n = m.num_features
                m.running_mean.copy_(torch.randn(n, generator=g))
                m.running_var.copy_(torch.rand(n, generator=g) * 3 + 0.2)
                m.weight.copy_(torch.randn(n, generator=g))
                m.bias.copy_(torch.randn(n, generator=g))
    return model


def test_the_rebuilt_net_computes_the_exports_function(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = tmp_path / "face.onnx"
    _export(_trained_looking(FaceClassifier(), seed=1), path)
    crops = torch.rand(96, 3, 64, 64)

    fresh = FaceClassifier()
    with torch.no_grad():
        before = fresh.eval()(crops[:16]).numpy()
    init_from_onnx(fresh, path, calibration=crops)
    fresh.eval()
    with torch.no_grad():
        ours = fresh(crops[:16]).numpy()
    theirs = _onnx_probs(path, crops[:16])
    assert np.abs(ours - theirs).max() < 1e-4
    assert np.abs(before - theirs).max() > 1e-2  # the fresh net computed something else before

    # in train mode (dropout aside) the batch statistics of the calibration crops give the same function
    fresh.train()
    fresh.dropout.eval()
    with torch.no_grad():
        trained_mode = fresh(crops).numpy()
    assert np.abs(trained_mode - _onnx_probs(path, crops)).max() < 1e-3


def test_an_untrained_export_with_shared_zero_biases_loads(tmp_path: Path) -> None:
    """The exporter shares equal initializers (all-zero folded biases) through Identity nodes."""
    torch.manual_seed(2)
    path = tmp_path / "fresh.onnx"
    _export(FaceClassifier(), path)
    crops = torch.rand(32, 3, 64, 64)
    net = FaceClassifier()
    init_from_onnx(net, path, calibration=crops)
    with torch.no_grad():
        ours = net.eval()(crops).numpy()
    assert np.abs(ours - _onnx_probs(path, crops)).max() < 1e-4


def test_the_die_state_export_wrapped_for_its_softmax_loads_into_the_wrapper(tmp_path: Path) -> None:
    """The die-state export is `ExportWrapper(net)`: its layers are scoped under /net/ (train_die_state)."""
    from models.nets_die_state import DieStateNet, ExportWrapper

    torch.manual_seed(0)
    path = tmp_path / "state.onnx"
    export_onnx(
        ExportWrapper(_trained_looking(DieStateNet(states=7), seed=3)).eval(),
        path,
        example_shape=(2, 3, 64, 64),
        input_name="crops",
        output_name="states",
        dynamic_axes={"crops": {0: "n"}, "states": {0: "n"}},
    )
    crops = torch.rand(96, 3, 64, 64)
    fresh = ExportWrapper(DieStateNet(states=7))
    init_from_onnx(fresh, path, calibration=crops)
    with torch.no_grad():
        ours = fresh.eval()(crops[:16]).numpy()
    theirs = np.asarray(
        onnxruntime_session(path, 1, DEFAULT_PROVIDERS).run(None, {"crops": crops[:16].numpy()})[0]
    )
    assert np.abs(ours - theirs).max() < 1e-3  # the tilt is in degrees (x 90): 1e-3 of a degree
    with pytest.raises(ValueError, match=r"state\.onnx"):  # the bare net has no /net/ scope
        init_from_onnx(DieStateNet(states=7), path, calibration=crops)


def _export_detector(model: Any, path: Path) -> None:
    """As models/train_detector.py exports it (a small example frame: the export's H and W are free)."""
    from models.train_detector import export_detector

    export_detector(model, path, example_hw=(64, 64))


def _torch_and_onnx_heads(net: Any, path: Path, image: Any) -> tuple[np.ndarray, np.ndarray]:
    """The rebuilt net's head (eval mode) and onnxruntime's on the same (1, 3, H, W) image."""
    with torch.no_grad():
        ours = net.eval()(image).numpy()
    theirs = np.asarray(
        onnxruntime_session(path, 1, DEFAULT_PROVIDERS).run(None, {"image": image.numpy()})[0]
    )
    return ours, theirs


def test_the_detector_with_its_biased_output_layer_loads(tmp_path: Path) -> None:
    """The detector's last conv keeps its own bias (no batch norm after it): copied, not unfolded."""
    torch.manual_seed(4)
    path = tmp_path / "detector.onnx"
    source = _trained_looking(DieDetector(), seed=5)
    last = source.head[1]
    assert isinstance(last, torch.nn.Conv2d) and last.bias is not None
    with torch.no_grad():
        last.bias.copy_(torch.randn(5))
    _export_detector(source.eval(), path)
    images = torch.rand(8, 3, 96, 128)
    fresh = DieDetector()
    init_from_onnx(fresh, path, calibration=images)
    ours, theirs = _torch_and_onnx_heads(fresh, path, images[:1])
    assert np.abs(ours - theirs).max() < 1e-4
    rebuilt = fresh.head[1]
    assert isinstance(rebuilt, torch.nn.Conv2d) and rebuilt.bias is not None
    assert torch.equal(rebuilt.bias, last.bias)  # copied, not unfolded from calibration statistics


def test_the_committed_detector_loads_back() -> None:
    """`train_detector --init` the registered .onnx: the rebuilt net reads as onnxruntime does."""
    from vision.onnx_session import MANIFEST_PATH, MODELS_DIR, load_manifest

    path = MODELS_DIR / load_manifest(MANIFEST_PATH)["detector"].file
    images = torch.rand(4, 3, 160, 160)
    net = DieDetector()
    init_from_onnx(net, path, calibration=images)
    ours, theirs = _torch_and_onnx_heads(net, path, images[:1])
    assert np.abs(ours - theirs).max() < 1e-4


def test_a_batch_norm_the_export_did_not_fold_is_refused(tmp_path: Path) -> None:
    """A conv with its own bias copied as is must not leave a batch norm behind it unloaded (after a ReLU)."""

    class Odd(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = torch.nn.Sequential(
                torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.ReLU(), torch.nn.BatchNorm2d(4, affine=False)
            )

        def forward(self, x: Any) -> Any:
            return self.body(x)

    path = tmp_path / "odd.onnx"
    export_onnx(
        Odd().eval(),
        path,
        example_shape=(1, 3, 16, 16),
        input_name="image",
        output_name="out",
        dynamic_axes={},
    )
    with pytest.raises(ValueError, match=r"odd\.onnx does not fold these batch norms of Odd: body\.2"):
        init_from_onnx(Odd(), path, calibration=torch.rand(4, 3, 16, 16))


@pytest.mark.parametrize("other", ["wide", "detector"])
def test_a_file_of_another_net_is_refused(tmp_path: Path, other: str) -> None:
    path = tmp_path / f"{other}.onnx"
    if other == "wide":
        _export(WideFaceClassifier(), path)  # same layer names, other shapes
    else:
        _export_detector(DieDetector(), path)  # other layer names
    with pytest.raises(ValueError, match=rf"{other}\.onnx"):
        init_from_onnx(FaceClassifier(), path, calibration=torch.rand(8, 3, 64, 64))


def _fake_die(face: int, px: int = 48) -> np.ndarray:
    """A white die with black pips seen from above: the generator's own face texture, shrunk."""
    import cv2

    from datasets.synth.textures import DIE_STYLES, face_texture

    white = next(st for st in DIE_STYLES if st.name == "white-black")
    return np.asarray(cv2.resize(face_texture(white, face), (px, px), interpolation=cv2.INTER_AREA), np.uint8)


def _fake_real_sets(root: Path) -> None:
    """The two real folders in the layout train_pips reads, with one small photo of six dice each."""
    import cv2

    photo = np.full((120, 360, 3), (40, 110, 40), np.uint8)
    lines = []
    for k in range(6):
        x0 = 10 + k * 58
        photo[36:84, x0 : x0 + 48] = _fake_die(k + 1)
        lines.append(f"{k} {(x0 + 24) / 360:.4f} {60 / 120:.4f} {48 / 360:.4f} {48 / 120:.4f}")
    nell = root / "d6-topdown-nellbyler"
    for sub in ("images", "labels_yolo", "splits"):
        (nell / sub).mkdir(parents=True)
    cv2.imwrite(str(nell / "images" / "p0.jpg"), photo)
    (nell / "labels_yolo" / "p0.txt").write_text("\n".join(lines) + "\n")
    (nell / "splits" / "train.txt").write_text("p0.jpg\n")
    web = root / "d6-webcam-matteop65" / "train"
    web.mkdir(parents=True)
    cv2.imwrite(str(web / "w0.jpg"), photo)
    (web / "w0.txt").write_text("\n".join(lines) + "\n")


def test_train_pips_continues_from_the_committed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`train_pips --init <committed .onnx>` with a learning rate too small to move the weights exports
    (nearly) the committed model's function: the whole path, init, train mode, export, keeps it."""
    from models import train_pips
    from models.export import dated_name
    from vision.onnx_session import MANIFEST_PATH, load_manifest

    # The committed file as the manifest names it; the run writes this month's name (models.export).
    committed = MANIFEST_PATH.parent / load_manifest()["pips"].file
    _fake_real_sets(tmp_path / "real")
    out = tmp_path / "out"
    monkeypatch.setattr(
        "sys.argv",
        [
            "train_pips",
            "--real", str(tmp_path / "real"),
            "--init", str(committed),
            "--minutes", "0.02",
            "--lr", "1e-12",
            "--batch", "16",
            "--threads", "1",
            "--no-register",
            "--out", str(out),
        ],
    )  # fmt: skip
    train_pips.main()
    assert f"started from {committed}" in capsys.readouterr().out
    crops = torch.from_numpy(crops_to_tensor([crop_die(_fake_die(f), (0, 0, 48, 48)) for f in range(1, 7)]))
    before, after = _onnx_probs(committed, crops), _onnx_probs(out / dated_name("pips", "facenet"), crops)
    # the running statistics move a little with the few training batches (0.03 seen); unfolded wrongly
    # (batch norms left at weight 1), the function is another one altogether
    assert np.abs(before - after).max() < 0.1
    assert (before.argmax(axis=1) == after.argmax(axis=1)).all()
