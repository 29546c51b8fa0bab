"""Cut the square die crops the face classifier reads; training cuts them with this same function."""

from __future__ import annotations

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera
from vision.types import ImageArray

CROP_PX = 64
CROP_PAD = 0.15  # the crop's side is the box's long side times (1 + CROP_PAD), centred on the box


def crop_die(
    image_bgr: ImageArray,
    box_xyxy: NDArray[np.float32] | tuple[float, ...],
    *,
    size_px: int = CROP_PX,
    _shrunk: bool = False,
) -> ImageArray:
    """A (size_px, size_px, 3) BGR crop centred on the box; outside the frame is edge-replicated."""
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    side = max(x1 - x0, y1 - y0) * (1.0 + CROP_PAD)
    if side <= 0:
        raise ValueError(f"empty box {box_xyxy}")
    cx, cy = (x0 + x1) / 2.0, (y0 + y1) / 2.0
    scale = size_px / side
    # Map the square [cx - side/2, cx + side/2] onto [0, size_px] (pixel centres aligned).
    m = np.array(
        [
            [scale, 0.0, size_px / 2.0 - cx * scale - 0.5 + 0.5 * scale],
            [0.0, scale, size_px / 2.0 - cy * scale - 0.5 + 0.5 * scale],
        ],
        np.float64,
    )
    interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
    if scale < 0.5 and not _shrunk:
        # Pre-shrink with area averaging so small pips are not aliased away by warpAffine's sampling.
        ix0, iy0 = max(0, int(cx - side / 2) - 1), max(0, int(cy - side / 2) - 1)
        ix1 = min(image_bgr.shape[1], int(cx + side / 2) + 2)
        iy1 = min(image_bgr.shape[0], int(cy + side / 2) + 2)
        if ix1 - ix0 >= 2 and iy1 - iy0 >= 2:
            sub = image_bgr[iy0:iy1, ix0:ix1]
            f = 1.8 * scale  # leaves the second pass a scale of ~0.55: no further pre-shrink
            small = np.asarray(cv2.resize(sub, None, fx=f, fy=f, interpolation=cv2.INTER_AREA), np.uint8)
            sx = small.shape[1] / sub.shape[1]
            sy = small.shape[0] / sub.shape[0]
            return crop_die(
                small,
                ((x0 - ix0) * sx, (y0 - iy0) * sy, (x1 - ix0) * sx, (y1 - iy0) * sy),
                size_px=size_px,
                _shrunk=True,
            )
    out = cv2.warpAffine(image_bgr, m, (size_px, size_px), flags=interp, borderMode=cv2.BORDER_REPLICATE)
    return np.asarray(out, np.uint8)


def crops_die_top(
    image_bgr: ImageArray,
    camera: Camera,
    centres_mm: NDArray[np.float64],
    *,
    z_mm: float,
    side_mm: float,
    size_px: int = CROP_PX,
) -> list[ImageArray]:
    """One (size_px, size_px, 3) BGR crop per row of `centres_mm` (n, 2): the square `side_mm` across centred
    there in the plane `z_mm` above the felt, seen square-on from above (a die's top face square). The crop's
    x and y run with the table's x and y, so it is the mirror image of what a camera above the table sees;
    every d6 face looks the same mirrored as turned, and the face model reads dice at any turn.

    Each square is mapped through the camera (its distortion included) at its four corners, all dice in one
    projection, and cut with the perspective transform they give: over one die the lens is as good as a
    pinhole. A square much bigger in the frame than the crop is shrunk with area averaging first, as
    `crop_die` does.
    """
    if side_mm <= 0:
        raise ValueError(f"side_mm must be positive, got {side_mm}")
    centres = np.asarray(centres_mm, np.float64).reshape(-1, 2)
    if len(centres) == 0:
        return []
    half = side_mm / 2.0
    offsets = np.array([[-half, -half], [half, -half], [half, half], [-half, half]], np.float64)
    corners_mm = np.concatenate(
        [(centres[:, None, :] + offsets[None]).reshape(-1, 2), np.full((4 * len(centres), 1), z_mm)], axis=1
    )
    corners_px = camera.project(corners_mm).astype(np.float32).reshape(-1, 4, 2)
    return [_crop_square(image_bgr, quad, size_px) for quad in corners_px]


def crop_die_top(
    image_bgr: ImageArray,
    camera: Camera,
    centre_mm: tuple[float, float],
    *,
    z_mm: float,
    side_mm: float,
    size_px: int = CROP_PX,
) -> ImageArray:
    """`crops_die_top` for one die."""
    centres = np.array([centre_mm], np.float64)
    return crops_die_top(image_bgr, camera, centres, z_mm=z_mm, side_mm=side_mm, size_px=size_px)[0]


def _crop_square(image_bgr: ImageArray, corners_px: NDArray[np.float32], size_px: int) -> ImageArray:
    """The quad `corners_px` (4, 2; a square's corners in order round it, seen in the frame) warped to a
    (size_px, size_px) crop."""
    target = np.array([[0, 0], [size_px, 0], [size_px, size_px], [0, size_px]], np.float32)
    source: ImageArray = image_bgr
    side_px = float(np.mean(np.linalg.norm(corners_px - np.roll(corners_px, 1, axis=0), axis=1)))
    scale = size_px / max(side_px, 1e-6)
    if scale < 0.5:
        # Shrink the square's neighbourhood with area averaging first, so pips are not aliased away.
        h, w = image_bgr.shape[:2]
        ix0, iy0 = (max(0, int(v) - 2) for v in corners_px.min(axis=0))
        ix1, iy1 = (int(v) + 3 for v in corners_px.max(axis=0))
        ix1, iy1 = min(w, ix1), min(h, iy1)
        if ix1 - ix0 >= 2 and iy1 - iy0 >= 2:
            f = 1.8 * scale
            sub = image_bgr[iy0:iy1, ix0:ix1]
            source = np.asarray(cv2.resize(sub, None, fx=f, fy=f, interpolation=cv2.INTER_AREA), np.uint8)
            offset = np.array([ix0, iy0], np.float32)
            factor = np.array([source.shape[1] / (ix1 - ix0), source.shape[0] / (iy1 - iy0)], np.float32)
            corners_px = ((corners_px - offset + 0.5) * factor - 0.5).astype(np.float32)
    # Pixel centres: crop pixel (i, j) samples the plane at ((i + 0.5) / size_px, (j + 0.5) / size_px) of the
    # square, so the square's corners lie at -0.5 and size_px - 0.5 in crop coordinates.
    m = cv2.getPerspectiveTransform(target - 0.5, corners_px)
    out = cv2.warpPerspective(
        source, m, (size_px, size_px), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
        borderMode=cv2.BORDER_REPLICATE,
    )  # fmt: skip
    return np.asarray(out, np.uint8)


def scaled_box(box_xyxy: tuple[float, ...], scale: float) -> tuple[float, float, float, float]:
    """The box scaled by `scale` about its centre (the pip count's recount cuts its crops from these); at
    scale 1 the box itself, to the last bit (centre plus half-side can differ from the corner by one)."""
    x0, y0, x1, y1 = box_xyxy
    if scale == 1.0:
        return (float(x0), float(y0), float(x1), float(y1))
    cx, cy, hw, hh = (x0 + x1) / 2, (y0 + y1) / 2, (x1 - x0) / 2 * scale, (y1 - y0) / 2 * scale
    return (cx - hw, cy - hh, cx + hw, cy + hh)


def crops_to_tensor(crops: list[ImageArray]) -> NDArray[np.float32]:
    """BGR uint8 crops -> (N, 3, H, W) float32 RGB in [0, 1], the classifier's input."""
    if not crops:
        return np.zeros((0, 3, CROP_PX, CROP_PX), np.float32)
    batch = np.stack(crops)[:, :, :, ::-1].transpose(0, 3, 1, 2)
    return np.ascontiguousarray(batch, dtype=np.float32) * np.float32(1 / 255)
