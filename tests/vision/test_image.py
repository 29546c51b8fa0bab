"""Decoding uploads and files: anything that is not an image is a typed error, never a crash."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from lab.hostile_images import bmp_bomb, jpeg_bomb, png_bomb, tiff_bomb, webp_bomb
from tests.conftest import REPO_ROOT
from tests.vision.bomb_cost import BOMBS, cost_of
from vision.image import (
    ImageHeader,
    ImageTooLargeError,
    UnreadableImageError,
    UnsupportedImageFormatError,
    decode_image,
    load_image,
    read_header,
)


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


# ---- hostile input: refused from the header, before decoding ---------------------------------------------


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bombs_are_refused_from_the_header_fast_and_small(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.bin"
    path.write_bytes(BOMBS[name]())
    assert path.stat().st_size < 100_000
    cost = cost_of("decode", path)
    assert cost["outcome"].startswith("refused:") and "(refused unread)" in cost["outcome"], cost
    assert cost["seconds"] < 0.2, cost
    assert cost["extra_mb"] < 100, cost


def test_the_cost_measure_sees_a_real_decode(tmp_path: Path) -> None:
    # A 6000x6000 grey PNG is within the limits and is decoded: 108 MB as BGR. The measure must show it,
    # or the figures above prove nothing.
    path = tmp_path / "big.png"
    path.write_bytes(png_bomb(6000, 6000, colour_type=0, rows=6000))
    cost = cost_of("decode", path)
    assert cost["outcome"] == "read (6000, 6000, 3)", cost
    assert cost["extra_mb"] > 95, cost


@pytest.mark.parametrize(
    ("data", "error", "message"),
    [
        (png_bomb(12_001, 10), ImageTooLargeError, "larger than 12000 px"),  # one side over
        (png_bomb(7072, 7072), ImageTooLargeError, "over the 50,000,000-pixel limit"),  # 50.01 MP
        (jpeg_bomb(20_000, 8, progressive=True), ImageTooLargeError, "larger than 12000 px"),
        (bmp_bomb(8, -20_000), ImageTooLargeError, "larger than 12000 px"),  # top-down BMP
        (webp_bomb(16_000, 16), ImageTooLargeError, "larger than 12000 px"),  # VP8X canvas
        (webp_bomb(16_000, 16_000), ImageTooLargeError, "exceeds limit"),  # Pillow's own bomb check
        (webp_bomb(16_384, 2, lossless=True), ImageTooLargeError, "larger than 12000 px"),  # VP8L
        (tiff_bomb(8, 8, tile_px=65_536), UnreadableImageError, "not a readable image"),  # tiles > frame
        (png_bomb(0, 100), UnreadableImageError, "not a readable image"),  # zero width
        (b"P5\n30000 30000\n255\n" + bytes(64), UnsupportedImageFormatError, "first bytes"),  # PGM
        (b"GIF89a\xff\xff\xff\xff" + bytes(32), UnsupportedImageFormatError, "first bytes"),  # GIF
    ],
)
def test_hostile_headers_are_refused_before_decoding(
    data: bytes, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        decode_image(data, source="x")


def test_limits_are_parameters() -> None:
    data = png_bomb(300, 200, rows=200)
    assert decode_image(data).shape == (200, 300, 3)
    with pytest.raises(ImageTooLargeError, match="larger than 299 px"):
        decode_image(data, max_side_px=299)
    with pytest.raises(ImageTooLargeError, match="over the 59,999-pixel limit"):
        decode_image(data, max_pixels=59_999)


@pytest.mark.parametrize(
    ("ext", "fmt"), [(".jpg", "JPEG"), (".png", "PNG"), (".webp", "WebP"), (".bmp", "BMP"), (".tiff", "TIFF")]
)
def test_header_is_read_without_decoding(ext: str, fmt: str) -> None:
    ok, enc = cv2.imencode(ext, np.zeros((7, 11, 3), np.uint8))
    assert ok
    assert read_header(enc.tobytes()) == ImageHeader(format=fmt, width_px=11, height_px=7)


def test_exif_rotation_is_applied_and_checked() -> None:
    from PIL import Image

    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees: a 40x10 file is a 10x40 frame
    out = io.BytesIO()
    Image.new("RGB", (40, 10)).save(out, format="JPEG", exif=exif.tobytes())
    assert decode_image(out.getvalue()).shape == (40, 10, 3)


def test_a_jpeg_of_too_many_scans_is_refused() -> None:
    ok, enc = cv2.imencode(".jpg", np.zeros((16, 16, 3), np.uint8), [cv2.IMWRITE_JPEG_PROGRESSIVE, 1])
    assert ok
    data = enc.tobytes()
    last = data.rindex(b"\xff\xda")
    bomb = data[:last] + data[last:-2] * 200 + b"\xff\xd9"
    with pytest.raises(ImageTooLargeError, match="scans, over the 100-scan limit"):
        decode_image(bomb)


def test_opencv_own_limit_is_a_typed_error_too(tmp_path: Path) -> None:
    # A deployment may set OpenCV's limit below ours: OpenCV then refuses, and that is still our error.
    path = tmp_path / "small.png"
    path.write_bytes(png_bomb(100, 100, rows=100))
    code = (
        "import sys; from pathlib import Path; from vision.image import load_image, UnreadableImageError\n"
        "try: load_image(Path(sys.argv[1]))\n"
        "except UnreadableImageError as exc: print('refused', exc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "OPENCV_IO_MAX_IMAGE_PIXELS": "1000"}
    command = [sys.executable, "-c", code, str(path)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=60, check=True)
    assert done.stdout.startswith("refused") and "not a readable image" in done.stdout, done
