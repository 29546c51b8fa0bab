"""A small reference picture of the calibrated view, for the camera-moved check when markers are not seen.

At calibration the frame is blurred and shrunk to `REFERENCE_WIDTH_PX` and stored (PNG, base64) with the
calibration. Later frames are aligned to it with OpenCV's ECC image alignment (`cv2.findTransformECC`,
homography motion, coarse to fine); how far that alignment moves points of the throw box, in full-size
pixels, says whether the camera moved. ECC's correlation is invariant to brightness and contrast, so a
change of room light does not read as motion.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.images import decode_png_b64, encode_png_b64, to_gray

FloatArray = NDArray[np.float64]

REFERENCE_WIDTH_PX = 320
_BLUR_SIGMA_PX = 1.0  # in thumbnail pixels: removes sensor noise, keeps the box edges and print
_HIGH_PASS_SIGMA_PX = 6.0  # thumbnail pixels
_ECC_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 200, 1e-7)
MIN_CORRELATION = 0.6  # below this the view no longer looks like the reference: do not guess


@dataclass(frozen=True)
class ReferenceImage:
    """The shrunk, blurred calibration frame (grey PNG, base64) and its scale (thumbnail px per image px)."""

    png_b64: str
    scale: float

    def image(self) -> NDArray[np.uint8]:
        """Decode the stored picture."""
        return decode_png_b64(self.png_b64, what="reference picture")


def _thumbnail(frame: object, scale: float) -> NDArray[np.uint8]:
    gray = to_gray(frame, name="frame")
    size = (round(gray.shape[1] * scale), round(gray.shape[0] * scale))
    small = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)
    return np.asarray(cv2.GaussianBlur(small, (0, 0), _BLUR_SIGMA_PX), dtype=np.uint8)


def _high_pass(image: NDArray[np.uint8]) -> NDArray[np.float32]:
    """Remove slow brightness changes (a lamp switched on at one side) that ECC's gain/offset model misses."""
    img = image.astype(np.float32)
    return np.asarray(img - cv2.GaussianBlur(img, (0, 0), _HIGH_PASS_SIGMA_PX), dtype=np.float32)


def make_reference(frame: object) -> ReferenceImage:
    """The reference picture of a calibration frame."""
    gray = to_gray(frame, name="calibration frame")
    scale = min(1.0, REFERENCE_WIDTH_PX / gray.shape[1])
    return ReferenceImage(png_b64=encode_png_b64(_thumbnail(gray, scale)), scale=scale)


@dataclass(frozen=True)
class Alignment:
    """How a frame maps onto the reference: homography in full-size pixels and the ECC correlation."""

    homography: FloatArray  # reference pixel -> current pixel
    correlation: float


def align_to_reference(
    reference: ReferenceImage, frame: object, *, mask: NDArray[np.uint8] | None = None
) -> Alignment | None:
    """Align a frame to the reference picture; None when ECC does not converge.

    `mask` (full-size, non-zero = use) keeps people and things outside the throw box out of the alignment.
    """
    ref = _high_pass(reference.image())
    cur = _high_pass(_thumbnail(frame, reference.scale))
    if cur.shape != ref.shape:
        return None
    if mask is None:
        small_mask: NDArray[np.uint8] = np.full(ref.shape, 255, np.uint8)
    else:
        small_mask = np.asarray(
            cv2.resize(mask, (ref.shape[1], ref.shape[0]), interpolation=cv2.INTER_NEAREST), dtype=np.uint8
        )
    # Start from the overall shift (phase correlation), then refine a full homography with ECC.
    window = cv2.createHanningWindow((ref.shape[1], ref.shape[0]), cv2.CV_32F)
    (dx, dy), _response = cv2.phaseCorrelate(ref * (small_mask > 0), cur * (small_mask > 0), window)
    warp: NDArray[np.float32] = np.array([[1, 0, dx / 2], [0, 1, dy / 2], [0, 0, 1]], dtype=np.float32)
    correlation = 0.0
    # Coarse to fine: half size first so a few pixels of motion stay inside ECC's basin.
    for level in (1, 0):
        f = 0.5**level
        r = cv2.resize(ref, None, fx=f, fy=f, interpolation=cv2.INTER_AREA) if level else ref
        c = cv2.resize(cur, None, fx=f, fy=f, interpolation=cv2.INTER_AREA) if level else cur
        m = (
            cv2.resize(small_mask, (r.shape[1], r.shape[0]), interpolation=cv2.INTER_NEAREST)
            if level
            else small_mask
        )
        if level == 0:  # carry the half-size warp to full size: S W S^-1 with S = diag(2, 2, 1)
            warp = warp * np.array([[1, 1, 2], [1, 1, 2], [0.5, 0.5, 1]], dtype=np.float32)
        try:
            correlation, found = cv2.findTransformECC(r, c, warp, cv2.MOTION_HOMOGRAPHY, _ECC_CRITERIA, m, 5)
            warp = np.asarray(found, dtype=np.float32)
        except cv2.error:
            return None
    s = np.diag([reference.scale, reference.scale, 1.0])
    full = np.linalg.inv(s) @ warp.astype(np.float64) @ s
    return Alignment(homography=full / full[2, 2], correlation=float(correlation))
