"""Re-derive a data set's rule-based ground truth with the current truth code, without re-rendering.

A scene is a pure function of (config, index), so its physics can be simulated again from the data set's
manifest. When the final poses match the stored ones, the dice's physical truth (face read by the rules,
cocked, stacked, what each rests on) and the scene's verdict are recomputed with the current
`datasets.synth.truth` and `physics` code and written back; the image, the boxes and everything the camera
decides stay as they are. A scene whose simulation no longer reproduces its stored poses (a staging
accepted under one truth rule and refused under the other) is left untouched and listed.

Written for the 2026-11-30 change of the resting-side rule (`datasets.synth.dice.resting_side`): labels made
before it can read a die propped against another die or a wall by a face looking sideways or down.
"""

from __future__ import annotations

import json
import multiprocessing as mp
import shutil
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from datasets.format import FormatError, SceneTruth, read_scene, write_scene
from datasets.synth.generator import GENERATOR_VERSION, GeneratorConfig, simulate_scene
from datasets.synth.truth import physical_truth, scene_verdict

BACKUP_DIR = "labels-before-relabel"
POSITION_TOL_MM = 0.01
QUAT_TOL = 1e-4


class RelabelError(ValueError):
    """The folder is not a generated data set that can be relabelled (no manifest, unknown config)."""


@dataclass(frozen=True)
class DieChange:
    """One die whose rule-based truth changed: (field, before, after) per changed field."""

    scene_id: str
    die: int
    changes: tuple[tuple[str, object, object], ...]
    tilt_deg: float = 0.0  # the die's tilt and what it rests on (after), for a person to judge the change
    rests_on: str = ""


@dataclass(frozen=True)
class SceneRelabel:
    """What relabelling one scene found."""

    scene_id: str
    reproduced: bool
    dice: tuple[DieChange, ...] = ()
    verdict: tuple[str, str] | None = None  # (before, after) when it changed
    layout_move_changed: bool = False
    new: SceneTruth | None = None
    changed: bool = False  # a die, the verdict or its reasons changed: the label would be rewritten


@dataclass(frozen=True)
class RelabelReport:
    """Over a data set: scenes checked, scenes not reproduced, dice and verdicts changed."""

    scenes: int
    not_reproduced: tuple[str, ...]
    dice: tuple[DieChange, ...]
    verdicts: tuple[tuple[str, str, str], ...]  # (scene id, before, after)
    written: int
    layout_moves: tuple[str, ...] = ()  # scenes whose recorded dealer's move (first roll's faces) changed

    @property
    def scenes_changed(self) -> int:
        """Scenes with at least one die or the verdict changed."""
        return len({d.scene_id for d in self.dice} | {v[0] for v in self.verdicts} | set(self.layout_moves))


def config_from_manifest(folder: Path) -> GeneratorConfig:
    """The generator configuration a data set was made with (only what the physics depends on)."""
    path = folder / "manifest.json"
    if not path.is_file():
        raise RelabelError(f"{folder} has no manifest.json: not a data set made by `throwbox lab synth`")
    try:
        m = json.loads(path.read_text(encoding="utf-8"))
        return GeneratorConfig(seed=int(m["seed"]), n_dice=int(m["n_dice"]), mix=dict(m["mix"]))
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise RelabelError(f"{path}: cannot read the generator configuration ({exc})") from exc


_FIELDS = ("face", "rests_on", "cocked", "stacked", "off_table")


def relabel_scene(cfg: GeneratorConfig, old: SceneTruth) -> SceneRelabel:
    """Simulate `old`'s scene again and re-derive its rule-based truth (nothing is written)."""
    outcome = simulate_scene(cfg, old.index)
    poses = outcome.result.poses
    same = (
        outcome.scenario == old.scenario
        and len(poses) == len(old.dice)
        and all(
            np.allclose(p.position_mm, d.position_mm, atol=POSITION_TOL_MM)
            and np.allclose(p.quat_xyzw, d.quat_xyzw, atol=QUAT_TOL)
            for p, d in zip(poses, old.dice, strict=False)
        )
    )
    if not same:
        return SceneRelabel(old.scene_id, reproduced=False)
    phys = [physical_truth(p, c, cfg.layout) for p, c in zip(poses, outcome.result.contacts, strict=True)]
    dice = []
    changes = []
    for d, t in zip(old.dice, phys, strict=True):
        new = replace(
            d, face=t.face, rests_on=t.rests_on, cocked=t.cocked, stacked=t.stacked, off_table=t.off_table
        )
        diff = tuple((f, getattr(d, f), getattr(new, f)) for f in _FIELDS if getattr(d, f) != getattr(new, f))
        if diff:
            changes.append(DieChange(old.scene_id, d.id, diff, tilt_deg=t.tilt_deg, rests_on=t.rests_on))
        dice.append(new)
    verdict, reasons = scene_verdict(phys, expected=outcome.expected_dice, missing=outcome.missing)
    # The dealer's move (layout scenarios) records the first roll's faces by the rules: derived again too.
    # A label written before the format had it (files without `layout_move` read as before) is not given one.
    move = outcome.layout_move if old.layout_move is not None else None
    changed = bool(changes) or verdict != old.verdict or reasons != old.reasons or move != old.layout_move
    new_scene = replace(old, dice=tuple(dice), verdict=verdict, reasons=reasons, layout_move=move)
    if changed:
        new_scene = replace(new_scene, generator=GENERATOR_VERSION)
    return SceneRelabel(
        old.scene_id,
        reproduced=True,
        dice=tuple(changes),
        verdict=(old.verdict, verdict) if verdict != old.verdict else None,
        new=new_scene,
        changed=changed,
        layout_move_changed=move != old.layout_move,
    )


def _work(args: tuple[GeneratorConfig, str]) -> tuple[str, SceneRelabel]:
    cfg, path = args
    return path, relabel_scene(cfg, read_scene(Path(path)))


def _results(cfg: GeneratorConfig, paths: list[Path], workers: int) -> Iterator[tuple[str, SceneRelabel]]:
    jobs = [(cfg, str(p)) for p in paths]
    if workers <= 1:
        yield from map(_work, jobs)
        return
    # Spawned, not forked (as datasets.synth.writer): the caller may be running threads (a progress bar).
    with ProcessPoolExecutor(max_workers=workers, mp_context=mp.get_context("spawn")) as pool:
        yield from pool.map(_work, jobs, chunksize=4)


def relabel_dataset(
    folder: Path,
    *,
    write: bool,
    workers: int = 1,
    limit: int | None = None,
    progress: Callable[[SceneRelabel], None] | None = None,
) -> RelabelReport:
    """Relabel every scene of `folder` (the first `limit`); with `write`, rewrite the changed labels.

    Each changed label file is first copied to `BACKUP_DIR/` (an earlier backup of the same file is kept:
    the backup is always the oldest label). The manifest's verdict counts are updated and it records the
    relabelling.
    """
    cfg = config_from_manifest(folder)
    paths = sorted((folder / "labels").glob("*.json"))
    if not paths:
        raise RelabelError(f"{folder / 'labels'} holds no label files")
    if limit is not None:
        paths = paths[:limit]
    try:
        results: list[tuple[Path, SceneRelabel]] = []
        for name, r in _results(cfg, paths, workers):
            results.append((Path(name), r))
            if progress is not None:
                progress(r)
    except FormatError as exc:
        raise RelabelError(str(exc)) from exc
    written = 0
    if write:
        backup = folder / BACKUP_DIR
        for label, r in results:
            if r.new is None or not r.changed:
                continue
            backup.mkdir(exist_ok=True)
            if not (backup / label.name).exists():
                shutil.copy2(label, backup / label.name)
            write_scene(label, r.new)
            written += 1
        _update_manifest(folder, written)
    return RelabelReport(
        scenes=len(results),
        not_reproduced=tuple(r.scene_id for _, r in results if not r.reproduced),
        dice=tuple(d for _, r in results for d in r.dice),
        verdicts=tuple((r.scene_id, *r.verdict) for _, r in results if r.verdict is not None),
        written=written,
        layout_moves=tuple(r.scene_id for _, r in results if r.layout_move_changed),
    )


def _update_manifest(folder: Path, written: int) -> None:
    path = folder / "manifest.json"
    m = json.loads(path.read_text(encoding="utf-8"))
    verdicts = Counter(read_scene(p).verdict for p in sorted((folder / "labels").glob("*.json")))
    m["by_verdict"] = dict(verdicts)
    m.setdefault("relabelled", []).append({"by": GENERATOR_VERSION, "labels_rewritten": written})
    path.write_text(json.dumps(m, indent=1) + "\n", encoding="utf-8")


__all__ = [
    "BACKUP_DIR",
    "DieChange",
    "RelabelError",
    "RelabelReport",
    "SceneRelabel",
    "config_from_manifest",
    "relabel_dataset",
    "relabel_scene",
]
