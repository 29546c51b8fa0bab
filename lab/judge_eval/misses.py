"""Why valid rolls are not read valid: each such roll's deciding findings with a measured cause (issue 5).

For every labelled-valid scene the judge did not call `valid`, each finding that set the verdict becomes a
`Miss`: its reason code, the dice it names, and a `cause` found by comparing the read dice with the scene's
ground truth (so the causes are counted by a command, not by hand):

- a finding naming dice: each named die is matched to a true die (box IoU >= `MATCH_IOU`) and the cause
  says what that die truly is (`flat`, `cocked`, ...; `no die` for a detection that matches none; `same
  die twice` when two named dice match one true die), and where it lies (`near wall`, `touching a die`);
- a short count (`die_off_table` with no die named): how many true dice are in the picture but hidden
  (under `MIN_VISIBLE` seen, so neither the oracle boxes nor a detector can have them), how many a
  detector missed although they can be seen, how many are out of the picture;
- extra dice: detections that match no true die, and true dice found twice.

`contact_sheet` draws the evidence: a context crop around each die a miss names (or the whole frame for a
finding naming none), with the reason and cause written under it.

This module reads ground truth (`datasets.format`), which the reader itself never does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from calibration.layout import ThrowBoxLayout
from datasets.format import SceneTruth
from lab.judge_eval.evaluate import MATCH_IOU, MIN_VISIBLE, SceneRecord, box_iou
from models.die_state_truth import die_states_of
from vision.annotate import tile_grid
from vision.judge.validity import ValidityConfig
from vision.state.model import STATE_LABELS, crop_context, reference_die_px
from vision.types import DieReading, FindingReason, Verdict

NEAR_WALL_MM = 19.0  # a die whose centre is within one die edge of an inner wall lies against it
TOUCHING_EDGES = 1.6  # centres closer than this many edges: the dice touch (a flat die's diagonal is 1.41)
SHEET_TILE_PX = 160


@dataclass(frozen=True)
class Miss:
    """One finding that kept a labelled-valid roll from being read valid, with its measured cause."""

    scene_id: str
    image: str  # path relative to the data set root
    read_verdict: str
    reason: str
    die_ids: tuple[int, ...]  # 1-based, as in the finding
    boxes_xyxy: tuple[tuple[float, float, float, float], ...]  # the boxes of those dice
    detail: str
    cause: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "scene_id": self.scene_id,
            "image": self.image,
            "read_verdict": self.read_verdict,
            "reason": self.reason,
            "die_ids": list(self.die_ids),
            "boxes_xyxy": [list(b) for b in self.boxes_xyxy],
            "detail": self.detail,
            "cause": self.cause,
        }


def _best_match(box: Sequence[float], scene: SceneTruth) -> int | None:
    """Index of the true die (in the picture) whose box best overlaps `box`, if any reaches `MATCH_IOU`."""
    best, best_iou = None, MATCH_IOU
    for k, d in enumerate(scene.dice):
        if not d.in_image:
            continue
        iou = box_iou(box, d.box_xyxy)
        if iou >= best_iou:
            best, best_iou = k, iou
    return best


def _where(k: int, scene: SceneTruth) -> list[str]:
    """Where true die `k` lies: against a wall, touching another die (felt positions from the truth)."""
    layout = ThrowBoxLayout()
    box = layout.box
    x, y, _ = scene.dice[k].position_mm
    tags = []
    if min(x - box.x0, box.x1 - x, y - box.y0, box.y1 - y) < NEAR_WALL_MM:
        tags.append("near wall")
    for m, other in enumerate(scene.dice):
        if m != k and float(np.hypot(other.position_mm[0] - x, other.position_mm[1] - y)) < (
            TOUCHING_EDGES * layout.die_edge_mm
        ):
            tags.append("touching a die")
            break
    return tags


def _named_cause(reason: FindingReason, boxes: Sequence[Sequence[float]], scene: SceneTruth) -> str:
    """The cause of a finding that names dice: what the named dice truly are, and where they lie."""
    states = die_states_of(scene)
    matches = [_best_match(b, scene) for b in boxes]
    found = [k for k in matches if k is not None]
    if len(found) != len(set(found)):
        return "same die twice"
    parts = []
    for k in matches:
        if k is None:
            parts.append("no die")
            continue
        state = STATE_LABELS[states[k]]
        parts.append(" ".join([state, *(f"({t})" for t in _where(k, scene))]))
    text = " + ".join(parts)
    if reason == FindingReason.DIE_ON_DIE and len(boxes) == 2 and None not in matches:
        return f"boxes of two dice: {text}"
    return text


def _count_cause(dice: Sequence[DieReading], scene: SceneTruth, *, extra: bool) -> str:
    """The cause of a count finding: hidden, missed, out of the picture, or found twice / not a die.

    `dice`: the judged roll's dice (detections set aside as no die are not among them).
    """
    matched: Counter[int] = Counter()
    unmatched = 0
    for d in dice:
        k = _best_match(d.candidate.box_xyxy, scene)
        if k is None:
            unmatched += 1
        else:
            matched[k] += 1
    if extra:
        twice = sum(n - 1 for n in matched.values() if n > 1)
        return f"{unmatched} found where no die is, {twice} dice found twice"
    hidden = sum(1 for d in scene.dice if d.in_image and d.visible_fraction < MIN_VISIBLE)
    out = sum(1 for d in scene.dice if not d.in_image)
    missed = sum(
        1
        for k, d in enumerate(scene.dice)
        if d.in_image and d.visible_fraction >= MIN_VISIBLE and k not in matched
    )
    parts = []
    if hidden:
        parts.append(f"{hidden} hidden (<{MIN_VISIBLE:.0%} seen)")
    if missed:
        parts.append(f"{missed} seen but not found")
    if out:
        parts.append(f"{out} out of the picture")
    return "short count: " + (", ".join(parts) if parts else "no true die unaccounted for")


def find_misses(
    records: Iterable[SceneRecord], scenes: dict[str, SceneTruth], config: ValidityConfig
) -> list[Miss]:
    """Every deciding finding on every labelled-valid scene not read valid, with its cause."""
    out: list[Miss] = []
    for rec in records:
        if rec.truth_verdict != "valid":
            continue
        j = rec.judged(config)
        if j.verdict is Verdict.VALID:
            continue
        scene = scenes[rec.scene_id]
        for f in j.findings:
            if f.verdict is not j.verdict:
                continue
            boxes = tuple(j.dice[i - 1].candidate.box_xyxy for i in f.die_ids)
            if f.die_ids:
                cause = _named_cause(f.reason, boxes, scene)
            elif f.reason in (FindingReason.DIE_OFF_TABLE, FindingReason.COUNT_MISMATCH):
                cause = _count_cause(j.dice, scene, extra=False)
            elif f.reason == FindingReason.EXTRA_DICE:
                cause = _count_cause(j.dice, scene, extra=True)
            else:
                cause = ""
            out.append(
                Miss(
                    scene_id=rec.scene_id,
                    image=scene.image,
                    read_verdict=j.verdict.value,
                    reason=f.reason,
                    die_ids=f.die_ids,
                    boxes_xyxy=boxes,
                    detail=f.detail,
                    cause=cause,
                )
            )
    return out


def tally(misses: Iterable[Miss]) -> dict[str, Any]:
    """Counts: rolls per read verdict, findings per reason, and per (reason, cause), most common first."""
    misses = list(misses)
    rolls: dict[str, set[str]] = {}
    for m in misses:
        rolls.setdefault(m.read_verdict, set()).add(m.scene_id)
    by_reason = Counter(m.reason for m in misses)
    by_cause = Counter(f"{m.reason}: {m.cause}" for m in misses)
    return {
        "rolls_by_read_verdict": {k: len(v) for k, v in sorted(rolls.items())},
        "findings_by_reason": dict(by_reason.most_common()),
        "findings_by_cause": dict(by_cause.most_common()),
    }


def contact_sheet(
    misses: Sequence[Miss],
    load: Callable[[str], np.ndarray[Any, Any]],
    *,
    columns: int = 8,
    max_tiles: int = 96,
) -> np.ndarray[Any, Any]:
    """A grid of evidence tiles, one per miss (the first `max_tiles`): the named dice boxed in red.

    `load` maps a scene's image path to its BGR image. A finding naming dice shows a context crop around
    them (three die sizes wide, as the die-state classifier sees them); one naming none shows the frame.
    """
    if columns < 1 or max_tiles < 1:
        raise ValueError(f"columns and max_tiles must be >= 1, got {columns}, {max_tiles}")
    tiles = []
    cache: dict[str, np.ndarray[Any, Any]] = {}
    for m in misses[:max_tiles]:
        if m.image not in cache:
            cache = {m.image: load(m.image)}  # misses come scene by scene: keep one image
        image = cache[m.image].copy()
        for b in m.boxes_xyxy:
            x0, y0, x1, y1 = (round(v) for v in b)
            cv2.rectangle(image, (x0, y0), (x1, y1), (0, 0, 255), 2)
        if m.boxes_xyxy:
            xs = [v for b in m.boxes_xyxy for v in (b[0], b[2])]
            ys = [v for b in m.boxes_xyxy for v in (b[1], b[3])]
            ref = max(reference_die_px(m.boxes_xyxy), (max(xs) - min(xs)) / 2, (max(ys) - min(ys)) / 2)
            tile = crop_context(
                image, (min(xs), min(ys), max(xs), max(ys)), ref_px=ref, size_px=SHEET_TILE_PX
            )
        else:
            tile = np.asarray(
                cv2.resize(image, (SHEET_TILE_PX, SHEET_TILE_PX), interpolation=cv2.INTER_AREA), np.uint8
            )
        panel = np.full((SHEET_TILE_PX + 36, SHEET_TILE_PX, 3), 255, np.uint8)
        panel[:SHEET_TILE_PX] = tile
        for row, text in enumerate((f"{m.scene_id[-6:]} {m.reason}", m.cause[:30], m.cause[30:60])):
            cv2.putText(
                panel, text, (2, SHEET_TILE_PX + 10 + 11 * row), cv2.FONT_HERSHEY_PLAIN, 0.7, (0, 0, 0), 1
            )
        tiles.append(panel)
    return tile_grid(tiles, columns)
