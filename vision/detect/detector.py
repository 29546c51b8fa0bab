"""The detection stage: frame -> `DieCandidate`s, with the ONNX CenterNet model (see `centernet`)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from numpy.typing import NDArray

from vision.detect.centernet import DetectorConfig, candidates_from, decode, merge_coarse, preprocess
from vision.onnx_session import OnnxModel
from vision.types import DieCandidate, ImageArray


class DieDetector:
    """Find every die in a frame, at any size from ~16 px to frame-filling, without a calibration."""

    def __init__(self, model: OnnxModel, config: DetectorConfig | None = None) -> None:
        self.model = model
        config = config or DetectorConfig()
        # A threshold tuned for these weights (the manifest's `score_threshold`) is the model's own: it
        # replaces the config's, so a detector whose scores run lower is read at its own threshold.
        if model.spec.score_threshold is not None:
            config = replace(config, score_threshold=model.spec.score_threshold)
        self.config = config

    def __call__(self, image_bgr: ImageArray, *, coarse: bool = False) -> tuple[DieCandidate, ...]:
        """Candidates sorted left to right; an empty tuple when there is no die.

        `coarse` adds the coarse looks for dice filling much of the frame (`DetectorConfig.coarse_long_px`):
        the reader asks for them on a photo read without a table (`Reader.read`); a table's dice are
        table-sized, so by default they are left out.
        """
        tensor, letterbox = preprocess(image_bgr, input_long_px=self.config.input_long_px)
        (head,) = self.model.run(tensor)[:1]
        h, w = image_bgr.shape[:2]
        boxes, scores = decode(head, letterbox=letterbox, image_wh=(w, h), config=self.config)
        if coarse:
            boxes, scores = self._with_big_dice(image_bgr, boxes, scores)
        return candidates_from(image_bgr, boxes, scores)

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
        return merge_coarse(boxes, scores, big, big_scores, image_wh=(w, h), config=self.config)

    def detect_with_weak(
        self, image_bgr: ImageArray, *, weak_score: float, coarse: bool = False
    ) -> tuple[tuple[DieCandidate, ...], tuple[DieCandidate, ...]]:
        """The candidates as `__call__` gives them, and the peaks scoring in [weak_score, score_threshold).

        The weak peaks (one net run for both) let the judge tell a die that left the table from one the
        detector was unsure of (vision/judge/count.py). Their `top_quad` is the box's corners.
        """
        if not 0.0 < weak_score <= self.config.score_threshold:
            raise ValueError(f"weak_score must be in (0, {self.config.score_threshold}], got {weak_score}")
        tensor, letterbox = preprocess(image_bgr, input_long_px=self.config.input_long_px)
        (head,) = self.model.run(tensor)[:1]
        h, w = image_bgr.shape[:2]
        boxes, scores = decode(head, letterbox=letterbox, image_wh=(w, h), config=self.config)
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
