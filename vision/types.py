"""Frozen dataclasses that flow between the reader's stages (docs/architecture.md, "Types that flow
between stages").

Arrays are validated in `__post_init__` (shape and dtype), names carry their format (`box_xyxy`,
`top_quad`), and "nothing found" is an empty tuple, never `None`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float32]
ImageArray = NDArray[np.uint8]

FACES: tuple[int, ...] = (1, 2, 3, 4, 5, 6)


class Verdict(StrEnum):
    """What the reader concludes about a roll."""

    VALID = "valid"
    INVALID = "invalid"  # a die off the table, one die on another
    VOID = "void"  # cocked with more than one side resting: rethrow, 675a.4(c)
    NO_DECISION = "no_decision"  # the reader cannot tell; a person must look


@dataclass(frozen=True)
class Frame:
    """One image to read: (H, W, 3) uint8 BGR, with where and when it was taken."""

    image: ImageArray
    frame_id: str = ""
    table_id: str | None = None
    captured_at: datetime = field(default_factory=lambda: datetime.now(UTC))

    def __post_init__(self) -> None:
        img = self.image
        if not isinstance(img, np.ndarray) or img.dtype != np.uint8 or img.ndim != 3 or img.shape[2] != 3:
            raise ValueError(
                "Frame.image must be an (H, W, 3) uint8 BGR array, got "
                f"{getattr(img, 'shape', None)} {getattr(img, 'dtype', type(img).__name__)}"
            )
        if img.shape[0] < 1 or img.shape[1] < 1:
            raise ValueError(f"Frame.image is empty: {img.shape}")

    @property
    def resolution_wh(self) -> tuple[int, int]:
        """Image size as (width, height)."""
        return (int(self.image.shape[1]), int(self.image.shape[0]))


@dataclass(frozen=True)
class DieCandidate:
    """One die found by the detector: the whole die's box as seen, its top-face quadrilateral, a score."""

    box_xyxy: tuple[float, float, float, float]
    top_quad: tuple[tuple[float, float], ...]  # 4 corners (x, y) in px, clockwise from top-left
    score: float

    def __post_init__(self) -> None:
        x0, y0, x1, y1 = self.box_xyxy
        if not (x1 > x0 and y1 > y0):
            raise ValueError(f"box_xyxy must have x1 > x0 and y1 > y0, got {self.box_xyxy}")
        if len(self.top_quad) != 4 or any(len(p) != 2 for p in self.top_quad):
            raise ValueError(f"top_quad must be 4 (x, y) points, got {self.top_quad}")
        if not 0.0 <= self.score <= 1.0:
            raise ValueError(f"score must be in [0, 1], got {self.score}")

    @property
    def edge_px(self) -> float:
        """Mean side of the box, a rough die size in pixels."""
        x0, y0, x1, y1 = self.box_xyxy
        return ((x1 - x0) + (y1 - y0)) / 2.0


@dataclass(frozen=True)
class FaceReading:
    """The face stage's output for one die: learned probabilities and the classical pip count."""

    face_probs: tuple[float, ...]  # P(face = 1..6), sums to 1
    pip_count: int | None  # classical OpenCV count; None when it could not count
    # Whether the eight turns and mirror images of the crop read the same face as the reading (the second
    # opinion of `FaceReader.turns_check`, issue 55); None: not looked at.
    turns_agree: bool | None = None
    # A second face model trained apart (`pips_peer` in the manifest, issue 55): its most probable face and
    # that face's probability; None: no second model read.
    peer_face: int | None = None
    peer_confidence: float | None = None

    def __post_init__(self) -> None:
        if len(self.face_probs) != 6:
            raise ValueError(f"face_probs must have 6 entries, got {len(self.face_probs)}")
        if self.peer_face is not None and self.peer_face not in FACES:
            raise ValueError(f"peer_face must be 1..6 or None, got {self.peer_face}")
        if self.pip_count is not None and self.pip_count not in FACES:
            raise ValueError(f"pip_count must be 1..6 or None, got {self.pip_count}")

    @property
    def learned_face(self) -> int:
        """The learned classifier's most probable face."""
        return int(np.argmax(self.face_probs)) + 1

    @property
    def confidence(self) -> float:
        """Probability of the most probable face."""
        return float(max(self.face_probs))


@dataclass(frozen=True)
class DieReading:
    """A die with its read face. `face` is None when the die is uncertain (see `reasons`)."""

    candidate: DieCandidate
    face: int | None
    face_probs: tuple[float, ...]
    pip_count: int | None = None
    uncertain: bool = False
    reasons: tuple[str, ...] = ()
    cocked: bool = False
    stacked: bool = False
    tilt_deg: float | None = None
    layout_box: str | None = None
    # Set by the judgement stage (vision/judge): the die-state classifier's call and its probability
    # ("flat", "cocked", "wedged", "stacked", "under", "outside"; None when no state model ran), and
    # whether the die was judged off the table.
    state: str | None = None
    state_confidence: float | None = None
    off_table: bool = False
    # Second opinions kept for evaluation (issue 55; not in `as_dict`, the read's JSON contract): whether the
    # eight turns of the crop agreed (`FaceReading.turns_agree`) and whether the box looks like a whole die
    # (vision/judge/phantom.py); None where not looked at. The second face model's face and its probability
    # (`FaceReading.peer_face`); None where none read.
    turns_agree: bool | None = None
    whole_die: bool | None = None
    peer_face: int | None = None
    peer_confidence: float | None = None
    # The largest share of the box's area another box covers (vision/judge/phantom.py `overlaps`).
    overlap: float | None = None

    def __post_init__(self) -> None:
        if self.face is not None and self.face not in FACES:
            raise ValueError(f"face must be 1..6 or None, got {self.face}")
        if len(self.face_probs) != 6:
            raise ValueError(f"face_probs must have 6 entries, got {len(self.face_probs)}")
        if self.face is None and not self.uncertain:
            raise ValueError("a die without a face must be marked uncertain")

    @property
    def confidence(self) -> float:
        """Probability the learned classifier gives its most probable face."""
        return float(max(self.face_probs))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form (the "dice" entries of docs/architecture.md's read document)."""
        return {
            "face": self.face,
            "confidence": round(self.confidence, 4),
            "face_probs": [round(p, 4) for p in self.face_probs],
            "pip_count": self.pip_count,
            "uncertain": self.uncertain,
            "reasons": list(self.reasons),
            "box_xyxy": [round(v, 1) for v in self.candidate.box_xyxy],
            "top_quad": [[round(x, 1), round(y, 1)] for x, y in self.candidate.top_quad],
            "detection_score": round(self.candidate.score, 4),
            "cocked": self.cocked,
            "stacked": self.stacked,
            "layout_box": self.layout_box,
            "tilt_deg": None if self.tilt_deg is None else round(self.tilt_deg, 1),
            "state": self.state,
            "state_confidence": None if self.state_confidence is None else round(self.state_confidence, 4),
            "off_table": self.off_table,
        }


class FindingReason(StrEnum):
    """Why a finding was made: the machine-readable reason of a `Finding` (it serialises as its value)."""

    DIE_OFF_TABLE = "die_off_table"
    EXTRA_DICE = "extra_dice"
    DIE_ON_DIE = "die_on_die"
    COCKED_MULTI_SIDE = "cocked_multi_side"  # void
    COCKED_UNCLEAR = "cocked_unclear"
    COCKED_READ_BY_RULE = "cocked_read_by_rule"  # valid
    STACKED_UNCLEAR = "stacked_unclear"
    STACKED_RULED_OUT = "stacked_ruled_out"  # valid
    OBJECT_UNCLEAR = "object_unclear"
    STATE_UNCERTAIN = "state_uncertain"
    FACE_UNCERTAIN = "face_uncertain"
    COUNT_MISMATCH = "count_mismatch"
    NO_DICE = "no_dice"
    # A table's camera moved since its calibration; of the frame, no die.
    CAMERA_MOVED = "camera_moved"
    # The frame washed out, too dark or too grainy: the roll goes to a person whatever else is found; of the
    # frame, no die.
    FRAME_EXPOSURE = "frame_exposure"
    # Valid: a grainy frame was smoothed before it was read; of the frame, no die.
    FRAME_SMOOTHED = "frame_smoothed"


@dataclass(frozen=True)
class Finding:
    """One judgement about the roll: what it makes the verdict, a machine-readable reason, the dice concerned.

    `reason`: a `FindingReason`. `die_ids` are 1-based positions in
    `Roll.dice` (the numbers on the annotated frame); empty when the finding concerns no die found.
    `detail` is the human sentence that `Roll.reasons` lists.
    """

    verdict: Verdict
    reason: FindingReason
    die_ids: tuple[int, ...]
    detail: str

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "verdict": self.verdict.value,
            "reason": str(self.reason),
            "dice": list(self.die_ids),
            "detail": self.detail,
        }


SetAsideReason = Literal["no_die", "calibration_marker", "table_mark", "table_no_die"]
P_NO_DIE_REASONS = ("no_die", "table_no_die")  # the reasons whose figure is a probability of no die
SET_ASIDE_REASONS: tuple[str, ...] = get_args(SetAsideReason)


@dataclass(frozen=True)
class SetAside:
    """A detection left out of the count, and why (`reason`):
    - "no_die": the die-state classifier sees no die there (a chip stack, a chip's edge;
      vision/judge/validity.py);
    - "calibration_marker": it lies on one of the table's corner markers, found whole
      (vision/table/markers.py);
    - "table_mark": it is print the detector found on the empty box at calibration, and the frame still
      looks like the empty box there (vision/table/marks.py);
    - "table_no_die": the table's no-die filter, learned from the boxes its people struck out, calls it no
      die (vision/table/no_die.py), and the frame has more boxes than the game's dice.
    Kept in the result and drawn on the evidence frame, so a person can check that no die was left out."""

    box_xyxy: tuple[float, float, float, float]
    score: float  # the detector's
    # The probability of "no die": the die-state classifier's ("no_die") or the table's filter's
    # ("table_no_die"); None for the other reasons.
    p_no_die: float | None
    reason: SetAsideReason = "no_die"
    marker_id: int | None = None  # the ArUco id, for reason "calibration_marker"
    # The frame's correlation with the empty box there: always for "table_mark"; for "calibration_marker"
    # when the calibration kept the marker's look (None: it did not, a calibration from before 2026-12-02).
    likeness: float | None = None

    def __post_init__(self) -> None:
        if self.reason not in SET_ASIDE_REASONS:
            raise ValueError(f"reason must be one of {SET_ASIDE_REASONS}, got {self.reason!r}")
        if (self.reason == "calibration_marker") != (self.marker_id is not None):
            raise ValueError("a marker id goes with reason 'calibration_marker', and only with it")
        if (self.reason in P_NO_DIE_REASONS) != (self.p_no_die is not None):
            raise ValueError("p_no_die goes with reasons 'no_die' and 'table_no_die', and only with them")
        if self.reason == "table_mark" and self.likeness is None:
            raise ValueError("a table mark set aside needs its likeness to the empty box")
        if self.reason in P_NO_DIE_REASONS and self.likeness is not None:
            raise ValueError("a likeness goes with a marker or a table mark, not with reason 'no_die'")

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return {
            "box_xyxy": [round(v, 1) for v in self.box_xyxy],
            "score": round(self.score, 3),
            "p_no_die": None if self.p_no_die is None else round(self.p_no_die, 3),
            "reason": self.reason,
            "marker_id": self.marker_id,
            "likeness": None if self.likeness is None else round(self.likeness, 4),
        }

    @property
    def what(self) -> str:
        """What it was taken for, in a few words: "no die", "marker 2", "table mark"."""
        if self.reason == "calibration_marker":
            return f"marker {self.marker_id}"
        return self.reason.replace("_", " ")

    @property
    def label(self) -> str:
        """`what` with its figure, for the evidence frame and the console."""
        figure = self.p_no_die if self.reason in P_NO_DIE_REASONS else self.likeness
        return self.what if figure is None else f"{self.what} {figure:.2f}"


@dataclass(frozen=True)
class Sifted:
    """Detections and weak peaks once those that are part of the table (markers, table marks) are taken out.

    `set_aside`: the detections taken out (they go into `Roll.set_aside`); `peaks_set_aside`: the weak peaks
    taken out, in the same form (they are not reported, but a short count asks whether a die may lie there).
    """

    candidates: tuple[DieCandidate, ...]
    weak_peaks: tuple[DieCandidate, ...]
    set_aside: tuple[SetAside, ...] = ()
    peaks_set_aside: tuple[SetAside, ...] = ()

    @classmethod
    def by(
        cls,
        candidates: Sequence[DieCandidate],
        weak_peaks: Sequence[DieCandidate],
        aside_of: Callable[[DieCandidate], SetAside | None],
    ) -> Sifted:
        """Sift both: `aside_of` says why a detection is set aside, or None to keep it."""

        def split(found: Sequence[DieCandidate]) -> tuple[tuple[DieCandidate, ...], tuple[SetAside, ...]]:
            looked = [(c, aside_of(c)) for c in found]
            return tuple(c for c, a in looked if a is None), tuple(a for _, a in looked if a is not None)

        kept, aside = split(candidates)
        peaks, peaks_aside = split(weak_peaks)
        return cls(kept, peaks, aside, peaks_aside)


@dataclass(frozen=True)
class FrameExposure:
    """The measures of a frame's exposure and grain (`vision.judge.exposure.measure_exposure`)."""

    clipped_share: float  # of its pixels at grey CLIPPED_GREY or more, 0..1
    bright_level: int  # the grey level under which 99 % of its pixels lie (0..255)
    # Its sensor noise's standard deviation in grey levels, estimated (at most 63.01: the measure saturates
    # there); None: not measured (`measure_exposure(noise=False)`).
    noise_level: float | None = None


@dataclass(frozen=True)
class LayoutSplit:
    """Where the reader found the dice of a frame: in which labelled layout box (Ace..Two, 593.1(b)(4)), or
    in the throw area (no box); indices into `Roll.dice`. Set from each die's `layout_box` (a table's
    calibration places them; uncalibrated, every die is in the throw area)."""

    boxes: dict[str, tuple[int, ...]]  # label -> the dice in that box, in `Roll.dice` order
    throw_area: tuple[int, ...]

    @classmethod
    def of(cls, dice: Sequence[DieReading]) -> LayoutSplit:
        """The split of `dice` by their `layout_box`."""
        boxes: dict[str, list[int]] = {}
        for i, d in enumerate(dice):
            if d.layout_box is not None:
                boxes.setdefault(d.layout_box, []).append(i)
        return cls(
            boxes={label: tuple(ids) for label, ids in boxes.items()},
            throw_area=tuple(i for i, d in enumerate(dice) if d.layout_box is None),
        )

    def in_box(self, label: str) -> tuple[int, ...]:
        """The dice in the box labelled `label` (none: an empty tuple)."""
        return self.boxes.get(label, ())

    def outside(self, label: str) -> tuple[int, ...]:
        """The dice in a layout box other than `label`'s, in `Roll.dice` order."""
        return tuple(sorted(i for other, ids in self.boxes.items() if other != label for i in ids))


@dataclass(frozen=True)
class Roll:
    """The result of reading one frame, with everything needed to audit it."""

    dice: tuple[DieReading, ...]
    verdict: Verdict
    reasons: tuple[str, ...]
    expected_dice: int | None
    faces: tuple[int, ...]  # read faces of the certain dice, left to right
    frame_id: str
    table_id: str | None
    models: dict[str, str]
    # Per stage, ms: "detect" (the detector and the table's look at the frame), "faces" (the face models and
    # pip counts; since 2026-12-03 after the die-state model), "judge" (the die-state model with its second
    # look for a wedged die, and the judge's rules), "total".
    timing_ms: dict[str, float]
    findings: tuple[Finding, ...] = ()  # the judgement's reasons with the dice they concern
    set_aside: tuple[SetAside, ...] = ()  # detections left out of the count, with why (`SetAside`)
    # The frame's exposure and grain as the reader measured them (None: a roll no reader made, e.g. keyed):
    # the live loop's camera alerts read them here rather than measure the frame again.
    exposure: FrameExposure | None = None

    @property
    def layout_split(self) -> LayoutSplit:
        """Where the dice lie: the layout boxes and the throw area (an Extra Roll's kept and thrown dice)."""
        return LayoutSplit.of(self.dice)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready form: the contract of `throwbox read --json` and `POST /v1/reads` but for the Pip Street
        winner and Like Kind count, which the api adds from the rules engine (`api.read_document`)."""
        return {
            "verdict": self.verdict.value,
            "reasons": list(self.reasons),
            "expected_dice": self.expected_dice,
            "dice": [d.as_dict() for d in self.dice],
            "faces": list(self.faces),
            "frame_id": self.frame_id,
            "table_id": self.table_id,
            "timing_ms": {k: round(v, 2) for k, v in self.timing_ms.items()},
            "models": dict(self.models),
            "findings": [f.as_dict() for f in self.findings],
            "set_aside": [a.as_dict() for a in self.set_aside],
        }
