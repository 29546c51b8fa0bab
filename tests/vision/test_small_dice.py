"""Small dice in a large photo: the detector's fine look, and small dice the coarse look must not merge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lab.small_dice import enlarge, tally
from models.data import load_yolo_folder
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from vision.detect.centernet import DetectorConfig, merge_coarse
from vision.detect.detector import DieDetector
from vision.onnx_session import load_model
from vision.types import Frame

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # nellbyler photos (BSD-3, LICENSE there)
FRAME_WH = (2560, 1920)
DIE = 36.0  # px in the frame: 9 px at the net's 640-px input, 27 px at 1920
# The candidates of 2026-12-02 (off by default since their rule failed): a fine look up to 1920 px, and no
# coarse big die over more than nine small boxes.
FINE = {"fine_max_long_px": 1920}
PIPS9 = DetectorConfig(coarse_max_pips=9)


class SmallBlindSession(FakeDetectorSession):
    """A detector net that misses dice under `min_px` at its input (as the real one misses most under ~10).

    Boxes are given in frame pixels; each input is the frame scaled to its width.
    """

    def __init__(
        self,
        frame_boxes: Sequence[tuple[float, float, float, float]],
        min_px: float = 14.0,
        frame_w: float = FRAME_WH[0],
    ) -> None:
        super().__init__([])
        self.frame_w = frame_w
        self.frame_boxes = list(frame_boxes)
        self.min_px = min_px
        self.widths: list[int] = []

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        (x,) = input_feed.values()
        width = int(x.shape[3])
        self.widths.append(width)
        k = width / self.frame_w
        self.boxes = [
            (k * a, k * b, k * c, k * d) for a, b, c, d in self.frame_boxes if k * (c - a) >= self.min_px
        ]
        self.first_width = width  # the boxes are already at this input's scale
        return super().run(output_names, input_feed)


def _detector(tmp_path: Path, session: FakeDetectorSession, **config: Any) -> DieDetector:
    manifest = write_manifest(tmp_path)
    faces = FakeFaceSession([one_hot(3)])
    model = load_model("detector", manifest_path=manifest, session_factory=factory(session, faces))
    return DieDetector(model, DetectorConfig(**config))


def _scattered(n: int) -> list[tuple[float, float, float, float]]:
    return [(400.0 + 150 * k, 900.0, 400.0 + 150 * k + DIE, 900.0 + DIE) for k in range(n)]


def test_small_dice_in_a_large_photo_get_the_fine_look(tmp_path: Path) -> None:
    session = SmallBlindSession(_scattered(8))
    detector = _detector(tmp_path, session, **FINE)
    frame = np.zeros((FRAME_WH[1], FRAME_WH[0], 3), np.uint8)
    found = detector(frame, coarse=True)
    assert len(found) == 8  # none at 640 px; all at the fine look's 1920 px
    assert session.widths[:2] == [640, 1920]
    for c, box in zip(found, _scattered(8), strict=True):
        assert c.box_xyxy == pytest.approx(box, abs=2.0)
    # At a table (coarse=False) and with the fine look off, the frame is read at 640 px only.
    session.widths.clear()
    assert detector(frame) == () and session.widths == [640]
    assert _detector(tmp_path, SmallBlindSession(_scattered(8)))(frame, coarse=True) == ()  # off: the default


def test_no_fine_look_for_dice_the_net_sees_well_or_a_frame_no_larger_than_its_input(tmp_path: Path) -> None:
    big = [(400.0 + 300 * k, 900.0, 480.0 + 300 * k, 980.0) for k in range(4)]  # 20 px at 640 px
    session = SmallBlindSession(big)
    frame = np.zeros((FRAME_WH[1], FRAME_WH[0], 3), np.uint8)
    assert len(_detector(tmp_path, session, **FINE)(frame, coarse=True)) == 4
    assert 1920 not in session.widths
    small = SmallBlindSession([(100.0, 100.0, 108.0, 108.0)], min_px=4.0, frame_w=640.0)
    assert len(_detector(tmp_path, small, **FINE)(np.zeros((480, 640, 3), np.uint8), coarse=True)) == 1
    assert small.widths[0] == 640 and max(small.widths) == 640  # the frame's own size: nothing finer to see


def _merged(fine: np.ndarray[Any, Any], coarse: np.ndarray[Any, Any], config: DetectorConfig) -> list[Any]:
    kept, _ = merge_coarse(
        fine,
        np.full(len(fine), 0.8, np.float32),
        coarse,
        np.array([0.9], np.float32),
        image_wh=FRAME_WH,
        config=config,
    )
    return list(kept.tolist())


def test_a_dozen_small_dice_under_one_coarse_box_are_dice_not_pips() -> None:
    coarse = np.array([[300.0, 300.0, 1300.0, 1300.0]], np.float32)
    dice = np.array(
        [
            (400.0 + 200 * (k % 4), 400.0 + 200 * (k // 4), 436.0 + 200 * (k % 4), 436.0 + 200 * (k // 4))
            for k in range(12)
        ],
        np.float32,
    )
    assert len(_merged(dice, coarse, PIPS9)) == 12  # more than a die's pips (coarse_max_pips)
    assert _merged(dice, coarse, DetectorConfig()) == coarse.tolist()  # the default (no limit): pips
    assert _merged(dice[:5], coarse, PIPS9) == coarse.tolist()  # five small boxes: a five's pips, one big die
    with pytest.raises(ValueError, match="coarse_max_pips"):
        DetectorConfig(coarse_max_pips=-1)
    with pytest.raises(ValueError, match="fine_max_long_px"):
        DetectorConfig(fine_max_long_px=1000)


def test_the_measure_keeps_the_photos_dice_where_it_sets_the_photo() -> None:
    item = load_yolo_folder(FIXTURES, box_kind="die")[0]
    for surface in ("own", "random"):
        frame, boxes, faces = enlarge(item, 3, np.random.default_rng(1), surface)
        assert frame.shape[0] == 3 * 640 or frame.shape[1] == 3 * 640
        shift = boxes - item.boxes_xyxy
        assert np.allclose(shift, shift[0]) and (faces == item.faces).all()


def test_the_measure_counts_found_false_and_faces(committed_reader: Any) -> None:
    item = load_yolo_folder(FIXTURES, box_kind="die")[0]
    frame, boxes, faces = enlarge(item, 1, np.random.default_rng(0))
    roll = committed_reader.read(Frame(image=frame, frame_id="small"))
    found, false, right = tally(roll, boxes, faces)
    assert found == len(boxes) and false == 0 and right == found


def test_a_coarse_box_is_taken_only_where_the_check_accepts_it() -> None:
    coarse = np.array([[300.0, 300.0, 1300.0, 1300.0]], np.float32)
    pips = np.array([(500.0, 500.0, 560.0, 560.0), (800.0, 800.0, 860.0, 860.0)], np.float32)
    seen: list[int] = []

    def refuse(box: Any, inside: Any) -> bool:
        seen.append(len(inside))
        return False

    kept, _ = merge_coarse(
        pips,
        np.full(2, 0.8, np.float32),
        coarse,
        np.array([0.9], np.float32),
        image_wh=FRAME_WH,
        config=DetectorConfig(),
        accept=refuse,
    )
    assert kept.tolist() == pips.tolist() and seen == [2]  # asked once, with the two boxes inside
    assert _merged(pips, coarse, DetectorConfig()) == coarse.tolist()  # without the check: one big die


def test_small_dice_in_a_photo_three_times_as_large_are_found(committed_reader: Any) -> None:
    """The face model's say on the coarse looks (ReaderConfig.big_die_face_margin, 0.1): a fixture photo's
    dice set in a frame three times as large are read one by one, not as one big die with pips."""
    assert committed_reader.config.big_die_face_margin == 0.1
    item = load_yolo_folder(FIXTURES, box_kind="die")[0]
    frame, boxes, faces = enlarge(item, 3, np.random.default_rng(0), "random")
    found, _, right = tally(committed_reader.read(Frame(image=frame, frame_id="small")), boxes, faces)
    assert found >= len(boxes) - 1 and right >= found - 1
