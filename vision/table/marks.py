"""Table marks: find what the detector takes for a die on the empty box, and set it aside at read time.

The stored form and the comparison are `calibration.marks` (see there for why). Here:
- `find_table_marks`: at calibration, every detection on the empty-box frames, and every weak peak of at
  least `MARK_MIN_SCORE`, is a mark, kept with the empty box's look around it;
- `set_marks_aside`: at read time, a detection (or weak peak) whose box overlaps a mark's by
  `MARK_MIN_IOU` while the frame there looks like the empty box (`JudgeConfig.min_mark_likeness`) is the
  mark: left out of the count and listed under `set_aside` with reason "table_mark".

A die lying on a mark, or beside it within its window, changes the look there and is counted. The only
failure is the safe one: a mark not recognised (the light changed its shadows, the camera was nudged) is
counted as a die, and an over count is `no_decision` for a person.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from calibration.images import to_gray
from calibration.marks import TableMark, likeness, make_mark
from vision.detect.centernet import box_iou
from vision.detect.detector import DieDetector
from vision.types import DieCandidate, ImageArray, SetAside, Sifted

# A detection is on a mark when their boxes overlap this much (intersection over union): the detector
# boxes the same print the same way give or take a pixel or two; a die beside the print is boxed apart.
MARK_MIN_IOU = 0.5
# The detector's peaks on the empty box kept as marks: from this score up, under the judge's weak-peak floor
# (0.25), because print near the detector's threshold scores higher once dice lie on the table: the "e" of
# the selftest's "Five" peaks at 0.23-0.24 on the empty box under the selftest's three lights and over 0.35
# in frames with dice (`python -m lab.marker_reads`, 2026-12-02 17:50 UTC). A mark costs nothing where
# it is not: a detection is set aside on it only while the frame there looks like the empty box.
MARK_MIN_SCORE = 0.15


def find_table_marks(
    detector: DieDetector,
    empty_frames: Sequence[ImageArray],
    *,
    weak_score: float,
    marker_corners_px: Mapping[int, Sequence[Sequence[float]]] | None = None,
    layout_boxes_px: Mapping[int, Sequence[float]] | None = None,
) -> tuple[TableMark, ...]:
    """The marks on empty-box frames: their detections and weak peaks of at least `weak_score`, and the
    look of each corner marker (`marker_corners_px`, the calibration's reference quads) on the first frame.

    Print near the detector's threshold is boxed in one frame and not the next, so every frame is looked
    at; a mark found again (`MARK_MIN_IOU`) is kept once, with the look of the frame that found it first.
    A marker's look lets the reader tell a marker from a see-through die lying over it
    (vision/table/markers.py).
    `layout_boxes_px` (face -> xyxy of each printed layout box in the frame) adds each box's look: the
    detector is weakest on print, and a change there with no die found is where a missed die may lie.
    """
    marks: list[TableMark] = []
    for frame in empty_frames:
        candidates, weak = detector.detect_with_weak(frame, weak_score=weak_score, coarse=False)
        for c in (*candidates, *weak):
            box = np.asarray(c.box_xyxy, np.float32)
            if any(box_iou(box, np.asarray(m.box_xyxy, np.float32)) >= MARK_MIN_IOU for m in marks):
                continue
            marks.append(make_mark(frame, box_xyxy=c.box_xyxy, score=c.score))
    if empty_frames:
        for marker_id, quad in sorted((marker_corners_px or {}).items()):
            q = np.asarray(quad, np.float64).reshape(-1, 2)
            quad_box = (
                float(q[:, 0].min()),
                float(q[:, 1].min()),
                float(q[:, 0].max()),
                float(q[:, 1].max()),
            )
            marks.append(make_mark(empty_frames[0], box_xyxy=quad_box, score=None, marker_id=marker_id))
        for face, printed in sorted((layout_boxes_px or {}).items()):
            marks.append(make_mark(empty_frames[0], box_xyxy=printed, score=None, layout_face=face))
    return tuple(marks)


def mark_under(
    image: ImageArray, box_xyxy: Sequence[float], marks: Sequence[TableMark], *, min_likeness: float
) -> tuple[TableMark, float] | None:
    """The mark a detection is, with the frame's likeness to the empty box there, or None."""
    best: tuple[TableMark, float] | None = None
    for mark in marks:
        if mark.layout_face is not None:
            continue  # a whole printed box: watched for a change, never taken for a die
        if box_iou(np.asarray(box_xyxy, np.float32), np.asarray(mark.box_xyxy, np.float32)) < MARK_MIN_IOU:
            continue
        like = likeness(image, mark)
        if like >= min_likeness and (best is None or like > best[1]):
            best = (mark, like)
    return best


def set_marks_aside(
    candidates: Sequence[DieCandidate],
    weak_peaks: Sequence[DieCandidate],
    *,
    image: ImageArray,
    marks: Sequence[TableMark],
    min_likeness: float,
) -> Sifted:
    """Candidates and weak peaks with those that are table marks taken out (each with its likeness)."""

    def aside_of(cand: DieCandidate) -> SetAside | None:
        hit = mark_under(image, cand.box_xyxy, marks, min_likeness=min_likeness)
        if hit is None:
            return None
        return SetAside(
            box_xyxy=cand.box_xyxy, score=cand.score, p_no_die=None, reason="table_mark", likeness=hit[1]
        )

    return Sifted.by(candidates, weak_peaks, aside_of)


def changed_marks(
    image: ImageArray,
    marks: Sequence[TableMark],
    dice: Sequence[DieCandidate],
    *,
    sure: float,
    known: Sequence[SetAside] = (),
) -> tuple[SetAside, ...]:
    """Marks the frame no longer surely shows as the empty box did, the dice found left out of both looks:
    where a die the detector missed may lie (the detector is weakest on print: a die on a layout label's
    letters may give no box at all). In the form of a set-aside, for the judge's short count
    (`unsure_set_aside`); `score` is the mark's own (0 for a look). Marks whose place is already among
    `known` (set aside there) are left out, so one place is named once."""
    gray = to_gray(image, name="frame")  # once per frame, not once per mark
    found = [d.box_xyxy for d in dice]
    out: list[SetAside] = []
    for mark in marks:
        box = np.asarray(mark.box_xyxy, np.float32)
        if any(box_iou(box, np.asarray(k.box_xyxy, np.float32)) >= MARK_MIN_IOU for k in known):
            continue
        like = likeness(gray, mark, ignore_xyxy=found)
        if like < sure:
            out.append(
                SetAside(
                    box_xyxy=mark.box_xyxy,
                    score=mark.score or 0.0,
                    p_no_die=None,
                    reason="calibration_marker" if mark.marker_id is not None else "table_mark",
                    marker_id=mark.marker_id,
                    likeness=like,
                )
            )
    return tuple(out)
