"""rules.fairness: the charts' exact run lengths agree with simulation, the vectorised roll classification
agrees with the rules engine, and the on-demand tests are scipy's."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from rules import fairness as fx
from rules.hrd.dice import DiceCount, classify


@pytest.mark.parametrize("dice", [10, 6])
def test_classify_rolls_agrees_with_the_rules_engine(dice: int) -> None:
    rng = np.random.default_rng(dice)
    faces = rng.integers(1, 7, size=(2000, dice))
    winner, match = fx.classify_rolls(faces)
    for row, w, m in zip(faces, winner, match, strict=True):
        expected = classify([int(f) for f in row], dice=DiceCount(dice))
        assert (int(w), int(m)) == (expected.winner, expected.match_count)


@pytest.mark.parametrize("dice", [10, 6])
def test_outcome_categories_are_the_exact_distribution(dice: int) -> None:
    cats = fx.outcome_categories(dice)
    pip = [c.p0 for c in cats if c.kind == "pip_street"]
    kind = [c.p0 for c in cats if c.kind == "like_kind"]
    assert sum(pip) == pytest.approx(1.0) and sum(kind) == pytest.approx(1.0)
    assert min(kind) >= fx.MIN_OUTCOME_P


def _simulated_run_lengths(chart: fx.Chart, *, p: float, runs: int, rng: np.random.Generator) -> np.ndarray:
    """Run `runs` copies of the chart until each alarms once, with `advance` (the code the service runs)."""
    state = np.zeros(runs, dtype=np.int64)
    done = np.zeros(runs, dtype=np.int64)
    limit = np.full(runs, chart.threshold)
    n = 0
    while (done == 0).any():
        n += 1
        steps = np.where(rng.random(runs) < p, chart.up, -chart.down)[:, None]
        state, alarmed = fx.advance(state, steps, limit)
        done = np.where((done == 0) & alarmed, n, done)
    return done


@pytest.mark.parametrize("p_shift", [0.0, 0.05])
def test_cusum_run_lengths_agree_with_simulation(p_shift: float) -> None:
    # A short chart (ARL0 about 400) so the simulation is cheap; the same chain gives the long ones.
    p0, p1 = 1 / 6, 1 / 6 + fx.FACE_BIAS
    up, down, h, unit = fx._threshold_for(p0=p0, p1=p1, min_arl=400)
    chart = fx.Chart("probe", "position", p0, p1, up, down, h, unit, 1, position=0, faces=(6,))
    p = p0 + p_shift
    predicted = fx.average_run_length(chart, p=p)
    (median,) = fx.run_length_quantiles(chart, p=p, quantiles=[0.5])
    runs = _simulated_run_lengths(chart, p=p, runs=3000, rng=np.random.default_rng(7))
    standard_error = runs.std() / np.sqrt(runs.size)
    assert abs(runs.mean() - predicted) < 4 * standard_error, (runs.mean(), predicted)
    assert abs(np.median(runs) - median) <= 0.1 * median
    assert p_shift == 0 or predicted < 0.5 * fx.average_run_length(chart, p=p0)


def test_false_alarm_rate_of_a_whole_watch_agrees_with_simulation() -> None:
    # A watch with a large false-alarm budget (40 a "month" of 2,000 rolls), to count alarms in seconds.
    design = fx.watch_design(dice=10, per_position=True, rolls_per_month=2000, false_alarms_per_month=40.0)
    assert design.false_alarms_per_month == pytest.approx(40.0, rel=0.1)
    rng = np.random.default_rng(11)
    tables, rolls = 20, 2000
    weights = fx.loaded_weights(dice=10, loaded_die=None, face=6, bias=0.0)
    state = np.zeros((tables, len(design.charts)), dtype=np.int64)
    limit = fx.thresholds(design)
    alarms = 0
    for faces in fx.simulate_rolls(rng, weights, (rolls, tables)):
        state, alarmed = fx.advance(state, fx.increments(design, faces), limit)
        alarms += int(alarmed.sum())
    expected = design.false_alarms_per_month * tables * rolls / design.rolls_per_month
    assert abs(alarms - expected) < 0.2 * expected, (alarms, expected)


def test_production_watch_meets_its_false_alarm_budget() -> None:
    for per_position in (False, True):
        design = fx.watch_design(dice=10, per_position=per_position)
        assert design.false_alarms_per_month <= fx.FALSE_ALARMS_PER_TABLE_MONTH
        assert design.false_alarms_per_month > 0.8 * fx.FALSE_ALARMS_PER_TABLE_MONTH  # not far too strict


def test_a_loaded_die_raises_its_own_chart_and_a_fair_one_stays_quiet() -> None:
    design = fx.watch_design(dice=10, per_position=True)
    rng = np.random.default_rng(3)
    limit = fx.thresholds(design)
    loaded = fx.loaded_weights(dice=10, loaded_die=2, face=5, bias=0.5)
    fair = fx.loaded_weights(dice=10, loaded_die=None, face=5, bias=0.0)
    for weights, should_alarm in ((loaded, True), (fair, False)):
        state = np.zeros(len(design.charts), dtype=np.int64)
        first_alarm: set[str] = set()
        for faces in fx.simulate_rolls(rng, weights, (400,)):
            state, alarmed = fx.advance(state, fx.increments(design, faces), limit)
            first_alarm |= {design.charts[i].name for i in np.flatnonzero(alarmed)}
        assert ("die 3 face 5" in first_alarm) is should_alarm
        assert bool(first_alarm) is should_alarm


def test_extra_roll_feeds_the_set_charts_only() -> None:
    design = fx.watch_design(dice=10, per_position=True)
    steps = fx.increments(design, np.array([6, 6, 2]), first_roll=False)
    fed = {design.charts[i].family for i in np.flatnonzero((steps != 0).any(axis=-1))}
    assert fed == {"set"}
    with pytest.raises(ValueError, match="first roll"):
        fx.increments(design, np.array([6, 6, 2]))


def test_loaded_weights_and_simulated_rolls() -> None:
    weights = fx.loaded_weights(dice=6, loaded_die=0, face=6, bias=0.05)
    assert weights.sum(axis=1) == pytest.approx(np.ones(6))
    faces = fx.simulate_rolls(np.random.default_rng(5), weights, (60_000,))
    assert abs((faces[:, 0] == 6).mean() - (1 / 6 + 0.05)) < 0.01
    assert abs((faces[:, 1] == 6).mean() - 1 / 6) < 0.01
    with pytest.raises(ValueError, match="cannot load"):
        fx.loaded_weights(dice=6, loaded_die=0, face=6, bias=0.9)


def test_chi_square_is_scipys_and_merges_small_bins() -> None:
    result = fx.chi_square(
        "faces", observed=[10, 12, 9, 11, 8, 10], expected_p=[1 / 6] * 6, labels=list("123456")
    )
    reference = stats.chisquare([10, 12, 9, 11, 8, 10])
    assert result.statistic == pytest.approx(reference.statistic) and result.p_value == pytest.approx(
        reference.pvalue
    )
    merged = fx.chi_square(
        "kind", observed=[50, 40, 9, 1], expected_p=[0.5, 0.4, 0.09, 0.01], labels=list("abcd")
    )
    assert merged.bins == ("a", "b", "c|d") and merged.dof == 2


def test_proportion_interval_is_exact() -> None:
    p = fx.proportion("6", hits=30, trials=120, expected_p=1 / 6)
    ci = stats.binomtest(30, 120, 1 / 6).proportion_ci(method="exact")
    assert (p.low, p.high) == pytest.approx((ci.low, ci.high))
    assert p.p_value < 0.05  # 25 % against 16.7 % on 120 throws
