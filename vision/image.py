"""Decode image files and uploads into BGR frames, with a typed error for anything that is not an image."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from vision.types import ImageArray

MAX_IMAGE_BYTES = 40 * 1024 * 1024
MAX_SIDE_PX = 12_000


class UnreadableImageError(ValueError):
    """The bytes are empty, not an image format OpenCV decodes, corrupt, or absurdly large."""


def decode_image(data: bytes, *, source: str = "upload") -> ImageArray:
    """Decode encoded image bytes (JPEG, PNG, BMP, TIFF, WebP...) to an (H, W, 3) uint8 BGR array."""
    if not data:
        raise UnreadableImageError(f"{source}: empty file")
    if len(data) > MAX_IMAGE_BYTES:
        raise UnreadableImageError(f"{source}: {len(data)} bytes is over the {MAX_IMAGE_BYTES}-byte limit")
    buf = np.frombuffer(data, dtype=np.uint8)
    try:
        img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    except cv2.error as exc:
        raise UnreadableImageError(f"{source}: not a readable image ({exc.msg})") from exc
    if img is None or img.size == 0:
        raise UnreadableImageError(f"{source}: not a readable image (unknown format or corrupt data)")
    if max(img.shape[:2]) > MAX_SIDE_PX:
        raise UnreadableImageError(f"{source}: {img.shape[1]}x{img.shape[0]} is larger than {MAX_SIDE_PX} px")
    out: ImageArray = np.ascontiguousarray(img)
    return out


def load_image(path: Path) -> ImageArray:
    """Read and decode an image file."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UnreadableImageError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    return decode_image(data, source=str(path))
