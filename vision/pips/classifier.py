"""The face stage: learned probabilities for faces 1..6 plus the classical pip count for every die."""

from __future__ import annotations

import numpy as np

from vision.onnx_session import OnnxModel
from vision.pips.classical import PipCountConfig, count_pips
from vision.pips.crops import crop_die, crops_to_tensor
from vision.types import DieCandidate, FaceReading, ImageArray


class FaceReader:
    """Read the top face of each candidate: the ONNX classifier and, independently, the pip counter."""

    def __init__(self, model: OnnxModel, pip_config: PipCountConfig | None = None) -> None:
        self.model = model
        self.pip_config = pip_config or PipCountConfig()

    def __call__(
        self, image_bgr: ImageArray, candidates: tuple[DieCandidate, ...]
    ) -> tuple[FaceReading, ...]:
        """One `FaceReading` per candidate, in the same order."""
        if not candidates:
            return ()
        crops = [crop_die(image_bgr, c.box_xyxy) for c in candidates]
        (probs,) = self.model.run(crops_to_tensor(crops))[:1]
        if probs.shape != (len(crops), 6):
            raise ValueError(f"face model returned {probs.shape}, expected ({len(crops)}, 6)")
        probs = probs / np.maximum(probs.sum(axis=1, keepdims=True), 1e-9)
        return tuple(
            FaceReading(
                face_probs=tuple(float(p) for p in row),
                pip_count=count_pips(crop, config=self.pip_config),
            )
            for row, crop in zip(probs, crops, strict=True)
        )
