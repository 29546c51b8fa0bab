"""`throwbox lab bench --candidate MANIFEST [--candidate-opinions]`: the shipped reader and a candidate timed
in one run, one thread each, frame by frame in turn, so both see the same machine (issue 55's speed rule:
one thread p50 per frame no slower than 1.3 times today's)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

# The second opinions a candidate may heed by name (lab/risk.py's opinions a reader can be set to).
HEEDS: tuple[str, ...] = ("turns_unsure", "whole_die", "peer_sure", "pips", "apart")


def candidate_config(*, opinions: bool, heeds: tuple[str, ...] = ()) -> Any:
    """The candidate reader's settings: with `opinions`, the second opinions of issue 55's first candidate
    heeded (the eight turns of the dice read under `TURNS_BELOW` and the phantom check; the pip count is not
    asked to confirm); with `heeds`, those named and no other (`HEEDS`; a second face model is read whenever
    the candidate's manifest lists `pips_peer`); with neither, the reader's defaults."""
    from dataclasses import replace

    from vision.judge.validity import ValidityConfig
    from vision.pips.classifier import TURNS_BELOW
    from vision.reader import ReaderConfig

    if not opinions and not heeds:
        return ReaderConfig()  # the reader's own defaults
    if opinions:
        heeds = tuple(dict.fromkeys((*heeds, "turns_unsure", "whole_die")))
    validity = replace(
        ValidityConfig(),
        require_turns_agree="turns_unsure" in heeds,
        require_whole_die="whole_die" in heeds,
        require_peer_agree="peer_sure" in heeds,
        require_pip_agree="pips" in heeds,
        require_apart="apart" in heeds,
    )
    turns = "turns_unsure" in heeds
    return ReaderConfig(turns_check=turns, turns_below=TURNS_BELOW if turns else None, validity=validity)


def paired(
    *,
    images: list[Any],
    frames: int,
    manifest: Path,
    candidate: Path,
    opinions: bool,
    heeds: tuple[str, ...] = (),
) -> dict[str, Any]:
    """p50/p99 per frame of both readers on one thread, read in turn; the candidate's p50 over the old's."""
    import time

    import cv2
    import numpy as np

    from vision.reader import Reader
    from vision.types import Frame

    cv2.setNumThreads(1)
    readers = {
        "shipped": Reader(threads=1, manifest_path=manifest),
        "candidate": Reader(
            threads=1, manifest_path=candidate, config=candidate_config(opinions=opinions, heeds=heeds)
        ),
    }
    for reader in readers.values():  # warm up
        for img in images:
            reader.read(Frame(image=img), expected_dice=10)
    lat: dict[str, list[float]] = {name: [] for name in readers}
    for i in range(frames):
        for name, reader in readers.items():
            t = time.perf_counter()
            reader.read(Frame(image=images[i % len(images)]), expected_dice=10)
            lat[name].append((time.perf_counter() - t) * 1000)
    out: dict[str, Any] = {
        name: {
            "p50_ms": round(float(np.percentile(v, 50)), 2),
            "p99_ms": round(float(np.percentile(v, 99)), 2),
            "models": readers[name].models,
        }
        for name, v in lat.items()
    }
    out["candidate_over_shipped_p50"] = round(out["candidate"]["p50_ms"] / out["shipped"]["p50_ms"], 3)
    out["candidate_opinions"] = opinions
    out["candidate_heeds"] = list(heeds)
    out["candidate_manifest"] = str(candidate)
    return out
