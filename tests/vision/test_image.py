"""Decoding uploads and files: anything that is not an image is a typed error, never a crash."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.image import UnreadableImageError, decode_image, load_image


def _png() -> bytes:
    ok, enc = cv2.imencode(".png", np.full((8, 10, 3), 200, np.uint8))
    assert ok
    return bytes(enc)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "empty file"),  # zero bytes
        (b"hello, I am text", "not a readable image"),  # not an image format
        (_png()[:40], "not a readable image"),  # a PNG cut short
        (b"\xff\xd8\xff\xe0" + b"\x00" * 64, "not a readable image"),  # a JPEG header and nothing else
    ],
)
def test_bad_bytes_raise_unreadable_image(data: bytes, message: str) -> None:
    with pytest.raises(UnreadableImageError, match=message):
        decode_image(data, source="x.jpg")


def test_good_png_decodes_to_bgr_uint8() -> None:
    img = decode_image(_png())
    assert img.shape == (8, 10, 3) and img.dtype == np.uint8


def test_missing_file_is_unreadable(tmp_path: Path) -> None:
    with pytest.raises(UnreadableImageError, match="cannot read file"):
        load_image(tmp_path / "nope.jpg")


def test_grey_png_becomes_three_channels(tmp_path: Path) -> None:
    path = tmp_path / "grey.png"
    cv2.imwrite(str(path), np.full((5, 5), 90, np.uint8))
    assert load_image(path).shape == (5, 5, 3)
