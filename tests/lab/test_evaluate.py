"""Scoring: IoU, one-to-one matching, and the tallies behind `throwbox lab eval`."""

from __future__ import annotations

import numpy as np
import pytest

from lab.evaluate import Tally, iou_matrix, match


def _b(*rows: tuple[float, float, float, float]) -> np.ndarray:
    return np.asarray(rows, np.float32).reshape(-1, 4)


@pytest.mark.parametrize(
    ("a", "b", "iou"),
    [
        ((0, 0, 10, 10), (0, 0, 10, 10), 1.0),  # identical
        ((0, 0, 10, 10), (5, 0, 15, 10), 50 / 150),  # half overlap
        ((0, 0, 10, 10), (20, 20, 30, 30), 0.0),  # apart
        ((0, 0, 10, 10), (2, 2, 8, 8), 36 / 100),  # nested
    ],
)
def test_iou(a: tuple[float, ...], b: tuple[float, ...], iou: float) -> None:
    assert iou_matrix(_b(a), _b(b))[0, 0] == pytest.approx(iou, abs=1e-6)  # type: ignore[arg-type]


def test_match_is_one_to_one_and_by_score() -> None:
    gt = _b((0, 0, 10, 10))
    pred = _b((0, 0, 10, 10), (1, 0, 11, 10))  # two detections of one die
    pairs = match(pred, np.array([0.6, 0.9], np.float32), gt)
    assert pairs == [(1, 0)]  # the higher score takes it; the other is a false positive


def test_match_needs_iou_half() -> None:
    assert match(_b((0, 0, 10, 10)), np.ones(1, np.float32), _b((6, 0, 16, 10))) == []


def test_top_face_labels_match_by_centre() -> None:
    pred = _b((0, 0, 20, 20))
    gt = _b((4, 2, 14, 12))  # a top-face box inside the die's box
    assert match(pred, np.ones(1, np.float32), gt, box_kind="top") == [(0, 0)]


def test_tally_counts_misses_false_dice_and_exact_rolls() -> None:
    t = Tally()
    gt = _b((0, 0, 10, 10), (20, 0, 30, 10))
    common = {"gt_xyxy": gt, "gt_faces": np.array([3, 5]), "latency_ms": 5.0, "box_kind": "die"}
    t.add_image(name="a", pred_xyxy=gt, pred_score=np.ones(2, np.float32), pred_face=[3, 5],
                learned_face=[3, 5], pip_count=[3, None], verdict="valid", **common)  # fmt: skip
    t.add_image(name="b", pred_xyxy=_b((0, 0, 10, 10), (50, 50, 60, 60)), pred_score=np.ones(2, np.float32),
                pred_face=[None, 2], learned_face=[4, 2], pip_count=[3, 2], verdict="no_decision",
                **common)  # fmt: skip
    s = t.summary(box_kind="die")
    assert s["detection"] == {"recall_pct": 75.0, "precision_pct": 75.0}
    assert s["face_accuracy_pct"]["learned_of_matched"] == pytest.approx(66.67)
    assert s["face_accuracy_pct"]["uncertain_of_matched"] == pytest.approx(33.33)
    assert s["rolls"]["exact_valid_pct"] == 50.0
    assert s["confusion_gt_rows_read_cols_1_to_6_and_uncertain"][2][6] == 1  # a 3 left uncertain
    assert s["failures"][0]["image"] == "b"
    assert "by_camera_and_frame" not in s  # no image was given a group


def test_tally_counts_the_rolls_read_valid_that_settle_wrong() -> None:
    """A valid roll whose faces differ from the labels (as a multiset) would pay wrong; one read exactly, or
    left to a person, or with the same faces in another order, does not."""
    t = Tally()
    gt = _b((0, 0, 10, 10), (20, 0, 30, 10))
    common = {"gt_xyxy": gt, "gt_faces": np.array([3, 5]), "latency_ms": 5.0, "box_kind": "die",
              "pred_score": np.ones(2, np.float32), "pip_count": [None, None]}  # fmt: skip
    swapped = _b((20, 0, 30, 10), (0, 0, 10, 10))
    t.add_image(name="exact", pred_xyxy=swapped, pred_face=[5, 3], learned_face=[5, 3], verdict="valid",
                group="top_down/still", **common)  # fmt: skip
    t.add_image(name="pays-wrong", pred_xyxy=gt, pred_face=[3, 6], learned_face=[3, 6], verdict="valid",
                group="top_down/still", **common)  # fmt: skip
    t.add_image(name="to-a-person", pred_xyxy=gt, pred_face=[3, None], learned_face=[3, 6],
                verdict="no_decision", group="oblique/still", **common)  # fmt: skip
    rolls = t.summary(box_kind="die")["rolls"]
    assert (rolls["read_valid"], rolls["read_valid_settled_wrong"]) == (2, 1)
    assert rolls["settled_wrong_images"] == ["pays-wrong"]
    groups = t.summary(box_kind="die")["by_camera_and_frame"]
    assert groups["top_down/still"]["rolls_read_valid_settled_wrong"] == 1
    assert groups["oblique/still"]["rolls_read_valid"] == 0


def test_tally_splits_its_figures_by_group_and_keeps_the_whole() -> None:
    t = Tally()
    gt = _b((0, 0, 10, 10), (20, 0, 30, 10))
    common = {"gt_xyxy": gt, "gt_faces": np.array([3, 5]), "latency_ms": 5.0, "box_kind": "die",
              "pred_xyxy": gt, "pred_score": np.ones(2, np.float32)}  # fmt: skip
    t.add_image(name="still", pred_face=[3, 5], learned_face=[3, 5], pip_count=[None, None], verdict="valid",
                group="top_down/still", **common)  # fmt: skip
    t.add_image(name="shaken", pred_face=[None, 5], learned_face=[4, 5], pip_count=[None, None],
                verdict="no_decision", group="top_down/motion_blur", **common)  # fmt: skip
    t.add_image(name="tilted", pred_face=[3, 5], learned_face=[3, 5], pip_count=[None, None], verdict="valid",
                group="oblique/still", **common)  # fmt: skip
    s = t.summary(box_kind="die")
    assert s["images"] == 3 and s["face_accuracy_pct"]["learned_of_matched"] == pytest.approx(83.33)
    groups = s["by_camera_and_frame"]
    assert list(groups) == ["top_down/still", "top_down/motion_blur", "oblique/still"]  # cameras, then frames
    assert groups["top_down/still"]["face_learned_of_matched_pct"] == 100.0
    assert groups["top_down/still"]["rolls_exact_valid_pct"] == 100.0
    shaken = groups["top_down/motion_blur"]
    assert shaken["images"] == 1 and shaken["face_learned_of_matched_pct"] == 50.0
    assert shaken["uncertain_of_matched_pct"] == 50.0 and shaken["rolls_exact_valid_pct"] == 0.0
