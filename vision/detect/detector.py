"""The detection stage: frame -> `DieCandidate`s, with the ONNX CenterNet model (see `centernet`)."""

from __future__ import annotations

from vision.detect.centernet import DetectorConfig, candidates_from, decode, preprocess
from vision.onnx_session import OnnxModel
from vision.types import DieCandidate, ImageArray


class DieDetector:
    """Find every die in a frame, at any size from ~16 px to frame-filling, without a calibration."""

    def __init__(self, model: OnnxModel, config: DetectorConfig | None = None) -> None:
        self.model = model
        self.config = config or DetectorConfig()

    def __call__(self, image_bgr: ImageArray) -> tuple[DieCandidate, ...]:
        """Candidates sorted left to right; an empty tuple when there is no die."""
        tensor, letterbox = preprocess(image_bgr, input_long_px=self.config.input_long_px)
        (head,) = self.model.run(tensor)[:1]
        h, w = image_bgr.shape[:2]
        boxes, scores = decode(head, letterbox=letterbox, image_wh=(w, h), config=self.config)
        return candidates_from(image_bgr, boxes, scores)
