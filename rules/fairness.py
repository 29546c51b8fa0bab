"""Dice fairness: the statistics that watch a table's dice against the exact distribution (issue 49).

Pure: numpy and scipy in, numbers out; no I/O. The service keeps the state (api/fairness.py); the
benchmark (lab/fairness_bench.py) and the tests drive the same functions.

What is watched, for one set of dice in play:

- per face, by position (when the camera follows each die, `per_position`): is die i showing face f more
  often than 1/6? one chart per die and face, one observation per first roll;
- per face, over the set: one chart per face, one observation per die read on a valid roll;
- per outcome the wagers depend on (`rules.hrd.math.first_roll`, exact): the Pip Street winner (one chart
  per face) and the Like Kind count (one chart per count; the rare top counts merged into one tail
  category of probability >= `MIN_OUTCOME_P`), one observation per first roll. Millionaire Row (9 or 10 of
  a kind, about 5e-6 a roll) is too rare for a sequential chart to say anything in a table's life: it is
  counted and tested exactly (binomial) on demand.

Each chart is a one-sided Bernoulli CUSUM (Page 1954) of the log-likelihood ratio of the stated bias
(`p1`) against fair play (`p0`): S = max(0, S + log(p1/p0)) on a hit, S = max(0, S + log((1-p1)/(1-p0)))
on a miss, alarm when S >= h, then restart at 0. The increments are put on an integer grid (`up`, `down`
units; the ratio kept to about 1 %), so the chart the service runs *is* a finite Markov chain and its
average run length (ARL) and run-length distribution are computed exactly by a sparse linear solve, not
approximated (Brook and Evans 1972). By the renewal theorem a chart restarted after each alarm raises
on average `observations / ARL0` false alarms; the sum over the charts of a table is the table's expected
false-alarm count, whatever the dependence between charts. The thresholds are chosen to meet
`FALSE_ALARMS_PER_TABLE_MONTH` at `ROLLS_PER_TABLE_MONTH`.

The CUSUM and its Markov chain are written here because scipy has no sequential tests; the linear algebra
(scipy.sparse), the chi-square goodness of fit (scipy.stats.chisquare) and the exact binomial tests and
intervals (scipy.stats.binomtest) are scipy's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Literal

import numpy as np
import numpy.typing as npt
from scipy import sparse, stats
from scipy.sparse.linalg import spsolve

from rules.hrd.dice import FACES, RANK_ORDER
from rules.hrd.math import first_roll

# The stated bias each face chart is tuned to detect: a face at 1/6 + 2 percentage points.
FACE_BIAS = 0.02
# The stated bias of an outcome chart: the outcome 10 % (relative) more likely than the exact probability.
OUTCOME_RATIO = 1.10
# Outcome categories rarer than this are merged into the tail category of the Like Kind count.
MIN_OUTCOME_P = 0.01
# A busy table: 16 hours a day, 30 days, about 42 rolls an hour.
ROLLS_PER_TABLE_MONTH = 20_000
# Expected false alarms per table per month (all charts together): one in about four years.
FALSE_ALARMS_PER_TABLE_MONTH = 0.02
# The smallest `up` step of a chart's integer grid: the increments' ratio is kept within 1/(2*40).
_MIN_UP_UNITS = 40
# Millionaire Row: the match counts it pays on (593.5(c)).
MILLIONAIRE_ROW_COUNTS = (9, 10)

Family = Literal["position", "set", "outcome"]
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]

# rank of each face (index face-1) for the Pip Street tie-break: ace 6 .. two 1 (593.2(d)).
_RANK = np.array([6 - RANK_ORDER.index(f) for f in FACES], dtype=np.int64)


@dataclass(frozen=True)
class Chart:
    """One Bernoulli CUSUM on an integer grid.

    Attributes:
        name: what it watches, e.g. "die 3 face 6", "set face 6", "pip_street 5", "like_kind 6+".
        family: "position" (one die), "set" (every die read) or "outcome" (one per first roll).
        p0: the hit probability in fair play (exact).
        p1: the stated bias the chart is tuned to.
        up: grid units added on a hit.
        down: grid units taken away on a miss.
        threshold: alarm when the statistic reaches this many units.
        unit_llr: log-likelihood ratio of one grid unit (the statistic in nats is units * unit_llr).
        observations_per_roll: how many observations a first roll gives the chart.
        position: the die (0-based) of a position chart, else None.
        faces: the faces that are a hit (face charts, Pip Street winner charts).
        counts: the match counts that are a hit (Like Kind charts).
    """

    name: str
    family: Family
    p0: float
    p1: float
    up: int
    down: int
    threshold: int
    unit_llr: float
    observations_per_roll: int
    position: int | None = None
    faces: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not 0 < self.p0 < self.p1 < 1:
            raise ValueError(f"a chart needs 0 < p0 < p1 < 1, got {self.p0}, {self.p1}")
        if self.up < 1 or self.down < 1 or self.threshold < 1:
            raise ValueError("a chart's steps and threshold are positive grid units")

    @property
    def threshold_llr(self) -> float:
        """h in nats (log-likelihood ratio)."""
        return self.threshold * self.unit_llr


def grid_steps(*, p0: float, p1: float) -> tuple[int, int, float]:
    """The integer grid of a Bernoulli CUSUM: (up, down, nats per unit), the ratio kept to ~1 %."""
    a = math.log(p1 / p0)
    b = -math.log((1 - p1) / (1 - p0))
    down = max(1, math.ceil(_MIN_UP_UNITS * b / a))
    unit = b / down
    return max(1, round(a / unit)), down, unit


def _transitions(chart: Chart, p: float) -> sparse.csr_matrix:
    """The sub-stochastic matrix among the transient states 0..threshold-1 when a hit has probability p."""
    h = chart.threshold
    states = np.arange(h)
    up_to = states + chart.up
    down_to = np.maximum(states - chart.down, 0)
    keep = up_to < h
    rows = np.concatenate([states[keep], states])
    cols = np.concatenate([up_to[keep], down_to])
    vals = np.concatenate([np.full(int(keep.sum()), p), np.full(h, 1 - p)])
    return sparse.csr_matrix((vals, (rows, cols)), shape=(h, h))


def average_run_length(chart: Chart, *, p: float) -> float:
    """Expected observations from a fresh start (0) to the alarm when a hit has probability p (exact)."""
    q = _transitions(chart, p)
    system = sparse.identity(chart.threshold, format="csc") - q.tocsc()
    arl = spsolve(system, np.ones(chart.threshold))
    return float(arl[0])


def run_length_quantiles(
    chart: Chart, *, p: float, quantiles: Sequence[float], max_observations: int = 10_000_000
) -> tuple[int, ...]:
    """Observations by which the chart has alarmed with each probability in `quantiles` (exact)."""
    qt = _transitions(chart, p).T.tocsr()
    v = np.zeros(chart.threshold)
    v[0] = 1.0
    wanted = sorted(quantiles)
    found: list[int] = []
    n = 0
    while len(found) < len(wanted) and n < max_observations:
        v = qt @ v
        n += 1
        alarmed = 1.0 - float(v.sum())
        while len(found) < len(wanted) and alarmed >= wanted[len(found)]:
            found.append(n)
    if len(found) < len(wanted):
        raise ValueError(f"the chart has not alarmed by {max_observations} observations")
    by_q = dict(zip(wanted, found, strict=True))
    return tuple(by_q[q] for q in quantiles)


def _threshold_for(*, p0: float, p1: float, min_arl: float) -> tuple[int, int, int, float]:
    """The smallest integer threshold whose in-control ARL is at least `min_arl`: (up, down, h, unit)."""
    up, down, unit = grid_steps(p0=p0, p1=p1)

    def arl(h: int) -> float:
        chart = Chart("probe", "set", p0, p1, up, down, h, unit, 1)
        return average_run_length(chart, p=p0)

    lo, hi = 1, max(up, 1)
    while arl(hi) < min_arl:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if arl(mid) >= min_arl:
            hi = mid
        else:
            lo = mid
    return up, down, hi, unit


@dataclass(frozen=True)
class OutcomeCategory:
    """An outcome a wager depends on, with its exact probability on a fair first roll."""

    kind: Literal["pip_street", "like_kind"]
    label: str
    p0: float
    faces: tuple[int, ...] = ()
    counts: tuple[int, ...] = ()


@cache
def outcome_categories(dice: int) -> tuple[OutcomeCategory, ...]:
    """Pip Street winner per face and Like Kind count categories (tail merged), from the exact math."""
    first = first_roll(dice)
    cats = [
        OutcomeCategory("pip_street", str(face), float(first.winner[face]), faces=(face,)) for face in FACES
    ]
    counts = sorted(first.match_count)
    tail: list[int] = []
    while counts and sum(float(first.match_count[c]) for c in [*tail, counts[-1]]) < MIN_OUTCOME_P:
        tail.insert(0, counts.pop())
    if counts:  # the tail joins the highest count that keeps it above MIN_OUTCOME_P
        tail.insert(0, counts.pop())
    for c in counts:
        cats.append(OutcomeCategory("like_kind", str(c), float(first.match_count[c]), counts=(c,)))
    label = f"{tail[0]}+" if len(tail) > 1 else str(tail[0])
    cats.append(
        OutcomeCategory(
            "like_kind", label, sum(float(first.match_count[c]) for c in tail), counts=tuple(tail)
        )
    )
    return tuple(cats)


def millionaire_row_p(dice: int) -> float:
    """Exact probability that a first roll shows 9 or 10 of a kind (0 with six dice)."""
    first = first_roll(dice)
    return sum(float(first.match_count.get(c, 0)) for c in MILLIONAIRE_ROW_COUNTS)


@dataclass(frozen=True)
class WatchDesign:
    """Every chart watching one dice set, and what they promise."""

    dice: int
    per_position: bool
    charts: tuple[Chart, ...]
    face_bias: float
    outcome_ratio: float
    rolls_per_month: int
    false_alarms_per_month: float  # expected, all charts together (exact, from each chart's ARL0)

    def indices(self, family: Family) -> tuple[int, ...]:
        """Positions in `charts` of one family."""
        return tuple(i for i, c in enumerate(self.charts) if c.family == family)


@cache
def watch_design(
    *,
    dice: int,
    per_position: bool,
    face_bias: float = FACE_BIAS,
    outcome_ratio: float = OUTCOME_RATIO,
    rolls_per_month: int = ROLLS_PER_TABLE_MONTH,
    false_alarms_per_month: float = FALSE_ALARMS_PER_TABLE_MONTH,
) -> WatchDesign:
    """The charts of a dice set of `dice` dice, thresholds set so that all of them together raise
    `false_alarms_per_month` false alarms per table per month in expectation (split evenly between the
    families, then between the charts of a family)."""
    if dice not in (6, 10):
        raise ValueError(f"High Roll Dice throws 10 or 6 dice, got {dice}")
    p0 = 1 / 6
    families: list[Family] = ["set", "outcome"]
    if per_position:
        families.append("position")
    budget = false_alarms_per_month / len(families)
    charts: list[Chart] = []

    def add(n_charts: int, obs: int, p_zero: float, p_one: float) -> tuple[int, int, int, float]:
        # Each chart of a family gets an equal share of the family's budget of false alarms.
        return _threshold_for(p0=p_zero, p1=p_one, min_arl=rolls_per_month * obs * n_charts / budget)

    up, down, h, unit = add(6, dice, p0, p0 + face_bias)
    for face in FACES:
        charts.append(
            Chart(f"set face {face}", "set", p0, p0 + face_bias, up, down, h, unit, dice, faces=(face,))
        )
    cats = outcome_categories(dice)
    for cat in cats:
        p1 = min(cat.p0 * outcome_ratio, (1 + cat.p0) / 2)
        up, down, h, unit = add(len(cats), 1, cat.p0, p1)
        charts.append(
            Chart(
                f"{cat.kind} {cat.label}",
                "outcome",
                cat.p0,
                p1,
                up,
                down,
                h,
                unit,
                1,
                faces=cat.faces,
                counts=cat.counts,
            )
        )
    if per_position:
        up, down, h, unit = add(6 * dice, 1, p0, p0 + face_bias)
        for die in range(dice):
            for face in FACES:
                charts.append(
                    Chart(
                        f"die {die + 1} face {face}",
                        "position",
                        p0,
                        p0 + face_bias,
                        up,
                        down,
                        h,
                        unit,
                        1,
                        position=die,
                        faces=(face,),
                    )
                )
    arl0: dict[tuple[float, float, int], float] = {}
    expected = 0.0
    for c in charts:
        key = (c.p0, c.p1, c.threshold)
        if key not in arl0:
            arl0[key] = average_run_length(c, p=c.p0)
        expected += rolls_per_month * c.observations_per_roll / arl0[key]
    return WatchDesign(
        dice=dice,
        per_position=per_position,
        charts=tuple(charts),
        face_bias=face_bias,
        outcome_ratio=outcome_ratio,
        rolls_per_month=rolls_per_month,
        false_alarms_per_month=expected,
    )


# ----------------------------------------------------------------------------------------- observations
def classify_rolls(faces: IntArray) -> tuple[IntArray, IntArray]:
    """Pip Street winner and match count of first rolls, vectorised: faces (..., dice) -> (...), (...).

    The same rule as `rules.hrd.dice.classify` (most frequent face, ties to the higher rank; the ace wins
    a 6-dice no-match roll, the default interpretation); a test checks the two agree.
    """
    counts = (faces[..., :, None] == np.asarray(FACES)).sum(axis=-2)  # (..., 6)
    match = counts.max(axis=-1)
    winner = np.asarray(FACES)[np.argmax(counts * 8 + _RANK, axis=-1)]
    return winner.astype(np.int64), match.astype(np.int64)


def increments(design: WatchDesign, faces: IntArray, *, first_roll: bool = True) -> IntArray:
    """Grid increments of every chart for rolls `faces` (..., n): (..., charts, steps), 0 = no observation.

    A first roll (all the set's dice) feeds every chart; an Extra Roll (only the rethrown dice, whose
    positions the reader cannot tie to the dice of the first roll) feeds the set charts only.
    """
    faces = np.asarray(faces, dtype=np.int64)
    n = faces.shape[-1]
    if first_roll and n != design.dice:
        raise ValueError(f"a first roll of this set has {design.dice} dice, got {n}")
    if not 0 < n <= design.dice:
        raise ValueError(f"a roll of this set has 1..{design.dice} dice, got {n}")
    steps = design.dice
    out = np.zeros((*faces.shape[:-1], len(design.charts), steps), dtype=np.int64)
    if first_roll:
        winner, match = classify_rolls(faces)
    for i, c in enumerate(design.charts):
        if c.family == "set":
            hit = faces == c.faces[0]
            out[..., i, :n] = np.where(hit, c.up, -c.down)
        elif not first_roll:
            continue
        elif c.family == "position":
            hit = faces[..., c.position or 0] == c.faces[0]
            out[..., i, 0] = np.where(hit, c.up, -c.down)
        elif c.faces:
            out[..., i, 0] = np.where(winner == c.faces[0], c.up, -c.down)
        else:
            out[..., i, 0] = np.where(np.isin(match, c.counts), c.up, -c.down)
    return out


def thresholds(design: WatchDesign) -> IntArray:
    """Every chart's threshold, in grid units, in chart order."""
    return np.array([c.threshold for c in design.charts], dtype=np.int64)


def advance(state: IntArray, steps: IntArray, limit: IntArray) -> tuple[IntArray, BoolArray]:
    """Run the charts over one roll's increments: state (..., charts), steps (..., charts, k).

    Returns the new state and which charts alarmed during the roll; an alarmed chart restarts at 0 (the
    renewal that makes `observations / ARL0` its long-run false-alarm rate). A zero step is no observation.
    """
    s, alarmed, _ = advance_detail(state, steps, limit)
    return s, alarmed


def advance_detail(state: IntArray, steps: IntArray, limit: IntArray) -> tuple[IntArray, BoolArray, IntArray]:
    """`advance`, and the statistic (grid units) each chart reached when it alarmed (0 if it did not)."""
    s = np.array(state, dtype=np.int64, copy=True)
    alarmed = np.zeros(s.shape, dtype=bool)
    crossed = np.zeros(s.shape, dtype=np.int64)
    for k in range(steps.shape[-1]):
        inc = steps[..., k]
        s = np.where(inc != 0, np.maximum(s + inc, 0), s)
        hit = s >= limit
        alarmed |= hit
        crossed = np.where(hit, s, crossed)
        s = np.where(hit, 0, s)
    return s, alarmed, crossed


def loaded_weights(*, dice: int, loaded_die: int | None, face: int, bias: float) -> npt.NDArray[np.float64]:
    """Face probabilities (dice, 6): fair dice, one die (or all, `loaded_die=None`) with `face` at 1/6 +
    `bias`, the other five faces sharing what is left equally."""
    if not 0 <= 1 / 6 + bias <= 1 or face not in FACES:
        raise ValueError(f"cannot load face {face!r} by {bias!r}")
    weights = np.full((dice, 6), 1 / 6)
    loaded = np.full(6, (1 - (1 / 6 + bias)) / 5)
    loaded[face - 1] = 1 / 6 + bias
    if loaded_die is None:
        weights[:] = loaded
    else:
        weights[loaded_die] = loaded
    return weights


def simulate_rolls(
    rng: np.random.Generator, weights: npt.NDArray[np.float64], shape: tuple[int, ...]
) -> IntArray:
    """Rolls of dice with face probabilities `weights` (dice, 6): faces of shape (*shape, dice)."""
    cdf = np.cumsum(weights, axis=1)
    cdf[:, -1] = 1.0
    u = rng.random((*shape, weights.shape[0]))
    faces: IntArray = ((u[..., None] > cdf).sum(axis=-1) + 1).astype(np.int64)
    return faces


# ------------------------------------------------------------------------------------------ on demand
@dataclass(frozen=True)
class Proportion:
    """Observed against expected for one face or outcome, with the exact 95 % interval (Clopper-Pearson)."""

    label: str
    hits: int
    trials: int
    expected_p: float
    low: float
    high: float
    p_value: float  # two-sided exact binomial test against expected_p

    @property
    def observed_p(self) -> float:
        """hits / trials (0 with no trials)."""
        return self.hits / self.trials if self.trials else 0.0


def proportion(label: str, *, hits: int, trials: int, expected_p: float) -> Proportion:
    """An exact binomial test and interval (scipy.stats.binomtest)."""
    if trials == 0:
        return Proportion(label, 0, 0, expected_p, 0.0, 1.0, 1.0)
    test = stats.binomtest(hits, trials, expected_p)
    ci = test.proportion_ci(confidence_level=0.95, method="exact")
    return Proportion(label, hits, trials, expected_p, float(ci.low), float(ci.high), float(test.pvalue))


@dataclass(frozen=True)
class ChiSquare:
    """A chi-square goodness-of-fit test (scipy.stats.chisquare) over a window."""

    what: str
    statistic: float
    dof: int
    p_value: float
    trials: int
    bins: tuple[str, ...]


def chi_square(
    what: str, *, observed: Sequence[int], expected_p: Sequence[float], labels: Sequence[str]
) -> ChiSquare:
    """Goodness of fit of counts to exact probabilities; bins expected below 5 are merged into the
    rarest remaining one (the usual rule for the chi-square approximation)."""
    obs = [float(o) for o in observed]
    p = [float(x) for x in expected_p]
    names = list(labels)
    total = sum(obs)
    if total == 0:
        return ChiSquare(what, 0.0, 0, 1.0, 0, tuple(names))
    while len(obs) > 2 and min(x * total for x in p) < 5:
        i = int(np.argmin(p))
        j = i - 1 if i > 0 else i + 1
        obs[j] += obs[i]
        p[j] += p[i]
        names[j] = f"{names[min(i, j)]}|{names[max(i, j)]}"
        del obs[i], p[i], names[i]
    f_exp = np.asarray(p) / sum(p) * total
    result = stats.chisquare(np.asarray(obs), f_exp=f_exp)
    return ChiSquare(
        what, float(result.statistic), len(obs) - 1, float(result.pvalue), int(total), tuple(names)
    )
