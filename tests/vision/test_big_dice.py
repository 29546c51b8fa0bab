"""A die filling much of the frame: the detector's coarse looks and how they merge with the fine one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from lab.big_dice import die_with_margin, place
from models.data import load_yolo_folder
from vision.detect.centernet import DetectorConfig, merge_coarse
from vision.types import Frame

FIXTURES = Path(__file__).resolve().parent / "fixtures"  # nellbyler photos (BSD-3, LICENSE there)
FRAME_WH = (1280, 960)
CONFIG = DetectorConfig()


def boxes(*rows: tuple[float, float, float, float]) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.array(rows, np.float32).reshape(-1, 4)


def scores(*values: float) -> np.ndarray[Any, np.dtype[np.float32]]:
    return np.array(values, np.float32)


def merged(fine: Any, fine_s: Any, coarse: Any, coarse_s: Any) -> list[list[float]]:
    out, _ = merge_coarse(fine, fine_s, coarse, coarse_s, image_wh=FRAME_WH, config=CONFIG)
    return [[round(float(v)) for v in b] for b in out]


BIG = (300.0, 200.0, 800.0, 700.0)  # 500 px: about half the frame's short side
PIPS = boxes((400, 300, 460, 360), (520, 420, 580, 480), (640, 540, 700, 600))  # a three's pips, 60 px


def test_a_big_die_replaces_its_pips_taken_for_dice() -> None:
    far_die = (1100.0, 100.0, 1150.0, 150.0)  # a small die elsewhere stays
    fine = np.concatenate([PIPS, boxes(far_die)])
    assert merged(fine, scores(0.6, 0.7, 0.5, 0.9), boxes(BIG), scores(0.5)) == [
        [1100, 100, 1150, 150],
        list(BIG),
    ]


def test_real_dice_inside_a_coarse_box_keep_it_out() -> None:
    dice = boxes((320, 220, 540, 440), (560, 460, 780, 680))  # 220 px: die-sized for a 500 px box
    assert merged(dice, scores(0.8, 0.8), boxes(BIG), scores(0.9)) == [
        [320, 220, 540, 440],
        [560, 460, 780, 680],
    ]
    # The fine look found the die itself: the coarse box adds nothing.
    assert merged(boxes(BIG), scores(0.7), boxes((310, 205, 805, 705)), scores(0.9)) == [list(BIG)]


def test_an_empty_big_box_counts_only_where_the_frame_has_no_ordinary_dice() -> None:
    table = boxes(
        *[
            (900.0 + 60 * (k % 3), 100.0 + 60 * (k // 3), 940.0 + 60 * (k % 3), 140.0 + 60 * (k // 3))
            for k in range(6)
        ]
    )
    # Among six ordinary dice, an empty big box is a layout box or a chip stack, not a die.
    assert len(merged(table, scores(*[0.8] * 6), boxes(BIG), scores(0.9))) == 6
    # A die filling the frame whose pips the fine look did not see at all: the coarse box is the die.
    assert merged(boxes(), scores(), boxes(BIG), scores(0.9)) == [list(BIG)]
    assert merged(boxes((10, 10, 40, 40)), scores(0.8), boxes(BIG), scores(0.9)) == [
        [10, 10, 40, 40],
        list(BIG),
    ]


def test_a_coarse_box_too_small_to_be_a_big_die_is_ignored() -> None:
    assert merged(PIPS, scores(0.6, 0.7, 0.5), boxes((380, 280, 520, 420)), scores(0.9)) == [
        [400, 300, 460, 360],
        [520, 420, 580, 480],
        [640, 540, 700, 600],
    ]  # 140 px: under 15 % of the short side, not a big die


def test_one_big_die_seen_at_two_scales_is_one_box() -> None:
    coarse = boxes(BIG, (290, 190, 790, 720), (450, 350, 650, 550))  # the second scale, and a part of it
    assert merged(PIPS, scores(0.6, 0.7, 0.5), coarse, scores(0.6, 0.5, 0.4)) == [list(BIG)]


def test_coarse_sizes_must_be_multiples_of_32() -> None:
    with pytest.raises(ValueError, match="multiples of 32"):
        DetectorConfig(coarse_long_px=(100,))


def _big_die_frame(fraction: float) -> tuple[np.ndarray[Any, Any], int]:
    """A fixture die (the first labelled die of the first photo) scaled to `fraction` of a 1280x960 frame,
    cut and pasted as `python -m lab.big_dice` does."""
    crop, face, side = die_with_margin(load_yolo_folder(FIXTURES, box_kind="die")[0], 0)
    frame, _ = place(crop, side, fraction, np.random.default_rng(0))
    return frame, face


def test_the_reader_reads_a_die_filling_half_the_frame(committed_reader: Any) -> None:
    frame, face = _big_die_frame(0.5)
    roll = committed_reader.read(Frame(image=frame, frame_id="big"))
    big = [d for d in roll.dice if d.candidate.box_xyxy[2] - d.candidate.box_xyxy[0] > 0.35 * FRAME_WH[1]]
    assert len(big) == 1  # the whole die, not its pips (a neighbour's edge in the crop's margin may show too)
    x0, y0, x1, y1 = big[0].candidate.box_xyxy
    assert x0 < FRAME_WH[0] / 2 < x1 and y0 < FRAME_WH[1] / 2 < y1 and y1 - y0 > 0.35 * FRAME_WH[1]
    centres = [
        (
            (d.candidate.box_xyxy[0] + d.candidate.box_xyxy[2]) / 2,
            (d.candidate.box_xyxy[1] + d.candidate.box_xyxy[3]) / 2,
        )
        for d in roll.dice
    ]
    assert sum(x0 < cx < x1 and y0 < cy < y1 for cx, cy in centres) == 1  # no pip left as a "die"
    assert int(np.argmax(big[0].face_probs)) + 1 == face
    # At a table (an expected count) the coarse looks are left out: the fine look alone takes pips for dice.
    at_table = committed_reader.read(Frame(image=frame, frame_id="big"), expected_dice=1)
    assert all(d.candidate.box_xyxy[2] - d.candidate.box_xyxy[0] < 0.35 * FRAME_WH[1] for d in at_table.dice)
    # The detector called directly (the judge's evaluation, table frames) leaves them out by default.
    assert all(c.box_xyxy[2] - c.box_xyxy[0] < 0.35 * FRAME_WH[1] for c in committed_reader.detector(frame))
    assert any(
        c.box_xyxy[2] - c.box_xyxy[0] > 0.35 * FRAME_WH[1]
        for c in committed_reader.detector(frame, coarse=True)
    )


def test_a_cluster_of_dice_as_big_as_the_frames_others_is_not_one_big_die() -> None:
    # Two 50 px dice inside a coarse 200 px box are "pip-sized" for it (under 0.4), but the frame's five
    # other dice are 50 px too: they are dice, and the coarse box is dropped.
    cluster = boxes((420, 420, 470, 470), (500, 500, 550, 550))
    others = boxes(*[(100.0 + 150 * k, 100.0, 150.0 + 150 * k, 150.0) for k in range(5)])
    fine = np.concatenate([cluster, others])
    coarse = boxes((400, 400, 600, 600))
    assert len(merged(fine, scores(*[0.8] * 7), coarse, scores(0.9))) == 7
    # Alone in the frame, the same two boxes are taken for the pips of one big die.
    assert merged(cluster, scores(0.8, 0.8), coarse, scores(0.9)) == [[400, 400, 600, 600]]


def test_two_big_dice_side_by_side_are_both_read_from_their_pips() -> None:
    # A close-up of two dice: every fine box is a pip of one of them, none is a small die of the frame.
    left, right = (100.0, 200.0, 600.0, 700.0), (680.0, 200.0, 1180.0, 700.0)
    pips = boxes((200, 300, 260, 360), (440, 540, 500, 600), (900, 420, 960, 480))
    assert merged(pips, scores(0.7, 0.7, 0.7), boxes(left, right), scores(0.6, 0.5)) == [
        list(left),
        list(right),
    ]
