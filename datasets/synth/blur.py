"""The camera-shake blur kernel, shared by the generator's degradations and the face model's training.

Kept apart from `datasets.synth.randomise` (which imports the renderer) so training code can use it cheaply.
"""

from __future__ import annotations

import cv2
import numpy as np
from numpy.typing import NDArray


def motion_kernel(length_px: int, angle_deg: float) -> NDArray[np.float32]:
    """A (length, length) line kernel through the centre at `angle_deg`, summing to 1: a camera moving by
    `length_px` during the exposure."""
    k = np.zeros((length_px, length_px), dtype=np.float32)
    k[length_px // 2, :] = 1.0
    rot = cv2.getRotationMatrix2D(((length_px - 1) / 2.0, (length_px - 1) / 2.0), angle_deg, 1.0)
    k = np.asarray(cv2.warpAffine(k, rot, (length_px, length_px)), dtype=np.float32)
    return np.asarray(k / max(float(k.sum()), 1e-6), dtype=np.float32)
