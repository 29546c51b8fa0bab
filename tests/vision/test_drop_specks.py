"""The detector drops boxes far smaller than the frame's other dice: specks of dirt, not dice."""

from __future__ import annotations

import numpy as np
import pytest

from vision.detect.centernet import DetectorConfig, drop_specks

WH = (640, 480)


def boxes(*rows: tuple[float, float, float, float]) -> tuple[np.ndarray, np.ndarray]:
    b = np.array(rows, np.float32).reshape(-1, 4)
    return b, np.linspace(0.9, 0.5, len(b)).astype(np.float32)


def test_a_speck_among_dice_is_dropped_and_the_dice_kept() -> None:
    b, s = boxes((100, 100, 140, 140), (200, 100, 238, 138), (300, 300, 342, 342), (400, 200, 412, 212))
    kept, kept_scores = drop_specks(b, s, WH, DetectorConfig())
    assert kept.tolist() == b[:3].tolist()
    assert kept_scores.tolist() == s[:3].tolist()


def test_a_die_just_over_the_bar_stays() -> None:
    # median side 40 px; 21 px is 0.525 of it
    b, s = boxes((100, 100, 140, 140), (200, 100, 240, 140), (300, 300, 321, 321))
    assert len(drop_specks(b, s, WH, DetectorConfig())[0]) == 3
    assert len(drop_specks(b, s, WH, DetectorConfig(min_size_of_median=0.6))[0]) == 2


def test_small_boxes_at_the_frame_edge_stay_off_and_lone_boxes_stay() -> None:
    b, s = boxes((100, 100, 140, 140), (200, 100, 240, 140), (0, 300, 10, 310))
    assert len(drop_specks(b, s, WH, DetectorConfig())[0]) == 3  # a die cut by the frame's edge
    b, s = boxes((100, 100, 140, 140), (300, 300, 310, 310))
    assert len(drop_specks(b, s, WH, DetectorConfig(min_size_of_median=0.0))[0]) == 2
    b, s = boxes((300, 300, 310, 310))
    assert len(drop_specks(b, s, WH, DetectorConfig())[0]) == 1


def test_the_fraction_is_checked() -> None:
    with pytest.raises(ValueError, match="min_size_of_median"):
        DetectorConfig(min_size_of_median=1.0)
