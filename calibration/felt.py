"""The empty-felt model: colour statistics of the empty throw box, and a per-pixel "not felt" score.

Colours are compared in CIE Lab with lightness down-weighted (`lightness_weight`), so a change of room light
moves the score less than a change of colour; the score is the Mahalanobis distance to the felt's colour
distribution. Printed layout lines and the corner markers are kept out of the statistics by the caller's mask
and by trimming the most distant pixels once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.errors import BadImageError
from calibration.images import check_image, to_bgr

FloatArray = NDArray[np.float64]

_VARIANCE_FLOOR = 1.0  # Lab units^2: keeps the covariance invertible for very uniform (synthetic) felt
_TRIM_QUANTILE = 0.98  # drop the 2 % most distant pixels (print, lint) before the final estimate


# The Mahalanobis distance is computed with numpy over all pixels at once: cv2.Mahalanobis takes one vector
# per call, which would be a Python loop over a million pixels.


def _features(image: NDArray[np.uint8], lightness_weight: float) -> NDArray[np.float32]:
    lab = np.asarray(
        cv2.cvtColor(to_bgr(image).astype(np.float32) / 255.0, cv2.COLOR_BGR2Lab), dtype=np.float32
    )
    lab[:, :, 0] = lab[:, :, 0] * np.float32(lightness_weight)
    return lab


@dataclass(frozen=True)
class FeltModel:
    """Mean and covariance of the felt colour (weighted Lab) and the score level of real felt."""

    mean: tuple[float, float, float]
    cov: tuple[float, ...]  # 3x3 row-major
    lightness_weight: float
    felt_score_p99: float  # 99th percentile of the score over the fitted felt pixels
    frames: int
    pixels: int

    def __post_init__(self) -> None:
        if len(self.mean) != 3 or len(self.cov) != 9:
            raise ValueError("felt model needs a 3-vector mean and a 3x3 covariance")
        if not np.all(np.linalg.eigvalsh(np.asarray(self.cov).reshape(3, 3)) > 0):
            raise ValueError("felt covariance must be positive definite")

    def not_felt_score(self, image: object) -> NDArray[np.float32]:
        """Per-pixel Mahalanobis distance from the felt colour: ~1-3 on felt, large on dice and hands."""
        img = check_image(image, name="frame")
        feats = _features(img, self.lightness_weight).reshape(-1, 3) - np.asarray(self.mean, dtype=np.float32)
        inv = np.linalg.inv(np.asarray(self.cov, dtype=np.float64).reshape(3, 3)).astype(np.float32)
        d2 = np.einsum("ij,jk,ik->i", feats, inv, feats)
        return np.asarray(np.sqrt(np.maximum(d2, 0.0)).reshape(img.shape[:2]), dtype=np.float32)


def fit_felt_model(
    frames: Sequence[object], *, mask: NDArray[np.uint8], lightness_weight: float = 0.3
) -> FeltModel:
    """Fit the felt colour from empty-box frames, using the pixels where `mask` is non-zero."""
    if len(frames) == 0:
        raise BadImageError("the felt model needs at least one frame of the empty box")
    if not 0 < lightness_weight <= 1:
        raise ValueError(f"lightness weight must be in (0, 1], got {lightness_weight}")
    samples = []
    for i, frame in enumerate(frames):
        img = check_image(frame, name=f"felt frame {i}")
        if img.shape[:2] != mask.shape[:2]:
            raise BadImageError(
                f"felt frame {i} is {img.shape[1]}x{img.shape[0]}, the mask {mask.shape[::-1]}"
            )
        samples.append(_features(img, lightness_weight)[mask > 0])
    x = np.concatenate(samples).astype(np.float64)
    if x.shape[0] < 100:
        raise BadImageError(f"only {x.shape[0]} felt pixels under the mask: the box is not in view")

    def estimate(data: FloatArray) -> tuple[FloatArray, FloatArray]:
        mu = data.mean(axis=0)
        cov = np.cov(data, rowvar=False) + np.eye(3) * _VARIANCE_FLOOR
        return mu, cov

    def distances(data: FloatArray, mu: FloatArray, cov: FloatArray) -> FloatArray:
        d = data - mu
        return np.asarray(np.sqrt(np.einsum("ij,jk,ik->i", d, np.linalg.inv(cov), d)), dtype=np.float64)

    mu, cov = estimate(x)
    dist = distances(x, mu, cov)
    kept = x[dist <= np.quantile(dist, _TRIM_QUANTILE)]
    mu, cov = estimate(kept)
    p99 = float(np.quantile(distances(kept, mu, cov), 0.99))
    return FeltModel(
        mean=(float(mu[0]), float(mu[1]), float(mu[2])),
        cov=tuple(float(v) for v in cov.ravel()),
        lightness_weight=lightness_weight,
        felt_score_p99=p99,
        frames=len(frames),
        pixels=int(kept.shape[0]),
    )
