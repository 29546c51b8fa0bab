"""`train_pips --plane-synth`: dice under an oblique camera are sampled as the reader cuts them with a
calibration, from the die-top plane; dice under a top-down camera stay box samples."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from calibration.layout import ThrowBoxLayout
from datasets.format import read_scene
from models.train_pips import CropSampler, plane_split
from vision.pips.crops import CROP_PX
from vision.table.geometry import TableGeometry

FIXTURES = Path(__file__).resolve().parents[1] / "vision" / "fixtures"


def _synth_folder(root: Path) -> Path:
    """The committed oblique frame (39 degrees) and a top-down one (judge/valid.json) as a synth folder."""
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for label in (FIXTURES / "oblique" / "oblique.json", FIXTURES / "judge" / "valid.json"):
        doc = json.loads(label.read_text(encoding="utf-8"))
        (root / "images" / doc["image"]).write_bytes((label.parent / doc["image"]).read_bytes())
        doc["image"] = f"images/{doc['image']}"
        (root / "labels" / label.name).write_text(json.dumps(doc), encoding="utf-8")
    return root


def test_oblique_dice_are_sampled_from_the_die_top_plane(tmp_path: Path) -> None:
    folder = _synth_folder(tmp_path / "set")
    box_items, frames = plane_split(folder)
    # The top-down frame stays box samples; the oblique one gives its dice to the plane sampler.
    assert len(box_items) == 1 and len(frames) == 1
    oblique = read_scene(FIXTURES / "oblique" / "oblique.json")
    image, camera, edge, dice = frames[0]
    assert image.shape == (960, 1280, 3)
    assert camera == oblique.camera and edge == ThrowBoxLayout().die_edge_mm
    seen = [d for d in oblique.dice if d.face is not None and d.in_image and d.visible_fraction >= 0.3]
    assert [face for _, _, face in dice] == [d.face for d in seen]
    # Each die is placed where the reader places a detected die: its felt position from its box.
    geometry = TableGeometry(camera=oblique.camera, layout=ThrowBoxLayout())
    expected = geometry.centres_mm([d.box_xyxy for d in seen])
    np.testing.assert_allclose([[x, y] for x, y, _ in dice], expected)

    sampler = CropSampler(box_items, seed=0)
    boxed = len(sampler)
    sampler.add_plane(frames)
    assert len(sampler) == boxed + len(dice) and len(sampler.plane) == len(dice)
    for k, (_, _, face) in enumerate(dice):
        crop, label = sampler.sample(boxed + k)
        assert crop.shape == (CROP_PX, CROP_PX, 3) and crop.dtype == np.uint8
        assert label == face
