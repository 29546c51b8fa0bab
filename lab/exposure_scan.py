"""The frame-exposure guard's measures over whole sets: where the bars of `JudgeConfig` stand.

    .venv/bin/python -m lab.exposure_scan DIR [DIR ...] [--change dim:0.3] [--split train]

For each set (a folder of synthetic scenes, a YOLO folder such as matteop65's train/, or nellbyler with its
`--split`), every frame is measured as the reader measures it (`vision.judge.exposure.measure_exposure`, its
grain always, which the reader measures only while a grain bar is set) and
the line printed gives the frames read, the most clipped share, the least 99th-percentile grey level, the
most and the median noise level (grey levels), how many frames fail each bar of the shipped `JudgeConfig`
(`max_clipped_share`, `min_bright_level`, `max_noise_level`), how many would be read smoothed
(`smooth_noise_above`; both grain bars are off in the shipped config: `--smooth-above` and `--max-noise` set
them for the scan), and the median time of one measure. `--change KIND:LEVEL` measures each frame
under one change of `throwbox lab stress` first (`lab/stress.py`, e.g. `dim:0.3`, `glare:1.5`, `noise:16`):
where the bars fall among darkened, brightened or grainy photos. The bars were chosen on tuning sets with
this (docs/history/judge.md, "A frame too bright or too dark"; docs/history/reader.md, "A grainy frame,
smoothed").
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from rich.progress import track

from lab.stress import change, condition_rng, kind_named
from models.data import DatasetError, load_dataset
from vision.image import load_image
from vision.judge.config import JudgeConfig
from vision.judge.exposure import measure_exposure
from vision.types import FrameExposure


def scan(
    paths: list[Path],
    *,
    change_kind: str | None,
    level: float,
    quiet: bool,
    config: JudgeConfig | None = None,
) -> dict[str, float | int]:
    """The measures of these frames (each under the change, if one is given): the line's figures."""
    config = config or JudgeConfig()
    found: list[FrameExposure] = []
    times: list[float] = []
    for i, path in enumerate(track(paths, description="measuring", transient=True, disable=quiet)):
        image = load_image(path)
        if change_kind is not None:
            image, _ = change(
                image, np.zeros((0, 4), np.float32), change_kind, level, condition_rng(0, i, change_kind, 0)
            )
        started = time.perf_counter()
        found.append(measure_exposure(image))
        times.append((time.perf_counter() - started) * 1000.0)
    clipped = np.array([e.clipped_share for e in found])
    bright = np.array([e.bright_level for e in found])
    noise = np.array([e.noise_level or 0.0 for e in found])  # measured: measure_exposure's default
    washed = 0 if config.max_clipped_share is None else int((clipped > config.max_clipped_share).sum())
    dark = 0 if config.min_bright_level is None else int((bright < config.min_bright_level).sum())
    grainy = 0 if config.max_noise_level is None else int((noise > config.max_noise_level).sum())
    smooth = 0 if config.smooth_noise_above is None else int((noise > config.smooth_noise_above).sum())
    return {
        "frames": len(found),
        "most_clipped_pct": round(100.0 * float(clipped.max()), 2),
        "least_bright_level": int(bright.min()),
        "median_bright_level": float(np.median(bright)),
        "most_noise_level": round(float(noise.max()), 2),
        "median_noise_level": round(float(np.median(noise)), 2),
        "fail_clipped_bar": washed,
        "fail_dark_bar": dark,
        "fail_noise_bar": grainy,
        "read_smoothed": smooth,
        "median_measure_ms": round(float(np.median(times)), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("sets", nargs="+", type=Path, help="Synthetic scene folders or labelled photo sets.")
    parser.add_argument("--split", default="test", help="Split for sets that have one (nellbyler).")
    parser.add_argument("--change", default=None, help="KIND:LEVEL of throwbox lab stress, e.g. dim:0.3.")
    parser.add_argument("--smooth-above", type=float, default=None, help="Grain bar: smooth over this.")
    parser.add_argument("--max-noise", type=float, default=None, help="Grain bar: a person over this.")
    args = parser.parse_args()
    change_kind, level = None, 0.0
    if args.change:
        name, _, value = args.change.partition(":")
        try:
            change_kind, level = kind_named(name).name, float(value)
        except ValueError as exc:
            parser.error(f"--change {args.change!r}: {exc}")
    try:
        config = replace(JudgeConfig(), smooth_noise_above=args.smooth_above, max_noise_level=args.max_noise)
    except ValueError as exc:
        parser.error(str(exc))

    def bar(value: float | None) -> str:
        return "off" if value is None else f"{value:g}"

    print(
        f"bars: more than {config.max_clipped_share} of a frame clipped, its 99th percentile under "
        f"{config.min_bright_level}, or its noise over {bar(config.max_noise_level)}; read smoothed over "
        f"{bar(config.smooth_noise_above)}"
        + (f"; every frame under {change_kind} {level:g}" if change_kind else "")
    )
    for root in args.sets:
        try:
            paths = [item.path for item in load_dataset(root, split=args.split)]
        except DatasetError as exc:
            parser.error(str(exc))
        print(root.name, scan(paths, change_kind=change_kind, level=level, quiet=False, config=config))


if __name__ == "__main__":
    main()
