"""lab.second_look: the sure-but-wrong rate's 95 % interval, what `score` counts, and its usage errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from lab.second_look import score, wilson_interval


def test_no_error_seen_still_allows_a_rate_near_four_in_n() -> None:
    low, high = wilson_interval(0, 1000)
    assert low == 0.0
    # Closed form at k = 0: z^2 / (n + z^2).
    assert high == pytest.approx(1.96**2 / (1000 + 1.96**2), rel=1e-12)
    # The wide model's rule set: 0 wrong among its ~1,870 sure dice cannot rule out 2 per 1,000.
    assert 2.0e-3 < wilson_interval(0, 1870)[1] < 2.1e-3


def test_the_interval_is_symmetric_and_holds_the_observed_rate() -> None:
    for k, n in [(1, 10), (8, 7655), (3, 40), (40, 40)]:
        low, high = wilson_interval(k, n)
        assert low <= k / n <= high
        mirrored = wilson_interval(n - k, n)
        assert low == pytest.approx(1 - mirrored[1], abs=1e-12)
        assert high == pytest.approx(1 - mirrored[0], abs=1e-12)
    # A textbook value: 8 in 100 -> about 4.1 % to 15.0 %.
    low, high = wilson_interval(8, 100)
    assert math.isclose(low, 0.0411, abs_tol=5e-4) and math.isclose(high, 0.1500, abs_tol=5e-4)


def test_more_data_narrows_the_interval() -> None:
    small = wilson_interval(1, 1000)
    large = wilson_interval(10, 10000)
    assert large[1] - large[0] < small[1] - small[0]


def test_no_sure_dice_give_the_whole_range_and_bad_counts_are_refused() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)
    with pytest.raises(ValueError):
        wilson_interval(3, 2)
    with pytest.raises(ValueError):
        wilson_interval(-1, 2)


def test_score_counts_sure_dice_and_the_pip_count_veto() -> None:
    probs = np.array(
        [
            [0.95, 0.01, 0.01, 0.01, 0.01, 0.01],  # sure 1, right
            [0.01, 0.95, 0.01, 0.01, 0.01, 0.01],  # sure 2, wrong (truth 3)
            [0.01, 0.01, 0.95, 0.01, 0.01, 0.01],  # 3 at 0.95 but the pip count says 4: not sure
            [0.5, 0.5, 0.0, 0.0, 0.0, 0.0],  # unsure
        ],
        np.float32,
    )
    s = score(probs, [None, 2, 4, None], np.array([1, 3, 3, 1]), bar=0.9)
    assert s["sure_pct"] == 50.0
    assert s["sure_dice"] == 2
    assert s["sure_wrong"] == 1
    assert s["accuracy_when_sure_pct"] == 50.0
    low, high = wilson_interval(1, 2)
    assert s["sure_wrong_per_1000_low"] == round(1000 * low, 2)
    assert s["sure_wrong_per_1000_high"] == round(1000 * high, 2)
    assert s["vetoes_learned_right"] == 1  # die 3: read 3, truly 3, the count's 4 left it to a person
    assert s["vetoes_learned_wrong"] == 0


def test_score_splits_the_vetoes_into_good_dice_lost_and_errors_stopped() -> None:
    sure = [[0.95 if k == face - 1 else 0.01 for k in range(6)] for face in (2, 5, 5, 6)]
    unsure = [[0.6, 0.4, 0.0, 0.0, 0.0, 0.0]]
    probs = np.array(sure + unsure, np.float32)
    counts: list[int | None] = [3, 4, 3, 6, 2]
    truth = np.array([2, 4, 4, 6, 2])
    # die 1: read 2 (right), count 3: a good die lost; die 2: read 5 (wrong), count 4 (right): stopped;
    # die 3: read 5 (wrong), count 3 (wrong too): stopped all the same; die 4: the count agrees: no veto;
    # die 5: under the bar: not a veto whatever the count says
    s = score(probs, counts, truth, bar=0.9)
    assert (s["vetoes_learned_right"], s["vetoes_learned_wrong"]) == (1, 2)
    assert s["sure_pct"] == 20.0  # only die 4


def test_second_look_without_the_real_photos_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lab import second_look

    monkeypatch.setattr("sys.argv", ["second_look", "--real", str(tmp_path)])
    with pytest.raises(SystemExit, match="real tuning photos are missing"):
        second_look.main()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--second-onnx", "w.onnx", "--second-accept", "high"], "--second-accept numbers"),
        (["--second-onnx", "w.onnx", "--second-weight", "half"], "--second-weight wants numbers"),
        (["--second-onnx", "w.onnx", "--second-accept", "1.5"], "must lie in (0, 1]"),
        (["--second-onnx", "w.onnx", "--second-accept", "nan"], "must lie in (0, 1]"),
        (["--second-onnx", "w.onnx", "--second-weight", "2"], "must lie in [0, 1]"),
        (["--second-accept", "0.95"], "need --second-onnx"),
        (["--min-pip-contrast", "-1"], "--min-pip-contrast must be 0 or more"),
        (["--min-pip-contrast", "nan"], "--min-pip-contrast must be 0 or more"),
    ],
)
def test_second_look_refuses_bad_wide_model_options_before_reading_anything(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    from lab import second_look

    # --real points at an empty folder: a usage error must come first, before any photo is looked for.
    monkeypatch.setattr("sys.argv", ["second_look", "--real", str(tmp_path), *args])
    with pytest.raises(SystemExit) as exc:
        second_look.main()
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_a_candidate_model_file_that_is_not_there_is_a_clear_exit(tmp_path: Path) -> None:
    from lab.second_look import unregistered

    with pytest.raises(SystemExit, match="no such model file"):
        unregistered(tmp_path / "missing.onnx", "pips_second")
