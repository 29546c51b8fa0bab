"""Throughput benchmark of the generator: scenes per minute at a given size, over worker processes.

Two figures: `end_to_end` (wall time from start to the last file written, process start-up included) and
`steady` (from the first scene written to the last, i.e. what a long run sustains). The machine's load
average before and after is reported, because on a shared machine other jobs change the figure.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from datasets.synth.generator import GeneratorConfig
from datasets.synth.writer import SceneRecord, generate_dataset


@dataclass(frozen=True)
class BenchResult:
    """What the benchmark measured."""

    scenes: int
    workers: int
    width_px: int
    height_px: int
    end_to_end_per_min: float
    steady_per_min: float
    load_before: tuple[float, float, float]
    load_after: tuple[float, float, float]
    cpus: int
    renderers: dict[str, int]
    mix: dict[str, float]


def run_bench(
    *,
    scenes: int,
    workers: int,
    width_px: int,
    height_px: int,
    seed: int = 0,
    mix: dict[str, float] | None = None,
) -> BenchResult:
    """Generate `scenes` scenes into a temporary folder and time it."""
    if scenes < 2:
        raise ValueError("the benchmark needs at least 2 scenes")
    cfg = GeneratorConfig(seed=seed, mix=mix or {"normal": 1.0}, resolutions=((width_px, height_px, 1.0),))
    stamps: list[float] = []

    def tick(_rec: SceneRecord) -> None:
        stamps.append(time.perf_counter())

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="throwbox-bench-") as tmp:
        t0 = time.perf_counter()
        summary = generate_dataset(Path(tmp), cfg, scenes=scenes, workers=workers, progress=tick)
        t1 = time.perf_counter()
    load_after = os.getloadavg()
    # Steady state: skip the first scene of each worker (process start, EGL start, textures loaded).
    skip = min(summary.workers, len(stamps) - 1)
    steady_span = stamps[-1] - stamps[skip - 1] if skip > 0 else stamps[-1] - t0
    steady = 60.0 * (len(stamps) - skip) / steady_span if steady_span > 0 else 0.0
    return BenchResult(
        scenes=summary.scenes,
        workers=summary.workers,
        width_px=width_px,
        height_px=height_px,
        end_to_end_per_min=60.0 * summary.scenes / (t1 - t0),
        steady_per_min=steady,
        load_before=load_before,
        load_after=load_after,
        cpus=os.cpu_count() or 1,
        renderers=summary.renderers,
        mix=cfg.mix,
    )
