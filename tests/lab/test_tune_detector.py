"""lab.tune_detector.score: precision, recall and width ratio from raw detector output (no model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from lab.tune_detector import score
from vision.detect.centernet import STRIDE, DetectorConfig, Letterbox


def _head(peaks: list[tuple[int, int, float, float]], hw: tuple[int, int] = (64, 64)) -> np.ndarray:
    """A (1, 5, h/4, w/4) output with one peak per (cell x, cell y, score, box side in px)."""
    head = np.zeros((1, 5, hw[0] // STRIDE, hw[1] // STRIDE), np.float32)
    for x, y, s, side in peaks:
        head[0, 0, y, x] = s
        head[0, 1:3, y, x] = np.log(side / STRIDE)
    return head


def test_score_counts_hits_false_alarms_and_box_width() -> None:
    lb = Letterbox(scale=1.0, input_hw=(64, 64))
    truth = np.array([[10.0, 10.0, 22.0, 22.0]], np.float32)  # a 12 px die centred at (16, 16)
    head = _head([(4, 4, 0.9, 12.0), (12, 12, 0.35, 12.0)])  # the die, and a weak false alarm at (48, 48)
    strict = score([(head, lb, (64, 64), truth)], DetectorConfig(score_threshold=0.5, size_scale=1.0))
    assert strict == {"precision_pct": 100.0, "recall_pct": 100.0, "median_width_ratio": 1.0}
    loose = score([(head, lb, (64, 64), truth)], DetectorConfig(score_threshold=0.3, size_scale=1.1))
    assert loose["precision_pct"] == 50.0 and loose["recall_pct"] == 100.0
    assert loose["median_width_ratio"] == 1.1


@pytest.mark.parametrize("which", ["real", "manifest"])
def test_a_missing_tuning_set_or_manifest_is_a_clear_exit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    from lab import tune_detector

    args = ["tune_detector", "--real", str(tmp_path)]
    if which == "manifest":
        args = ["tune_detector", "--manifest", str(tmp_path / "missing.json")]
    monkeypatch.setattr("sys.argv", args)
    expected = r"lab\.tune_detector: .*(split file not found|manifest not found)"
    with pytest.raises(SystemExit, match=expected):
        tune_detector.main()
