"""Settle detection: one "at rest" event per throw, when the dice have been still long enough.

Per frame (downscaled to `work_width_px`, blurred), three masks inside the throw box:

- foreground: what differs from the empty-box model (a temporal median of the first frames of the empty box,
  or an empty-box image given by the caller; updated slowly on felt pixels while the box is still);
- motion: what changed since the previous frame;
- drift: what changed since the first frame of the current still run (the "anchor"), which catches dice
  creeping too slowly for frame-to-frame differences.

The states, and what moves between them::

    UNKNOWN --(still)--> EMPTY / AT_REST        start, or after the camera was lost: nothing is armed
    EMPTY / AT_REST --(motion)--> MOVING --(still for still_s)--> AT_REST (or EMPTY: all dice off the table)
    any --(hand, stick or shaker in the box)--> OBSTRUCTED

A settle becomes an `AtRest` event (take the read) only when the episode is a throw: something came in
over the box edge (the shaker, an arm, dice crossing it) and then the dice were seen moving freely, with no
intruder in the box, for `min_free_motion_s` after the last intruder left. An intruder is a foreground
blob that touches the box edge and covers more than `intrusion_edge_fraction` of the box (an arm reaching
in, the dealer's stick, the shaker over the box), or any blob larger than `intrusion_any_fraction`.
Motion in or next to blobs touching the edge is never free motion, so an arm sliding out does not arm a
read. So:

- the shaker dumping dice and leaving: free rolling follows -> one read;
- a hand or the stick moving or collecting dice: the dice stop when it lets go, nothing rolls freely
  afterwards -> `SettledWithoutThrow` (evidence for the layout-box check), never a read;
- motion that never settles (a hand hovering, dice shuffled on the felt) -> no still period -> no event;
  if it does stop, nothing came in over the edge first -> `SettledWithoutThrow`, not a read;
- a camera loss (`reset`), or frames more than `max_frame_gap_s` apart, disarms the detector: a roll it
  did not see settle is never read;
- a cut to another recording (`new_clip`, the demo playing `datasets/synth` clips) takes the clip's first
  frame as the empty-box reference and counts the throw as started.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

import cv2
import numpy as np
from numpy.typing import NDArray

from vision.capture import CapturedFrame, CaptureEvent, ClipStarted, SourceLost

if TYPE_CHECKING:
    from calibration.table import TableCalibration

ImageArray = NDArray[np.uint8]
MaskArray = NDArray[np.uint8]


@dataclass(frozen=True)
class SettleConfig:
    """Every threshold of the settle detector. Pixel counts are at the working resolution.

    Defaults were tuned on the built-in demo scene (`vision.demo_scene`, 640x480, 24 px dice) and on
    MJPEG-compressed video of it; a real table should check them with `throwbox watch` first.
    """

    still_s: float = 0.3  # the dice must be still this long before the read (issue 8: "about 0.3 s")
    min_still_frames: int = 3  # ...and over at least this many frames (low frame rates)
    work_width_px: int = 480  # frames wider than this are downscaled first (speed, noise)
    blur_px: int = 5  # Gaussian kernel (odd) applied before any difference
    motion_threshold: int = 20  # per-channel change (0-255) that marks a pixel as changed
    drift_threshold: int = 40  # the same against the still run's anchor: a die that crept is a strong
    # change, while video codecs keep refining a still picture for a few frames in weak ones (mp4v)
    foreground_threshold: int = 40  # per-channel difference from the empty box that marks "not felt"
    still_max_changed_px: int = 16  # changed pixels tolerated while "still" (noise, video compression)
    min_object_px: int = 10  # smaller foreground blobs are ignored (lint, noise)
    intrusion_edge_fraction: float = 0.006  # edge-touching blob bigger than this share of the box: intruder
    intrusion_any_fraction: float = 0.05  # any blob bigger than this share of the box: intruder
    edge_guard_px: int = 6  # motion this close to an edge-touching blob is not free motion
    min_free_motion_s: float = 0.1  # free dice motion that makes an episode a throw
    intruder_hold_s: float = 0.1  # motion this soon after an intruder was last seen is not free motion
    max_frame_gap_s: float = 0.25  # a longer gap between frames resets the detector (cameras >= 5 fps)
    background_frames: int = 8  # still frames of the empty box that build the model at start
    background_alpha: float = 0.02  # learning rate of the model on felt pixels while the box is still

    def __post_init__(self) -> None:
        if self.still_s <= 0:
            raise ValueError(f"still_s must be positive, got {self.still_s}")
        if self.min_still_frames < 2:
            raise ValueError(f"min_still_frames must be at least 2, got {self.min_still_frames}")
        if self.work_width_px < 64:
            raise ValueError(f"work_width_px must be at least 64, got {self.work_width_px}")
        if self.blur_px < 1 or self.blur_px % 2 == 0:
            raise ValueError(f"blur_px must be odd and positive, got {self.blur_px}")
        for name in ("motion_threshold", "drift_threshold", "foreground_threshold"):
            if not 1 <= getattr(self, name) <= 254:
                raise ValueError(f"{name} must be in 1..254, got {getattr(self, name)}")
        for name in ("intrusion_edge_fraction", "intrusion_any_fraction"):
            if not 0.0 < getattr(self, name) < 1.0:
                raise ValueError(f"{name} must be in (0, 1), got {getattr(self, name)}")
        if self.background_frames < 1:
            raise ValueError(f"background_frames must be at least 1, got {self.background_frames}")
        if not 0.0 <= self.background_alpha < 1.0:
            raise ValueError(f"background_alpha must be in [0, 1), got {self.background_alpha}")
        if min(self.still_max_changed_px, self.min_object_px, self.edge_guard_px) < 0:
            raise ValueError("pixel counts must not be negative")
        if self.min_free_motion_s < 0 or self.intruder_hold_s < 0 or self.max_frame_gap_s <= 0:
            raise ValueError("min_free_motion_s, intruder_hold_s must be >= 0 and max_frame_gap_s > 0")


class SettleState(StrEnum):
    """What the detector believes the box holds."""

    LEARNING = "learning"  # building the empty-box model from the first frames
    UNKNOWN = "unknown"  # no settled view yet since the start or since the camera was lost
    EMPTY = "empty"  # still, nothing on the felt
    MOVING = "moving"  # something moves (dice rolling)
    OBSTRUCTED = "obstructed"  # a hand, the stick or the shaker is in the box
    AT_REST = "at_rest"  # still, with objects on the felt


@dataclass(frozen=True)
class AtRest:
    """The dice of a throw have come to rest: read `frame` (one event per throw)."""

    frame: CapturedFrame
    throw_index: int  # counts the throws this detector has seen, from 0
    moving_since_s: float  # monotonic time free dice motion was first seen in this episode
    still_since_s: float  # monotonic time of the first frame of the still run (about when the dice stopped)

    @property
    def detected_s(self) -> float:
        """Monotonic time of the evidence frame, when the event fired."""
        return self.frame.monotonic_s


@dataclass(frozen=True)
class SettledWithoutThrow:
    """The box is still again after motion that was not a throw (a hand, the stick, a bump); never a read.

    `frame` is evidence of where the dice were left (e.g. the winning dice in their layout box).
    """

    frame: CapturedFrame
    still_since_s: float
    intruder_seen: bool  # a hand, the stick or the shaker was in the box during the episode
    empty: bool  # nothing left on the felt


@dataclass(frozen=True)
class StateChanged:
    """The detector's state changed on frame `frame_id`."""

    previous: SettleState
    current: SettleState
    frame_id: str
    at_s: float


SettleEvent = AtRest | SettledWithoutThrow | StateChanged


@dataclass(frozen=True)
class FrameAnalysis:
    """What the detector measured on one frame (for logs, tuning and tests)."""

    changed_px: int  # vs the previous frame
    drift_px: int  # vs the anchor of the still run
    free_motion_px: int  # changed pixels away from edge-touching blobs
    foreground_px: int
    objects: int  # foreground blobs of at least `min_object_px`
    intruder: bool
    largest_edge_blob_px: int


class SettleDetector:
    """Feed it frames in order with `update`; it returns the events each frame causes.

    Args:
        config: thresholds.
        roi_xy: the throw box's inner outline as (n, 2) pixel points in the full frame; default the frame.
        empty_box: an image of the empty box (e.g. from calibration); default: learn it from the first
            `background_frames` still frames, which must show the empty box.
    """

    def __init__(
        self,
        config: SettleConfig | None = None,
        *,
        roi_xy: NDArray[np.floating] | None = None,
        empty_box: ImageArray | None = None,
    ) -> None:
        self.config = config or SettleConfig()
        self._roi_xy = None if roi_xy is None else np.asarray(roi_xy, dtype=np.float64).reshape(-1, 2)
        if self._roi_xy is not None and self._roi_xy.shape[0] < 3:
            raise ValueError("roi_xy needs at least 3 points")
        self._empty_box = empty_box
        self._size_wh: tuple[int, int] | None = None  # full frame size the masks were built for
        self._required_wh: tuple[int, int] | None = None  # a calibrated table's resolution
        self._scale = 1.0
        self._roi: MaskArray | None = None
        self._edge_band: MaskArray | None = None
        self._roi_area = 1
        self._background: NDArray[np.float32] | None = None
        self._learn: list[ImageArray] = []
        self.state = SettleState.LEARNING
        self.throws = 0
        self.last: FrameAnalysis | None = None
        self._prev: ImageArray | None = None
        self._prev_s = 0.0
        self._prev_edge: MaskArray | None = None
        self._intruder_s = -np.inf  # monotonic time an intruder was last seen
        self._trusted = True  # the empty-box model is learnt from a still box
        self._reference_next = False  # the next frame becomes the empty-box model (a new clip)
        self._armed = False  # free dice motion seen: the next settle is a throw's
        self._handled = False  # an intruder worked in the box during this episode
        self._entered = False  # something came in over the box edge during this episode
        self._edge_px_at_settle = 0  # edge-touching foreground at the last settle (dice against the wall)
        self._active = False  # anything moved since the last settle
        self._settled = False  # the current still run already produced its settle
        self._free_motion_s = 0.0
        self._moving_since_s: float | None = None
        self._anchor: ImageArray | None = None
        self._still_since_s = 0.0
        self._still_frames = 0

    @classmethod
    def for_table(
        cls,
        calibration: TableCalibration,
        config: SettleConfig | None = None,
        *,
        empty_box: ImageArray | None = None,
    ) -> SettleDetector:
        """A detector limited to a calibrated table's throw box (its inner outline, projected to pixels).

        Frames must have the calibration's resolution (a `ValueError` on the first frame otherwise).
        """
        from calibration.table import box_outline_mm

        outline_px = calibration.mm_to_pixel(box_outline_mm(calibration.layout))
        detector = cls(config, roi_xy=outline_px, empty_box=empty_box)
        detector._required_wh = calibration.resolution_wh
        return detector

    # ------------------------------------------------------------------------------------------ public
    def throw_started(self) -> None:
        """Tell the detector a throw has begun, so its entry over the box edge need not be seen.

        For a signal from outside the picture (a dealer's button, a shaker sensor) or a recording that
        starts at the release (the synthetic throw clips of `datasets/synth`). The dice must still be seen
        rolling freely for `min_free_motion_s` and then still for `still_s` before the read.
        """
        self._entered = True

    def new_clip(self) -> None:
        """The picture cut to another recording that starts at a throw's release (`ClipStarted`).

        The camera, light and felt may all differ, and there is no empty box to learn from: the clip's
        first frame becomes the empty-box reference and the throw counts as started (`throw_started`).
        Dice at rest in that first frame (the Extra Roll's kept dice) are part of the reference.
        """
        self.reset()
        self._size_wh = None  # the new clip may have another size
        self._empty_box = None
        self._background = None
        self._learn = []
        self._reference_next = True
        self.state = SettleState.LEARNING

    def reset(self) -> None:
        """Forget the frame history (call it on `SourceLost`): nothing is read until a new throw is seen.

        A throw is read only if the detector saw the box settled before it: after a reset, the first
        settle (whatever happened while the camera was away) is never a read.
        """
        self._trusted = False
        self._prev = None
        self._prev_edge = None
        self._learn = []  # a half-learnt empty-box model must come from one unbroken still run
        self._reset_episode()
        if self._background is not None:
            self.state = SettleState.UNKNOWN

    def update(self, frame: CapturedFrame) -> list[SettleEvent]:
        """Analyse one frame; return the events it causes (usually none)."""
        work = self._prepare(frame)
        t = frame.monotonic_s
        if self._prev is not None and t <= self._prev_s:
            raise ValueError(
                f"frame {frame.frame_id} is not later than the previous frame ({t} <= {self._prev_s})"
            )
        if self._background is None and self._reference_next:
            self._reference_next = False
            self._background = work.astype(np.float32)
            self._trusted = True
            self._entered = True
            self.state = SettleState.UNKNOWN
            self._prev, self._prev_s = work, t
            return [StateChanged(SettleState.LEARNING, SettleState.UNKNOWN, frame_id=frame.frame_id, at_s=t)]
        if self._background is None:
            return self._learn_background(work, frame)
        events: list[SettleEvent] = []
        cfg = self.config
        roi = self._mask()
        gap = self._prev is None or t - self._prev_s > cfg.max_frame_gap_s
        if self._prev is not None and gap:
            self.reset()  # frames went missing: what happened meanwhile is unknown, as after a camera loss
        dt = 0.0 if gap else t - self._prev_s

        fg, keep, edge_mask, largest_edge, intruder = self._foreground(work, roi, background=self._background)

        if gap or self._prev is None:
            changed = np.zeros_like(fg)
        else:
            changed = self._threshold(work, self._prev, cfg.motion_threshold) & roi
        changed_px = int(np.count_nonzero(changed))
        guard = edge_mask if self._prev_edge is None or gap else cv2.bitwise_or(edge_mask, self._prev_edge)
        if cfg.edge_guard_px > 0 and np.any(guard):
            k = 2 * cfg.edge_guard_px + 1
            guard = cv2.dilate(guard, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
        free_px = int(np.count_nonzero(cv2.bitwise_and(changed, cv2.bitwise_not(guard))))

        # The still run: restart it whenever the picture drifted from its anchor, or after a gap.
        if self._anchor is None or gap:
            self._start_still_run(work, t)
            drift_px = 0
        else:
            drift = self._threshold(work, self._anchor, cfg.drift_threshold) & roi
            drift_px = int(np.count_nonzero(drift))
            if drift_px > cfg.still_max_changed_px or changed_px > cfg.still_max_changed_px or intruder:
                self._start_still_run(work, t)
            else:
                self._still_frames += 1
        moving = changed_px > cfg.still_max_changed_px or drift_px > cfg.still_max_changed_px

        # The episode: is this a throw (free dice motion after the last intruder left)?
        if moving or intruder:
            self._active = True
            self._settled = False
        edge_px = int(np.count_nonzero(edge_mask))
        if intruder or edge_px > self._edge_px_at_settle + cfg.min_object_px:
            self._entered = True
        if intruder:
            self._handled = True
            self._armed = False
            self._free_motion_s = 0.0
            self._moving_since_s = None
            self._intruder_s = t
        elif free_px > cfg.still_max_changed_px and t - self._intruder_s > cfg.intruder_hold_s and not gap:
            if self._moving_since_s is None:
                self._moving_since_s = self._prev_s
            self._free_motion_s += dt
            if self._free_motion_s >= cfg.min_free_motion_s and self._entered:
                self._armed = True

        objects = int(keep.size)
        still = (
            not intruder
            and self._still_frames >= cfg.min_still_frames
            and t - self._still_since_s >= cfg.still_s - 1e-9
        )
        if intruder:
            new_state = SettleState.OBSTRUCTED
        elif still:
            new_state = SettleState.AT_REST if objects else SettleState.EMPTY
        elif moving:
            new_state = SettleState.MOVING
        else:
            new_state = self.state
        if still and not self._settled:
            events += self._settle(frame, objects=objects, edge_px=edge_px)
        if still and self._background is not None and cfg.background_alpha > 0:
            # Follow slow lighting changes on the felt only; objects never melt into the model.
            felt = cv2.bitwise_and(roi, cv2.bitwise_not(cv2.dilate(fg, np.ones((5, 5), np.uint8))))
            cv2.accumulateWeighted(work.astype(np.float32), self._background, cfg.background_alpha, mask=felt)
        if new_state is not self.state:
            events.insert(0, StateChanged(self.state, new_state, frame_id=frame.frame_id, at_s=t))
            self.state = new_state

        self.last = FrameAnalysis(
            changed_px=changed_px,
            drift_px=drift_px,
            free_motion_px=free_px,
            foreground_px=int(np.count_nonzero(fg)),
            objects=objects,
            intruder=intruder,
            largest_edge_blob_px=largest_edge,
        )
        self._prev, self._prev_s, self._prev_edge = work, t, edge_mask
        return events

    def _foreground(
        self, work: ImageArray, roi: MaskArray, *, background: NDArray[np.float32]
    ) -> tuple[MaskArray, NDArray[np.intp], MaskArray, int, bool]:
        """What differs from the background in the box: the foreground mask, the labels of objects big
        enough to count, the mask of those touching the box's edge band, the largest of those (px), and
        whether an intruder (a hand, a stick) is in: a blob past the intrusion fractions of the box."""
        cfg = self.config
        fg = self._threshold(work, background.astype(np.uint8), cfg.foreground_threshold) & roi
        n, labels, stats, _ = cv2.connectedComponentsWithStats(fg, connectivity=8)
        areas = stats[1:, cv2.CC_STAT_AREA] if n > 1 else np.zeros(0, dtype=np.int32)
        keep = np.flatnonzero(areas >= cfg.min_object_px) + 1
        edge_labels = np.intersect1d(np.unique(labels[self._band() > 0]), keep)
        edge_mask = (
            np.isin(labels, edge_labels).astype(np.uint8) * 255 if edge_labels.size else np.zeros_like(fg)
        )
        largest_edge = int(stats[edge_labels, cv2.CC_STAT_AREA].max()) if edge_labels.size else 0
        largest_any = int(areas.max()) if areas.size else 0
        intruder = (
            largest_edge > cfg.intrusion_edge_fraction * self._roi_area
            or largest_any > cfg.intrusion_any_fraction * self._roi_area
        )
        return fg, keep, edge_mask, largest_edge, intruder

    def _settle(self, frame: CapturedFrame, *, objects: int, edge_px: int) -> list[SettleEvent]:
        """The box came to rest: a throw at rest if one was armed (and the background trusted), else a
        settle without a throw after activity; the episode ends."""
        events: list[SettleEvent] = []
        self._settled = True
        if self._armed and self._trusted and self._moving_since_s is not None:
            events.append(
                AtRest(
                    frame=frame,
                    throw_index=self.throws,
                    moving_since_s=self._moving_since_s,
                    still_since_s=self._still_since_s,
                )
            )
            self.throws += 1
        elif self._active:
            events.append(
                SettledWithoutThrow(
                    frame=frame,
                    still_since_s=self._still_since_s,
                    intruder_seen=self._handled,
                    empty=not objects,
                )
            )
        self._trusted = True
        self._edge_px_at_settle = edge_px
        self._reset_episode(keep_settled=True)
        return events

    # ----------------------------------------------------------------------------------------- helpers
    def _reset_episode(self, *, keep_settled: bool = False) -> None:
        self._armed = False
        self._handled = False
        self._entered = False
        self._active = False
        self._free_motion_s = 0.0
        self._moving_since_s = None
        if not keep_settled:
            self._settled = False
            self._anchor = None
            self._still_since_s = 0.0
            self._still_frames = 0

    def _start_still_run(self, work: ImageArray, t: float) -> None:
        self._anchor = work
        self._still_since_s = t
        self._still_frames = 1

    def _prepare(self, frame: CapturedFrame) -> ImageArray:
        h, w = frame.image.shape[:2]
        if self._size_wh is None:
            self._setup(w, h)
        elif self._size_wh != (w, h):
            raise ValueError(
                f"frame {frame.frame_id} is {w}x{h}, the detector was set up for {self._size_wh}"
            )
        img = frame.image
        if self._scale != 1.0:
            size = (round(w * self._scale), round(h * self._scale))
            img = np.asarray(cv2.resize(img, size, interpolation=cv2.INTER_AREA), dtype=np.uint8)
        k = self.config.blur_px
        return np.asarray(cv2.GaussianBlur(img, (k, k), 0) if k > 1 else img, dtype=np.uint8)

    def _setup(self, w: int, h: int) -> None:
        if self._required_wh is not None and self._required_wh != (w, h):
            rw, rh = self._required_wh
            raise ValueError(f"frames are {w}x{h} px but the table was calibrated at {rw}x{rh} px")
        self._size_wh = (w, h)
        self._scale = min(1.0, self.config.work_width_px / w)
        ww, wh = round(w * self._scale), round(h * self._scale)
        roi = np.zeros((wh, ww), dtype=np.uint8)
        if self._roi_xy is None:
            roi[:] = 255
        else:
            pts = np.round(self._roi_xy * self._scale).astype(np.int32)
            cv2.fillPoly(roi, [pts], 255)
        if not np.any(roi):
            raise ValueError("roi_xy encloses no pixel of the frame")
        # The box edge: the ROI's outermost pixels (the image border counts when the ROI is the frame).
        padded = cv2.copyMakeBorder(roi, 1, 1, 1, 1, cv2.BORDER_CONSTANT, value=0)
        inner = cv2.erode(padded, np.ones((5, 5), np.uint8))[1:-1, 1:-1]
        self._roi = roi
        self._edge_band = np.asarray(cv2.bitwise_and(roi, cv2.bitwise_not(inner)), dtype=np.uint8)
        self._roi_area = int(np.count_nonzero(roi))
        if self._empty_box is not None:
            if self._empty_box.shape[:2] != (h, w):
                raise ValueError(
                    f"empty_box is {self._empty_box.shape[1]}x{self._empty_box.shape[0]}, frames {w}x{h}"
                )
            img = (
                cv2.resize(self._empty_box, (ww, wh), interpolation=cv2.INTER_AREA)
                if self._scale != 1.0
                else self._empty_box
            )
            k = self.config.blur_px
            self._background = (
                cv2.GaussianBlur(img, (k, k), 0).astype(np.float32) if k > 1 else img.astype(np.float32)
            )
            self.state = SettleState.UNKNOWN

    def _mask(self) -> MaskArray:
        if self._roi is None:
            raise RuntimeError("detector used before its first frame")
        return self._roi

    def _band(self) -> MaskArray:
        if self._edge_band is None:
            raise RuntimeError("detector used before its first frame")
        return self._edge_band

    @staticmethod
    def _threshold(a: ImageArray, b: ImageArray, level: int) -> MaskArray:
        """Pixels where any channel differs by more than `level`, with isolated specks removed."""
        c0, c1, c2 = cv2.split(
            cv2.absdiff(a, b)
        )  # per-channel max via cv2: numpy's .max(axis=2) is 20x slower
        diff = cv2.max(cv2.max(c0, c1), c2)
        mask = (diff > level).astype(np.uint8) * 255
        return np.asarray(cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((2, 2), np.uint8)), dtype=np.uint8)

    def _learn_background(self, work: ImageArray, frame: CapturedFrame) -> list[SettleEvent]:
        """Collect still frames of the empty box; their per-pixel median becomes the empty-box model."""
        cfg = self.config
        if self._learn:
            moved = self._threshold(work, self._learn[-1], cfg.motion_threshold) & self._mask()
            if np.count_nonzero(moved) > cfg.still_max_changed_px:
                self._learn = []  # something moved: the model must come from a still box
        self._learn.append(work)
        self._prev, self._prev_s = work, frame.monotonic_s
        if len(self._learn) < cfg.background_frames:
            return []
        self._background = np.median(np.stack(self._learn), axis=0).astype(np.float32)
        self._learn = []
        self._prev = None
        self.state = SettleState.UNKNOWN
        return [
            StateChanged(
                SettleState.LEARNING, SettleState.UNKNOWN, frame_id=frame.frame_id, at_s=frame.monotonic_s
            )
        ]


def settle_stream(
    items: Iterable[CapturedFrame | CaptureEvent], detector: SettleDetector
) -> Iterator[CapturedFrame | CaptureEvent | SettleEvent]:
    """Run a capture through the detector: yields every frame, capture event and settle event, in order.

    A `SourceLost` resets the detector before anything else happens, so no read is ever taken from a
    throw the camera did not watch to the end; a `ClipStarted` starts it afresh on the new clip.
    """
    for item in items:
        if isinstance(item, SourceLost):
            detector.reset()
        elif isinstance(item, ClipStarted):
            detector.new_clip()
        yield item
        if isinstance(item, CapturedFrame):
            yield from detector.update(item)
