"""Score the reader against labelled images: detection P/R at IoU >= 0.5, face accuracy, exact rolls.

Pure counting on numpy arrays (no torch); `throwbox lab eval` drives it and draws the plot.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from vision.types import Roll

if TYPE_CHECKING:
    from models.data import LabelledImage

IOU_MATCH = 0.5


def iou_matrix(a: NDArray[np.float32], b: NDArray[np.float32]) -> NDArray[np.float32]:
    """Pairwise IoU of xyxy boxes, (len(a), len(b))."""
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)), np.float32)
    x0 = np.maximum(a[:, None, 0], b[None, :, 0])
    y0 = np.maximum(a[:, None, 1], b[None, :, 1])
    x1 = np.minimum(a[:, None, 2], b[None, :, 2])
    y1 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x1 - x0, 0, None) * np.clip(y1 - y0, 0, None)
    area_a = (a[:, 2] - a[:, 0]) * (a[:, 3] - a[:, 1])
    area_b = (b[:, 2] - b[:, 0]) * (b[:, 3] - b[:, 1])
    out: NDArray[np.float32] = (inter / np.maximum(area_a[:, None] + area_b[None, :] - inter, 1e-9)).astype(
        np.float32
    )
    return out


def match(
    pred_xyxy: NDArray[np.float32],
    pred_score: NDArray[np.float32],
    gt_xyxy: NDArray[np.float32],
    *,
    box_kind: str = "die",
) -> list[tuple[int, int]]:
    """Greedy one-to-one matching, highest score first: (pred index, gt index) pairs.

    `box_kind="die"`: IoU >= 0.5. `box_kind="top"` (labels hold the top face only): the label's centre
    must lie inside the predicted box, and the nearest centre wins.
    """
    pairs: list[tuple[int, int]] = []
    used: set[int] = set()
    if box_kind == "die":
        ious = iou_matrix(pred_xyxy, gt_xyxy)
        for p in np.argsort(-pred_score):
            if ious.shape[1] == 0:
                break
            cand = [(float(ious[p, g]), g) for g in range(ious.shape[1]) if g not in used]
            if not cand:
                break
            best_iou, best_g = max(cand)
            if best_iou >= IOU_MATCH:
                pairs.append((int(p), int(best_g)))
                used.add(best_g)
        return pairs
    gc = (gt_xyxy[:, :2] + gt_xyxy[:, 2:]) / 2
    for p in np.argsort(-pred_score):
        b = pred_xyxy[p]
        pc = (b[:2] + b[2:]) / 2
        inside = [
            g
            for g in range(len(gt_xyxy))
            if g not in used and b[0] <= gc[g, 0] <= b[2] and b[1] <= gc[g, 1] <= b[3]
        ]
        if inside:
            g = min(inside, key=lambda k: float(np.linalg.norm(gc[k] - pc)))
            pairs.append((int(p), g))
            used.add(g)
    return pairs


@dataclass
class Tally:
    """Running counts over a dataset."""

    images: int = 0
    gt_dice: int = 0
    pred_dice: int = 0
    matched: int = 0
    face_correct: int = 0  # final face (after the judge) equals the label
    learned_correct: int = 0  # the learned classifier's argmax equals the label
    uncertain: int = 0  # matched dice the judge marked uncertain
    classical_opinions: int = 0
    classical_correct: int = 0
    rolls_exact: int = 0  # verdict valid and the read faces equal the labels as a multiset
    rolls_learned_exact: int = 0  # every die found and every learned face right (ignores the judge)
    # Rolls the reader calls valid whose faces are not the labels' (as a multiset: what every High Roll Dice
    # wager is settled on), by name: a valid roll that would pay wrong, against the labels of the set.
    settled_wrong: list[str] = field(default_factory=list)
    verdicts: dict[str, int] = field(default_factory=dict)
    confusion: NDArray[np.int64] = field(default_factory=lambda: np.zeros((6, 7), np.int64))  # gt x (1..6, ?)
    latency_ms: list[float] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    # The same counts per group of images (`add_image(group=...)`: the kind of camera and frame of a synthetic
    # scene, "top_down/still", "top_down/motion_blur", ...), so a figure can be told apart by what the frame
    # shows; empty when no image was given a group.
    groups: dict[str, Tally] = field(default_factory=dict)

    def add_image(
        self,
        *,
        name: str,
        gt_xyxy: NDArray[np.float32],
        gt_faces: NDArray[np.int64],
        pred_xyxy: NDArray[np.float32],
        pred_score: NDArray[np.float32],
        pred_face: list[int | None],
        learned_face: list[int],
        pip_count: list[int | None],
        verdict: str,
        latency_ms: float,
        box_kind: str,
        group: str | None = None,
    ) -> None:
        """Count one image (and again in `groups[group]` when a group is given)."""
        if group is not None:
            self.groups.setdefault(group, Tally()).add_image(
                name=name,
                gt_xyxy=gt_xyxy,
                gt_faces=gt_faces,
                pred_xyxy=pred_xyxy,
                pred_score=pred_score,
                pred_face=pred_face,
                learned_face=learned_face,
                pip_count=pip_count,
                verdict=verdict,
                latency_ms=latency_ms,
                box_kind=box_kind,
            )
        self.images += 1
        self.gt_dice += len(gt_faces)
        self.pred_dice += len(pred_xyxy)
        self.verdicts[verdict] = self.verdicts.get(verdict, 0) + 1
        self.latency_ms.append(latency_ms)
        pairs = match(pred_xyxy, pred_score, gt_xyxy, box_kind=box_kind)
        self.matched += len(pairs)
        all_learned_right = len(pairs) == len(gt_faces) == len(pred_xyxy)
        problems = []
        for p, g in pairs:
            truth = int(gt_faces[g])
            final = pred_face[p]
            self.confusion[truth - 1, (final - 1) if final is not None else 6] += 1
            self.face_correct += int(final == truth)
            self.learned_correct += int(learned_face[p] == truth)
            self.uncertain += int(final is None)
            if pip_count[p] is not None:
                self.classical_opinions += 1
                self.classical_correct += int(pip_count[p] == truth)
            if learned_face[p] != truth:
                all_learned_right = False
                problems.append(f"label {truth} read {learned_face[p]}")
        if len(pairs) < len(gt_faces):
            problems.append(f"{len(gt_faces) - len(pairs)} missed")
        if len(pairs) < len(pred_xyxy):
            problems.append(f"{len(pred_xyxy) - len(pairs)} false")
        self.rolls_learned_exact += int(all_learned_right)
        exact = verdict == "valid" and sorted(f for f in pred_face if f is not None) == sorted(
            int(f) for f in gt_faces
        )
        self.rolls_exact += int(exact)
        if verdict == "valid" and not exact:
            self.settled_wrong.append(name)
        if problems:
            self.failures.append({"image": name, "problems": problems})

    def add_roll(
        self,
        *,
        name: str,
        gt_xyxy: NDArray[np.float32],
        gt_faces: NDArray[np.int64],
        roll: Roll,
        box_kind: str,
        group: str | None = None,
    ) -> None:
        """Count one image from the reader's `Roll` of it (what `add_image` needs, taken from the roll)."""
        self.add_image(
            name=name,
            gt_xyxy=gt_xyxy,
            gt_faces=gt_faces,
            pred_xyxy=np.array([d.candidate.box_xyxy for d in roll.dice], np.float32).reshape(-1, 4),
            pred_score=np.array([d.candidate.score for d in roll.dice], np.float32),
            pred_face=[d.face for d in roll.dice],
            learned_face=[int(np.argmax(d.face_probs)) + 1 for d in roll.dice],
            pip_count=[d.pip_count for d in roll.dice],
            verdict=roll.verdict.value,
            latency_ms=roll.timing_ms["total"],
            box_kind=box_kind,
            group=group,
        )

    def summary(self, *, box_kind: str) -> dict[str, Any]:
        """JSON-ready figures."""

        def pct(a: int, b: int) -> float | None:
            return round(100.0 * a / b, 2) if b else None

        lat = np.asarray(self.latency_ms) if self.latency_ms else np.zeros(1)
        det: dict[str, Any] = {
            "precision_pct": pct(self.matched, self.pred_dice),
            "recall_pct": pct(self.matched, self.gt_dice),
        }
        if box_kind != "die":
            det["note"] = "labels box the top face only: matched by label centre inside the detected box"
        return {
            "images": self.images,
            "gt_dice": self.gt_dice,
            "detected_dice": self.pred_dice,
            "matched_dice": self.matched,
            "detection": det,
            "face_accuracy_pct": {
                "final_of_gt_dice": pct(self.face_correct, self.gt_dice),
                "final_of_matched": pct(self.face_correct, self.matched),
                "learned_of_matched": pct(self.learned_correct, self.matched),
                "final_of_certain": pct(self.face_correct, self.matched - self.uncertain),
                "uncertain_of_matched": pct(self.uncertain, self.matched),
                "classical_opinion_rate": pct(self.classical_opinions, self.matched),
                "classical_precision": pct(self.classical_correct, self.classical_opinions),
            },
            "rolls": {
                "exact_valid_pct": pct(self.rolls_exact, self.images),
                "learned_exact_pct": pct(self.rolls_learned_exact, self.images),
                "verdicts": dict(self.verdicts),
                "read_valid": self.verdicts.get("valid", 0),
                "read_valid_settled_wrong": len(self.settled_wrong),
                "settled_wrong_images": self.settled_wrong[:50],
            },
            "confusion_gt_rows_read_cols_1_to_6_and_uncertain": self.confusion.tolist(),
            "latency_ms": {
                "p50": round(float(np.percentile(lat, 50)), 2),
                "p99": round(float(np.percentile(lat, 99)), 2),
            },
            "failures": self.failures[:50],
        } | ({"by_camera_and_frame": self._group_summaries(box_kind)} if self.groups else {})

    def _group_summaries(self, box_kind: str) -> dict[str, dict[str, Any]]:
        """The headline figures of each group, in a fixed order of camera kind, then frame kind."""
        out = {}
        for name in sorted(self.groups, key=_group_order):
            full = self.groups[name].summary(box_kind=box_kind)
            faces, rolls = full["face_accuracy_pct"], full["rolls"]
            out[name] = {
                "images": full["images"],
                "matched_dice": full["matched_dice"],
                "detection": full["detection"],
                "face_learned_of_matched_pct": faces["learned_of_matched"],
                "face_final_of_certain_pct": faces["final_of_certain"],
                "uncertain_of_matched_pct": faces["uncertain_of_matched"],
                "rolls_exact_valid_pct": rolls["exact_valid_pct"],
                "rolls_learned_exact_pct": rolls["learned_exact_pct"],
                "rolls_read_valid": rolls["read_valid"],
                "rolls_read_valid_settled_wrong": rolls["read_valid_settled_wrong"],
            }
        return out


GROUP_ORDER = ("top_down", "oblique", "still", "motion_blur")


def _group_order(name: str) -> tuple[int, ...]:
    parts = name.split("/")
    return tuple(GROUP_ORDER.index(part) if part in GROUP_ORDER else len(GROUP_ORDER) for part in parts)


def scene_group(item: LabelledImage) -> str | None:
    """A synthetic scene's group for `Tally`: its camera kind ("top_down", or "oblique" when it leans more
    than `lab.judge_eval.evaluate.OBLIQUE_TILT_DEG`, the split of `throwbox lab eval --verdicts`) and frame
    kind ("still", or "motion_blur" when the generator shook the camera by more than 1 px); None for a
    photo."""
    if item.camera is None or item.motion_blur_px is None:
        return None
    from lab.judge_eval.evaluate import camera_kind_of, frame_kind_of

    return f"{camera_kind_of(item.camera)}/{frame_kind_of(item.motion_blur_px)}"
