"""Writing a data set to disk, in parallel over worker processes.

Layout of OUT:
    images/<scene_id>.jpg     the rendered, degraded image
    labels/<scene_id>.json    its ground truth (format: datasets.format)
    videos/<video_id>/...     throw videos (frames + video.json), when asked for
    manifest.json             what was asked for and what came out (counts by scenario and verdict)

Each scene is a pure function of (config, index), so the files are the same for any number of workers.
Workers are started with the "spawn" method: OpenGL/EGL state must never be inherited through fork.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets.format import scene_to_dict, write_scene
from datasets.synth.generator import GENERATOR_VERSION, GeneratorConfig, generate_scene
from datasets.synth.render import SceneRenderer

_STATE: dict[str, Any] = {}


@dataclass(frozen=True)
class SceneRecord:
    """What a worker reports about a scene it wrote."""

    index: int
    scene_id: str
    scenario: str
    verdict: str
    renderer: str


@dataclass(frozen=True)
class DatasetSummary:
    """What `generate_dataset` made."""

    out: Path
    scenes: int
    seconds: float
    by_scenario: dict[str, int]
    by_verdict: dict[str, int]
    renderers: dict[str, int]
    workers: int

    @property
    def scenes_per_minute(self) -> float:
        """Throughput over the whole run."""
        return 60.0 * self.scenes / self.seconds if self.seconds > 0 else 0.0


def _init_worker(cfg: GeneratorConfig, out: str) -> None:
    _STATE["cfg"] = cfg
    _STATE["out"] = Path(out)
    _STATE["renderer"] = SceneRenderer(cfg.layout, see_through=cfg.see_through, style=cfg.style)


def _close_worker() -> None:
    renderer = _STATE.pop("renderer", None)
    if renderer is not None:
        renderer.close()


def _make(index: int) -> SceneRecord:
    cfg: GeneratorConfig = _STATE["cfg"]
    out: Path = _STATE["out"]
    scene = generate_scene(cfg, index, _STATE["renderer"])
    t = scene.truth
    (out / t.image).write_bytes(scene.jpeg)
    write_scene(out / "labels" / f"{t.scene_id}.json", t)
    return SceneRecord(index, t.scene_id, t.scenario, t.verdict, str(t.render.get("renderer", "")))


def _records(cfg: GeneratorConfig, out: Path, indices: list[int], workers: int) -> Iterator[SceneRecord]:
    if workers <= 1:
        _init_worker(cfg, str(out))
        try:
            for i in indices:
                yield _make(i)
        finally:
            _close_worker()
        return
    ctx = mp.get_context("spawn")
    with ctx.Pool(workers, initializer=_init_worker, initargs=(cfg, str(out))) as pool:
        yield from pool.imap_unordered(_make, indices, chunksize=2)


class DatasetExistsError(ValueError):
    """The output folder already holds a data set made with other settings."""


def refuse_other_dataset(out: Path, cfg: GeneratorConfig) -> None:
    """Writing into a folder of another data set would mix two sets' files: refuse, naming the difference."""
    manifest = out / "manifest.json"
    if not manifest.is_file():
        return
    try:
        old = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DatasetExistsError(
            f"{out} holds an unreadable manifest.json ({exc}); use an empty folder"
        ) from exc
    mine = {
        "seed": cfg.seed,
        "n_dice": cfg.n_dice,
        "mix": cfg.mix,
        "resolutions": [list(r) for r in cfg.resolutions],
        "see_through": cfg.see_through,
        "loaded_die": None if cfg.loaded_die is None else list(cfg.loaded_die),
        "style": cfg.style,
        "die_style": cfg.die_style,
        "felt": cfg.felt,
    }
    defaults: dict[str, object] = {"see_through": 0.0, "style": "usual"}
    for key, value in mine.items():
        had = old.get(key, defaults.get(key))
        if had != value:
            raise DatasetExistsError(
                f"{out} already holds a data set with {key}={had!r} (asked: {value!r}); use another folder"
            )


def generate_dataset(
    out: Path,
    cfg: GeneratorConfig,
    *,
    scenes: int,
    workers: int = 1,
    progress: Callable[[SceneRecord], None] | None = None,
    extra_manifest: dict[str, Any] | None = None,
) -> DatasetSummary:
    """Generate scenes 0..scenes-1 of `cfg` into `out` and write its manifest."""
    if scenes < 0:
        raise ValueError(f"scenes must be >= 0, got {scenes}")
    workers = max(1, min(workers, os.cpu_count() or 1, max(scenes, 1)))
    refuse_other_dataset(out, cfg)
    (out / "images").mkdir(parents=True, exist_ok=True)
    (out / "labels").mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    records: list[SceneRecord] = []
    for rec in _records(cfg, out, list(range(scenes)), workers):
        records.append(rec)
        if progress is not None:
            progress(rec)
    seconds = time.perf_counter() - t0
    records.sort(key=lambda r: r.index)
    summary = DatasetSummary(
        out=out,
        scenes=len(records),
        seconds=seconds,
        by_scenario=dict(Counter(r.scenario for r in records)),
        by_verdict=dict(Counter(r.verdict for r in records)),
        renderers=dict(Counter(r.renderer for r in records)),
        workers=workers,
    )
    manifest = {
        "generator": GENERATOR_VERSION,
        "seed": cfg.seed,
        "scenes": summary.scenes,
        "n_dice": cfg.n_dice,
        "mix": cfg.mix,
        "resolutions": [list(r) for r in cfg.resolutions],
        "oblique_fraction": cfg.oblique_fraction,
        "by_scenario": summary.by_scenario,
        "by_verdict": summary.by_verdict,
        "renderers": summary.renderers,
        "scene_ids": [r.scene_id for r in records],
        **({"see_through": cfg.see_through} if cfg.see_through > 0 else {}),
        **({"loaded_die": list(cfg.loaded_die)} if cfg.loaded_die is not None else {}),
        **({"style": cfg.style} if cfg.style != "usual" else {}),
        **({"die_style": cfg.die_style} if cfg.die_style is not None else {}),
        **({"felt": cfg.felt} if cfg.felt is not None else {}),
        **(extra_manifest or {}),
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n", encoding="utf-8")
    return summary


__all__ = ["DatasetSummary", "SceneRecord", "generate_dataset", "scene_to_dict"]
