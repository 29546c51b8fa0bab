"""Image input checks shared by the calibration steps: bad images fail with a clear `BadImageError`."""

from __future__ import annotations

import base64
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.errors import BadImageError, CorruptCalibrationError

UInt8Image = NDArray[np.uint8]


def check_image(image: object, *, name: str = "image") -> UInt8Image:
    """Return `image` as a uint8 (H, W) or (H, W, 3) array, or raise `BadImageError` saying what is wrong."""
    if image is None:
        raise BadImageError(f"{name}: no image (None)")
    if not isinstance(image, np.ndarray):
        raise BadImageError(f"{name}: expected a numpy array, got {type(image).__name__}")
    if image.dtype != np.uint8:
        raise BadImageError(f"{name}: expected 8-bit pixels (uint8), got {image.dtype}")
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[:, :, 0]
    if not (image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 3)):
        raise BadImageError(f"{name}: expected a grey (H, W) or BGR (H, W, 3) image, got shape {image.shape}")
    if image.shape[0] < 16 or image.shape[1] < 16:
        raise BadImageError(f"{name}: image too small ({image.shape[1]}x{image.shape[0]} px)")
    return image


def to_gray(image: object, *, name: str = "image") -> UInt8Image:
    """Checked greyscale copy of a grey or BGR image."""
    img = check_image(image, name=name)
    if img.ndim == 2:
        return img
    return np.asarray(cv2.cvtColor(img, cv2.COLOR_BGR2GRAY), dtype=np.uint8)


def to_bgr(image: object, *, name: str = "image") -> UInt8Image:
    """Checked BGR copy of a grey or BGR image."""
    img = check_image(image, name=name)
    if img.ndim == 3:
        return img
    return np.asarray(cv2.cvtColor(img, cv2.COLOR_GRAY2BGR), dtype=np.uint8)


def resolution_wh(image: UInt8Image) -> tuple[int, int]:
    """(width, height) of an image array."""
    return (int(image.shape[1]), int(image.shape[0]))


def read_image(path: Path) -> UInt8Image:
    """Read an image file as BGR, or raise `BadImageError` (missing file, not an image)."""
    if not path.is_file():
        raise BadImageError(f"{path}: no such file")
    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise BadImageError(f"{path}: not a readable image (OpenCV could not decode it)")
    return check_image(np.asarray(image, dtype=np.uint8), name=str(path))


def encode_png_b64(gray: NDArray[np.uint8]) -> str:
    """A grey picture as base64 PNG text (maximum compression), as calibrations store pictures."""
    ok, png = cv2.imencode(".png", gray, [cv2.IMWRITE_PNG_COMPRESSION, 9])
    if not ok:
        raise ValueError("could not encode a picture as PNG")
    return base64.b64encode(png.tobytes()).decode("ascii")


def decode_png_b64(text: str, *, what: str) -> UInt8Image:
    """Inverse of `encode_png_b64`; `CorruptCalibrationError` naming `what` when it is not a PNG."""
    try:
        data = np.frombuffer(base64.b64decode(text, validate=True), dtype=np.uint8)
        img = cv2.imdecode(data, cv2.IMREAD_GRAYSCALE)
    except (ValueError, cv2.error) as exc:
        raise CorruptCalibrationError(f"{what} cannot be decoded ({exc})") from exc
    if img is None:
        raise CorruptCalibrationError(f"{what} is not a PNG image")
    return np.asarray(img, dtype=np.uint8)
