"""The look at the top face (issue 48): a die still unsure after the second look is read once more from a
tighter crop of its top face, cut from the die-top plane a table's calibration gives."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.layout import ThrowBoxLayout
from tests.vision.fakes import FakeInput, factory, one_hot, write_manifest
from vision.onnx_session import load_model
from vision.pips.classifier import PLANE_LOOK_SPAN, FaceReader
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, ImageArray

SURE = one_hot(6, 0.99)  # a crop bright all over: the top face alone
UNSURE = one_hot(2, 0.6)  # a crop with the dark felt around the die


class BrightSession:
    """A fake face model: sure of a crop bright over 80 % of it, unsure of any other; keeps the
    size of every batch it reads."""

    def __init__(self) -> None:
        self.batch_sizes: list[int] = []

    def get_inputs(self) -> list[Any]:
        return [FakeInput("crops")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        (x,) = input_feed.values()
        self.batch_sizes.append(len(x))
        return [np.asarray([SURE if crop.mean() > 0.8 else UNSURE for crop in x], np.float32)]


def _scene() -> tuple[ImageArray, TableGeometry, tuple[DieCandidate, ...]]:
    """A camera straight above the box, two white dice on black felt: the first with a loose box (its crop
    shows the felt), the second with a box tight on its top face (its crop is bright all over)."""
    layout = ThrowBoxLayout()
    intr = CameraIntrinsics.from_fov(width_px=640, height_px=480, hfov_deg=50.0)
    centre = (layout.width_mm / 2, layout.depth_mm / 2, 0.0)
    pose = CameraPose.look_at(eye_mm=(centre[0], centre[1], 700.0), target_mm=centre, up=(0.0, 1.0, 0.0))
    camera = Camera(intr, pose)
    edge = layout.die_edge_mm
    image = np.zeros((480, 640, 3), np.uint8)
    candidates = []
    for k, (x, slack) in enumerate(((centre[0] - 80, 1.6), (centre[0] + 80, 0.7))):
        h = edge / 2
        top = np.array(
            [
                [x - h, centre[1] - h, edge],
                [x + h, centre[1] - h, edge],
                [x + h, centre[1] + h, edge],
                [x - h, centre[1] + h, edge],
            ]
        )
        quad = camera.project(top)
        cv2.fillConvexPoly(image, np.round(quad).astype(np.int32), (255, 255, 255))
        cx, cy = quad.mean(axis=0)
        half = slack * float(np.ptp(quad[:, 0])) / 2
        box = (float(cx - half), float(cy - half), float(cx + half), float(cy + half))
        pts = tuple((float(p[0]), float(p[1])) for p in quad)
        candidates.append(DieCandidate(box_xyxy=box, top_quad=pts, score=0.9 + 0.01 * k))
    return image, TableGeometry(camera=camera, layout=layout), tuple(candidates)


def _reader(tmp_path: Path, session: BrightSession, span: float | None, weight: float = 1.0) -> FaceReader:
    manifest = write_manifest(tmp_path)
    model = load_model("pips", manifest_path=manifest, session_factory=factory(object(), session))
    return FaceReader(model, plane_look_span=span, plane_look_weight=weight)


def test_an_unsure_die_is_read_again_from_its_top_face(tmp_path: Path) -> None:
    image, geometry, candidates = _scene()
    off = _reader(tmp_path, BrightSession(), None)
    first = off(image, candidates, geometry)
    assert max(first[0].face_probs) < 0.9  # the loose box: unsure, even turned
    assert first[1].face_probs[5] == pytest.approx(0.99)  # the tight one: sure at once
    session = BrightSession()
    on = _reader(tmp_path, session, 1.0)
    again = on(image, candidates, geometry)
    # The top face alone reads sure, and taken alone (weight 1): surely a 6 now.
    assert int(np.argmax(again[0].face_probs)) + 1 == 6 and max(again[0].face_probs) >= 0.9
    assert again[1].face_probs == first[1].face_probs  # a sure die is not read again
    # Batches: both dice; the unsure one turned (3); its top face (1), then turned (3).
    assert session.batch_sizes == [2, 3, 1, 3]
    # Merged half and half with the reading before (0.6 on a 2): a 6 at last, but not sure enough.
    mean = _reader(tmp_path, BrightSession(), 1.0, 0.5)(image, candidates, geometry)[0].face_probs
    assert int(np.argmax(mean)) + 1 == 6 and 0.5 < max(mean) < 0.9
    # Without a calibration there is no plane to cut from: as with the look off.
    assert on(image, candidates, None)[0].face_probs == off(image, candidates, None)[0].face_probs
    # Too loose a cut shows the felt again: no help.
    wide = _reader(tmp_path, BrightSession(), 2.5)(image, candidates, geometry)
    assert max(wide[0].face_probs) < 0.9


def test_the_look_is_off_until_judged_and_refuses_a_bad_span(tmp_path: Path) -> None:
    assert PLANE_LOOK_SPAN is None
    with pytest.raises(ValueError, match="plane_look_span"):
        _reader(tmp_path, BrightSession(), 0.0)
    with pytest.raises(ValueError, match="plane_look_weight"):
        _reader(tmp_path, BrightSession(), 1.0, 0.0)
