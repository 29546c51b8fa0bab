"""lab.quantize: int8 copies by onnxruntime's static quantization; the float source kept and checked."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import cv2
import numpy as np
import pytest

from lab.quantize import _variant_manifest, float_source, int8_path, quantize_file, record_inputs
from models.data import load_yolo_folder
from vision.onnx_session import MANIFEST_PATH, ChecksumMismatchError, ManifestError, manifest_lists, sha256_of
from vision.reader import Reader
from vision.types import Frame

FIXTURES = Path(__file__).resolve().parent.parent / "vision" / "fixtures"

pytestmark = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state"),
    reason="models/manifest.json lists no detector, face and die-state models (models/train_*.py)",
)


@pytest.fixture(scope="module")
def models_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of models/ (manifest and the float files it names): the tests write int8 files beside them."""
    root = tmp_path_factory.mktemp("models")
    manifest = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    for name in manifest["models"]:
        src = float_source(name)
        rel = src.relative_to(MANIFEST_PATH.parent)
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(src, root / rel)
        manifest["models"][name] = {
            **manifest["models"][name],
            "file": rel.as_posix(),
            "sha256": sha256_of(src),
        }
        manifest["models"][name].pop("quantized_from", None)
    (root / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    return root


def test_the_face_model_quantized_reads_the_fixture_dice_as_the_float_model(models_copy: Path) -> None:
    manifest = models_copy / "manifest.json"
    images = [it.path for it in load_yolo_folder(FIXTURES, box_kind="die")]
    inputs = record_inputs(images, manifest_path=manifest)
    assert set(inputs) == {"detector", "pips", "die_state"}
    crops = np.concatenate(inputs["pips"])
    assert crops.shape[1:] == (3, 64, 64) and len(crops) >= 10

    src = float_source("pips", manifest)
    dst = int8_path(src)
    quantize_file(src, dst, inputs["pips"])
    assert dst.name == src.name.removesuffix(".onnx") + ".int8.onnx"  # e.g. pips_facenet_2026nov.int8.onnx
    assert dst.stat().st_size < 0.5 * src.stat().st_size  # int8 weights: about a quarter of float32

    reader_float = Reader(threads=1, manifest_path=_variant_manifest(manifest, models_copy, int8=()))
    reader_int8 = Reader(threads=1, manifest_path=_variant_manifest(manifest, models_copy, int8=("pips",)))
    float_probs = reader_float.faces.model.run(crops)[0]
    int8_probs = reader_int8.faces.model.run(crops)[0]
    assert np.mean(float_probs.argmax(1) == int8_probs.argmax(1)) >= 0.9
    assert float(np.abs(float_probs - int8_probs).max()) < 0.5
    # The whole reader runs with the int8 face model and finds the fixture's dice.
    image = cv2.imread(str(images[0]), cv2.IMREAD_COLOR)
    roll = reader_int8.read(Frame(image=np.asarray(image, np.uint8), frame_id="fixture"))
    assert len(roll.dice) == len(load_yolo_folder(FIXTURES, box_kind="die")[0].faces)


def test_the_float_source_is_checked_and_an_int8_entry_points_back_to_it(models_copy: Path) -> None:
    manifest = models_copy / "manifest.json"
    src = float_source("die_state", manifest)
    raw = json.loads(manifest.read_text(encoding="utf-8"))
    entry = raw["models"]["die_state"]
    dst = int8_path(src)
    dst.write_bytes(b"stand-in for an int8 copy")
    raw["models"]["die_state"] = {
        **entry,
        "file": dst.relative_to(models_copy).as_posix(),
        "sha256": sha256_of(dst),
        "quantized_from": {"file": entry["file"], "sha256": entry["sha256"]},
    }
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    try:
        assert float_source("die_state", manifest) == src  # quantizing again starts from the float model
        raw["models"]["die_state"]["quantized_from"]["sha256"] = "0" * 64
        manifest.write_text(json.dumps(raw), encoding="utf-8")
        with pytest.raises(ChecksumMismatchError, match="SHA-256"):
            float_source("die_state", manifest)
        with pytest.raises(ManifestError, match="not in"):
            float_source("no_such_model", manifest)
    finally:
        raw["models"]["die_state"] = entry
        manifest.write_text(json.dumps(raw), encoding="utf-8")
        dst.unlink()
