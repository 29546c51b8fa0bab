"""`python -m lab.fairness_bench`: the fairness watch's error rates checked by simulation (issue 49).

1. Fair play: 1,000,000 simulated first rolls of fair dice (50 tables x 20,000 rolls, one table-month
   each at `ROLLS_PER_TABLE_MONTH`), every chart of a per-position watch running; the false alarms counted
   against the documented expectation (`WatchDesign.false_alarms_per_month`, exact from each chart's ARL).
2. Detection: 200 simulated tables whose die 1 is loaded +5 points on face 6 (the other faces of that die
   share the rest), every chart running; the roll of each table's first alarm, the median against the
   prediction (the exact run-length median of the loaded die's chart).

Vectorised over tables with numpy: the same `rules.fairness.increments` / `advance` the service runs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy import stats

from rules import fairness as fx


def fair_play(*, rolls: int, tables: int, seed: int) -> dict[str, float]:
    """False alarms over `rolls` fair first rolls spread over `tables` tables."""
    design = fx.watch_design(dice=10, per_position=True)
    rng = np.random.default_rng(seed)
    weights = fx.loaded_weights(dice=10, loaded_die=None, face=6, bias=0.0)
    per_table = rolls // tables
    state = np.zeros((tables, len(design.charts)), dtype=np.int64)
    limit = fx.thresholds(design)
    alarms = 0
    for _ in range(per_table // 1000):
        for faces in fx.simulate_rolls(rng, weights, (1000, tables)):
            state, alarmed = fx.advance(state, fx.increments(design, faces), limit)
            alarms += int(alarmed.sum())
    months = tables * per_table / design.rolls_per_month
    expected = design.false_alarms_per_month * months
    return {
        "rolls": tables * per_table,
        "table_months": months,
        "alarms": alarms,
        "expected_alarms": expected,
        "documented_rate": design.false_alarms_per_month,
        "observed_rate": alarms / months,
        # P(at least this many | the documented rate): small means more alarms than documented.
        "p_at_least": float(stats.poisson.sf(alarms - 1, expected)),
    }


def detection(*, tables: int, bias: float, seed: int) -> tuple[dict[str, float], str]:
    """Rolls to the first alarm at `tables` tables with die 1 loaded by `bias` on face 6, and the chart
    that alarmed first at most tables."""
    design = fx.watch_design(dice=10, per_position=True)
    chart = next(c for c in design.charts if c.name == "die 1 face 6")
    q10, q50, q90 = fx.run_length_quantiles(chart, p=1 / 6 + bias, quantiles=[0.1, 0.5, 0.9])
    arl = fx.average_run_length(chart, p=1 / 6 + bias)
    rng = np.random.default_rng(seed)
    weights = fx.loaded_weights(dice=10, loaded_die=0, face=6, bias=bias)
    state = np.zeros((tables, len(design.charts)), dtype=np.int64)
    limit = fx.thresholds(design)
    first = np.zeros(tables, dtype=np.int64)
    which: dict[str, int] = {}
    n = 0
    while (first == 0).any() and n < 20 * q50:
        for faces in fx.simulate_rolls(rng, weights, (500, tables)):
            n += 1
            state, alarmed = fx.advance(state, fx.increments(design, faces), limit)
            new = (first == 0) & alarmed.any(axis=1)
            for t in np.flatnonzero(new):
                name = design.charts[int(np.flatnonzero(alarmed[t])[0])].name
                which[name] = which.get(name, 0) + 1
            first = np.where(new, n, first)
    median = float(np.median(first[first > 0]))
    top = max(which, key=lambda k: which[k]) if which else ""
    figures = {
        "tables": tables,
        "detected": int((first > 0).sum()),
        "median_rolls": median,
        "predicted_median": q50,
        "predicted_q10": q10,
        "predicted_q90": q90,
        "predicted_mean": arl,
        "simulated_q10": float(np.quantile(first, 0.1)),
        "simulated_q90": float(np.quantile(first, 0.9)),
        "median_error": median / q50 - 1,
        "first_chart_share": which.get(top, 0) / tables,
    }
    return figures, top


def main() -> None:
    """Run both checks and print their figures."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rolls", type=int, default=1_000_000)
    parser.add_argument("--fair-tables", type=int, default=50)
    parser.add_argument("--loaded-tables", type=int, default=200)
    parser.add_argument("--bias", type=float, default=0.05)
    parser.add_argument("--seed", type=int, default=49)
    args = parser.parse_args()
    t0 = time.perf_counter()
    fair = fair_play(rolls=args.rolls, tables=args.fair_tables, seed=args.seed)
    t1 = time.perf_counter()
    print(f"fair play ({t1 - t0:.0f} s):")
    for k, v in fair.items():
        print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    loaded, first_chart = detection(tables=args.loaded_tables, bias=args.bias, seed=args.seed + 1)
    print(f"die 1 loaded +{args.bias:.0%} points on face 6 ({time.perf_counter() - t1:.0f} s):")
    for k, v in loaded.items():
        print(f"  {k}: {v:.4g}" if isinstance(v, float) else f"  {k}: {v}")
    print(f"  first_chart: {first_chart}")
    ok = abs(loaded["median_error"]) <= 0.2 and fair["p_at_least"] >= 0.01
    print("PASS" if ok else "FAIL")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
