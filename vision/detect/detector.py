"""The detection stage: frame -> `DieCandidate`s, with the ONNX CenterNet model (see `centernet`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from vision.detect.centernet import (
    SIZE_MULTIPLE,
    DetectorConfig,
    Letterbox,
    candidates_from,
    decode,
    merge_coarse,
    preprocess,
)
from vision.onnx_session import OnnxModel
from vision.types import DieCandidate, ImageArray

# (frame, coarse box, the fine boxes inside it) -> may the coarse box replace them?
BigDieCheck = Callable[[ImageArray, NDArray[np.float32], NDArray[np.float32]], bool]


class DieDetector:
    """Find every die in a frame, at any size from ~16 px to frame-filling, without a calibration."""

    def __init__(
        self,
        model: OnnxModel,
        config: DetectorConfig | None = None,
        *,
        big_die_check: BigDieCheck | None = None,
    ) -> None:
        self.model = model
        config = config or DetectorConfig()
        # A threshold tuned for these weights (the manifest's `score_threshold`) is the model's own: it
        # replaces the config's, so a detector whose scores run lower is read at its own threshold.
        if model.spec.score_threshold is not None:
            config = replace(config, score_threshold=model.spec.score_threshold)
        if model.spec.input_blur_sigma is not None:  # the same for the weights' own input blur
            config = replace(config, input_blur_sigma=model.spec.input_blur_sigma)
        self.config = config
        # `big_die_check(image, coarse_box, fine_boxes_inside)`: whether a coarse look's big die may replace
        # the small boxes inside it (`merge_coarse`'s `accept`); None: the geometry alone decides. The reader
        # gives it from its face model (`ReaderConfig.big_die_face_margin`).
        self.big_die_check = big_die_check

    def __call__(self, image_bgr: ImageArray, *, coarse: bool = False) -> tuple[DieCandidate, ...]:
        """Candidates sorted left to right; an empty tuple when there is no die.

        `coarse` adds the looks of a photo read without a table (`Reader.read`): the coarse looks for dice
        filling much of the frame (`DetectorConfig.coarse_long_px`) and the fine look for small dice in a
        large frame (`fine_max_long_px`); a table's dice are table-sized, so by default both are left out.
        """
        head, letterbox = self._look(image_bgr, self.config.input_long_px)
        h, w = image_bgr.shape[:2]
        boxes, scores = decode(head, letterbox=letterbox, image_wh=(w, h), config=self.config)
        if coarse:
            boxes, scores, _ = self._with_small_dice(image_bgr, boxes, scores, head, letterbox)
            boxes, scores = self._with_big_dice(image_bgr, boxes, scores)
        return candidates_from(image_bgr, boxes, scores)

    def _look(self, image_bgr: ImageArray, long_px: int) -> tuple[NDArray[np.float32], Letterbox]:
        """The net's output on the frame scaled to `long_px` (long side), and how it was scaled."""
        # The input blur only where the frame is not scaled down for the net (scaling down averages it).
        blur = self.config.input_blur_sigma if max(image_bgr.shape[:2]) <= long_px else 0.0
        tensor, letterbox = preprocess(image_bgr, input_long_px=long_px, blur_sigma=blur)
        (head,) = self.model.run(tensor)[:1]
        return head, letterbox

    def fine_long_px(self, image_bgr: ImageArray, boxes: NDArray[np.float32], letterbox: Letterbox) -> int:
        """The long side of the fine look for small dice in a large frame (`DetectorConfig.fine_max_long_px`),
        0 when none is needed."""
        cfg = self.config
        frame_long = max(image_bgr.shape[:2])
        if not cfg.fine_max_long_px or frame_long <= cfg.input_long_px:
            return 0
        if len(boxes):
            sides = np.maximum(boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]) * letterbox.scale
            median = float(np.median(sides))
            if median >= cfg.fine_below_px:
                return 0
            wanted = cfg.input_long_px * cfg.fine_target_px / max(median, 1.0)
        else:
            wanted = float(cfg.fine_max_long_px)
        long_px = min(wanted, float(frame_long), float(cfg.fine_max_long_px))
        long_px = int(long_px // SIZE_MULTIPLE) * SIZE_MULTIPLE
        return long_px if long_px > cfg.input_long_px else 0

    def _with_small_dice(
        self,
        image_bgr: ImageArray,
        boxes: NDArray[np.float32],
        scores: NDArray[np.float32],
        head: NDArray[np.float32],
        letterbox: Letterbox,
    ) -> tuple[NDArray[np.float32], NDArray[np.float32], tuple[NDArray[np.float32], Letterbox]]:
        """The fine look's boxes where it is needed and finds more dice; and the look they came from."""
        long_px = self.fine_long_px(image_bgr, boxes, letterbox)
        if not long_px:
            return boxes, scores, (head, letterbox)
        fine_head, fine_box = self._look(image_bgr, long_px)
        h, w = image_bgr.shape[:2]
        fine, fine_scores = decode(fine_head, letterbox=fine_box, image_wh=(w, h), config=self.config)
        if len(fine) <= len(boxes):
            return boxes, scores, (head, letterbox)
        return fine, fine_scores, (fine_head, fine_box)

    def _with_big_dice(
        self, image_bgr: ImageArray, boxes: NDArray[np.float32], scores: NDArray[np.float32]
    ) -> tuple[NDArray[np.float32], NDArray[np.float32]]:
        """The coarse looks (`DetectorConfig.coarse_long_px`), merged by `merge_coarse`."""
        if not self.config.coarse_long_px:
            return boxes, scores
        h, w = image_bgr.shape[:2]
        # No speck filter at these scales: the ordinary dice they see are specks, and only big boxes count.
        config = replace(self.config, min_size_of_median=0.0)
        found = []
        for long_px in self.config.coarse_long_px:
            tensor, letterbox = preprocess(image_bgr, input_long_px=long_px)
            found.append(
                decode(self.model.run(tensor)[0], letterbox=letterbox, image_wh=(w, h), config=config)
            )
        big = np.concatenate([b for b, _ in found]).astype(np.float32)
        big_scores = np.concatenate([s for _, s in found]).astype(np.float32)
        check = self.big_die_check
        accept = None if check is None else (lambda c, inside: check(image_bgr, c, inside))
        return merge_coarse(
            boxes, scores, big, big_scores, image_wh=(w, h), config=self.config, accept=accept
        )

    def detect_with_weak(
        self, image_bgr: ImageArray, *, weak_score: float, coarse: bool = False
    ) -> tuple[tuple[DieCandidate, ...], tuple[DieCandidate, ...]]:
        """The candidates as `__call__` gives them, and the peaks scoring in [weak_score, score_threshold).

        The weak peaks (one net run for both) let the judge tell a die that left the table from one the
        detector was unsure of (vision/judge/count.py). Their `top_quad` is the box's corners.
        """
        if not 0.0 < weak_score <= self.config.score_threshold:
            raise ValueError(f"weak_score must be in (0, {self.config.score_threshold}], got {weak_score}")
        head, letterbox = self._look(image_bgr, self.config.input_long_px)
        h, w = image_bgr.shape[:2]
        boxes, scores = decode(head, letterbox=letterbox, image_wh=(w, h), config=self.config)
        if coarse:  # the weak peaks come from the look whose boxes are kept
            boxes, scores, (head, letterbox) = self._with_small_dice(
                image_bgr, boxes, scores, head, letterbox
            )
        low = replace(self.config, score_threshold=weak_score)
        weak_boxes, weak_scores = decode(head, letterbox=letterbox, image_wh=(w, h), config=low)
        if coarse:
            boxes, scores = self._with_big_dice(image_bgr, boxes, scores)
        weak = tuple(
            DieCandidate(
                box_xyxy=(float(b[0]), float(b[1]), float(b[2]), float(b[3])),
                top_quad=((float(b[0]), float(b[1])), (float(b[2]), float(b[1])),
                          (float(b[2]), float(b[3])), (float(b[0]), float(b[3]))),
                score=float(s),
            )
            for b, s in zip(weak_boxes, weak_scores, strict=True)
            if s < self.config.score_threshold
        )  # fmt: skip
        return candidates_from(image_bgr, boxes, scores), weak
