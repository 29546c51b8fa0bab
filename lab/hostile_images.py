"""Hostile image files, made on the spot: bombs in every format the reader takes, truncations, byte
mutations of real photos, odd colour spaces, bit depths and channel counts, EXIF rotations, zero sizes and
huge metadata. `lab/fuzz.py` feeds them to the reader and the service; the tests build their bombs here.

The bombs are small on disk: a header that claims a huge frame, followed by a little valid compressed data
(a decoder that trusts the header allocates the whole frame before it finds the data short). One real bomb
(every row present, zlib-compressed zeros) is made once per run, as a check that the data changes nothing.

Pillow writes the odd-but-valid files (CMYK JPEG, palette PNG, 1-bit TIFF...): it writes more modes than
OpenCV does. Everything is drawn from a seeded `random.Random`, so a case is named by (seed, index).
"""

from __future__ import annotations

import functools
import io
import random
import struct
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "vision" / "fixtures"


@dataclass(frozen=True)
class HostileCase:
    """One generated file: `kind` names the generator, `note` what this one is."""

    index: int
    kind: str
    note: str
    data: bytes


# ---- bombs: a header claiming a huge frame, and a little data ------------------------------------------


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb(width: int, height: int, *, colour_type: int = 2, bit_depth: int = 8, rows: int = 8) -> bytes:
    """A PNG whose header says width x height, with `rows` rows of zlib-compressed zeros (at most 1 MB of
    them unless rows=height, which makes a complete, valid file)."""
    channels = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour_type]
    row_bytes = 1 + (width * channels * bit_depth + 7) // 8
    raw_bytes = row_bytes * rows if rows >= height else min(row_bytes * rows, 1_000_000)
    packer = zlib.compressobj(9)
    block = b"\x00" * min(raw_bytes, 1_000_000)
    parts = [packer.compress(block) for _ in range(raw_bytes // max(1, len(block)))]
    idat = b"".join(parts) + packer.compress(b"\x00" * (raw_bytes % max(1, len(block)))) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    extra = _png_chunk(b"PLTE", b"\x00\x00\x00" * 2) if colour_type == 3 else b""
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + extra
        + _png_chunk(b"IDAT", idat)
        + _png_chunk(b"IEND", b"")
    )


@functools.cache
def _small_jpeg(progressive: bool) -> bytes:
    params = [cv2.IMWRITE_JPEG_QUALITY, 80, cv2.IMWRITE_JPEG_PROGRESSIVE, int(progressive)]
    ok, enc = cv2.imencode(".jpg", np.full((16, 16, 3), 128, np.uint8), params)
    if not ok:
        raise RuntimeError("OpenCV could not encode a 16x16 JPEG")
    return enc.tobytes()


def jpeg_bomb(width: int, height: int, *, progressive: bool = False) -> bytes:
    """A real 16x16 JPEG whose start-of-frame says width x height (each at most 65535)."""
    data = bytearray(_small_jpeg(progressive))
    at = 2
    while at + 4 <= len(data):
        marker = data[at + 1]
        length = struct.unpack(">H", data[at + 2 : at + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            data[at + 5 : at + 9] = struct.pack(">HH", height, width)
            return bytes(data)
        at += 2 + length
    raise RuntimeError("no start-of-frame marker in OpenCV's JPEG")


def tiff_bomb(
    width: int, height: int, *, samples: int = 1, bits: int = 8, tile_px: int | None = None
) -> bytes:
    """A little-endian TIFF whose one page says width x height, deflate-compressed, with one short strip
    (or tile) of zeros."""
    payload = zlib.compress(b"\x00" * 4096, 9)
    entries: list[tuple[int, int, int, int]] = [  # tag, type (3 SHORT, 4 LONG), count, value
        (256, 4, 1, width),
        (257, 4, 1, height),
        (258, 3, 1, bits),
        (259, 3, 1, 8),  # deflate
        (262, 3, 1, 2 if samples >= 3 else 1),  # RGB or min-is-black
        (277, 3, 1, samples),
        (284, 3, 1, 1),  # planar configuration: chunky
    ]
    data_offset = 8
    if tile_px is None:
        entries += [(273, 4, 1, data_offset), (278, 4, 1, height), (279, 4, 1, len(payload))]
    else:
        entries += [(322, 4, 1, tile_px), (323, 4, 1, tile_px), (324, 4, 1, data_offset)]
        entries += [(325, 4, 1, len(payload))]
    entries.sort()
    ifd_offset = data_offset + len(payload) + (len(payload) % 2)
    ifd = struct.pack("<H", len(entries))
    for tag, kind, count, value in entries:
        packed = struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
        ifd += struct.pack("<HHI", tag, kind, count) + packed
    ifd += struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", ifd_offset) + payload + b"\x00" * (len(payload) % 2) + ifd


def bmp_bomb(width: int, height: int, *, bits: int = 24) -> bytes:
    """A BMP whose header says width x height (a negative height is a top-down frame), with 64 bytes of
    pixels."""
    pixels = b"\x00" * 64
    palette = b"\x00\x00\x00\x00" * (2**bits if bits <= 8 else 0)
    offset = 14 + 40 + len(palette)
    header = struct.pack("<2sIHHI", b"BM", offset + len(pixels), 0, 0, offset)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, bits, 0, len(pixels), 2835, 2835, 0, 0)
    return header + info + palette + pixels


@functools.cache
def _small_webp(lossless: bool) -> bytes:
    out = io.BytesIO()
    frame = Image.new("RGB", (8, 8), (128, 64, 32))
    if lossless:
        frame.save(out, format="WEBP", lossless=True)
    else:  # an animation: its frames may be smaller than the VP8X canvas, which a still's may not
        frame.save(out, format="WEBP", save_all=True, append_images=[Image.new("RGB", (8, 8))], duration=50)
    return out.getvalue()


def webp_bomb(width: int, height: int, *, lossless: bool = False) -> bytes:
    """A real 8x8 WebP whose header says width x height: its VP8L frame (up to 2^14 a side) or its VP8X
    canvas (up to 2^24)."""
    data = bytearray(_small_webp(lossless))
    if lossless:  # RIFF header (12) + chunk header (8) + signature byte 0x2f: 14 + 14 bits, then 4 more
        rest = struct.unpack("<I", data[21:25])[0] & 0xF0000000
        data[21:25] = struct.pack("<I", rest | (width - 1) | ((height - 1) << 14))
    else:  # RIFF header (12) + chunk header (8) + flags (4): 24-bit width-1 and height-1
        data[24:30] = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return bytes(data)


@functools.cache
def _deflated_zeros(size: int) -> bytes:
    packer = zlib.compressobj(9)
    block = b"\x00" * 1_000_000
    return b"".join(packer.compress(block) for _ in range(size // len(block))) + packer.flush()


@functools.cache
def real_png_bomb(side_px: int = 20_000) -> bytes:
    """A complete, valid grey PNG of side x side zeros (every row present): about 400 KB for 20000."""
    return png_bomb(side_px, side_px, colour_type=0, rows=side_px)


# ---- real photos, re-encoded -----------------------------------------------------------------------------


@functools.cache
def fixture_photos() -> tuple[np.ndarray, ...]:
    """The committed test photos (tests/vision/fixtures) as BGR arrays; a drawn frame if there are none."""
    photos = [img for p in sorted(FIXTURES.glob("*.jpg")) if (img := cv2.imread(str(p))) is not None]
    if not photos:
        gradient = np.linspace(0, 255, 320 * 240 * 3).astype(np.uint8).reshape(240, 320, 3)
        photos = [gradient]
    return tuple(photos)


def _photo(rng: random.Random, *, max_side_px: int = 640) -> np.ndarray:
    img = rng.choice(fixture_photos())
    side = rng.choice((64, 160, 320, max_side_px))
    scale = min(1.0, side / max(img.shape[:2]))
    if scale < 1.0:
        img = cv2.resize(img, (max(1, int(img.shape[1] * scale)), max(1, int(img.shape[0] * scale))))
    return img


def _encode(img: np.ndarray, ext: str) -> bytes:
    ok, enc = cv2.imencode(ext, img)
    if not ok:
        raise RuntimeError(f"OpenCV could not encode {ext}")
    return enc.tobytes()


def _pillow(img: Image.Image, fmt: str, **params: object) -> bytes:
    out = io.BytesIO()
    img.save(out, format=fmt, **params)
    return out.getvalue()


SUPPORTED_EXTS = (".jpg", ".png", ".webp", ".bmp", ".tiff")


# ---- the generators: each (rng) -> (note, bytes) ---------------------------------------------------------


def _huge_side(rng: random.Random, top: int) -> tuple[int, int]:
    """A size over the limits: one long side, or both sides moderate but too many pixels."""
    roll = rng.random()
    if roll < 0.4:
        return rng.randint(12_001, top), rng.randint(1, min(top, 400))
    if roll < 0.8:
        side = rng.randint(7_100, min(top, 12_000))
        return side, side
    return rng.randint(12_001, top), rng.randint(12_001, top)


def gen_bomb_png(rng: random.Random) -> tuple[str, bytes]:
    """PNG bombs of every colour type and bit depth."""
    width, height = _huge_side(rng, 2**31 - 1 if rng.random() < 0.2 else 100_000)
    if rng.random() < 0.5:
        width, height = height, width
    colour_type, bit_depth = rng.choice([(0, 1), (0, 8), (0, 16), (2, 8), (2, 16), (3, 8), (4, 8), (6, 16)])
    return f"png {width}x{height} type {colour_type} depth {bit_depth}", png_bomb(
        width, height, colour_type=colour_type, bit_depth=bit_depth, rows=rng.choice((1, 8, 64))
    )


def gen_bomb_jpeg(rng: random.Random) -> tuple[str, bytes]:
    """JPEG bombs: a start-of-frame of up to 65535 x 65535."""
    width, height = _huge_side(rng, 65_535)
    progressive = rng.random() < 0.5
    return f"jpeg {width}x{height} progressive={progressive}", jpeg_bomb(
        width, height, progressive=progressive
    )


def gen_bomb_tiff(rng: random.Random) -> tuple[str, bytes]:
    """TIFF bombs: strips or tiles, 1 to 4 samples of 8 or 16 bits."""
    width, height = _huge_side(rng, 2**31 - 1 if rng.random() < 0.2 else 200_000)
    samples, bits = rng.choice([(1, 8), (1, 16), (3, 8), (3, 16), (4, 8)])
    tile = rng.choice((None, None, 16, 256, 4096))
    return f"tiff {width}x{height} {samples}x{bits} bit tile={tile}", tiff_bomb(
        width, height, samples=samples, bits=bits, tile_px=tile
    )


def gen_bomb_bmp(rng: random.Random) -> tuple[str, bytes]:
    """BMP bombs, bottom-up and top-down, 1 to 32 bits."""
    width, height = _huge_side(rng, 2**31 - 1 if rng.random() < 0.2 else 200_000)
    bits = rng.choice((1, 8, 24, 32))
    height = -height if rng.random() < 0.3 else height
    return f"bmp {width}x{height} {bits} bit", bmp_bomb(width, height, bits=bits)


def gen_bomb_webp(rng: random.Random) -> tuple[str, bytes]:
    """WebP bombs: a VP8X canvas (up to 16M a side) or a VP8L frame (up to 16384)."""
    lossless = rng.random() < 0.5
    width, height = _huge_side(rng, 16_384 if lossless else 2**24)
    return f"webp {width}x{height} lossless={lossless}", webp_bomb(width, height, lossless=lossless)


def gen_bomb_real(rng: random.Random) -> tuple[str, bytes]:
    """The one complete PNG bomb (20000 x 20000, every row there)."""
    return "png 20000x20000, all rows (zeros)", real_png_bomb()


def gen_other_format(rng: random.Random) -> tuple[str, bytes]:
    """Formats OpenCV decodes but the reader does not take, and things that are no image at all."""
    choices: list[tuple[str, bytes]] = [
        ("pgm 30000x30000", b"P5\n30000 30000\n255\n" + b"\x00" * 64),
        ("ppm 65535x65535", b"P6 65535 65535 65535\n" + b"\x00" * 64),
        ("pam", b"P7\nWIDTH 40000\nHEIGHT 40000\nDEPTH 4\nMAXVAL 255\nTUPLTYPE RGB_ALPHA\nENDHDR\n"),
        ("pfm", b"PF\n30000 30000\n-1.0\n" + b"\x00" * 64),
        ("sun raster", struct.pack(">IIIIIIII", 0x59A66A95, 30000, 30000, 24, 0, 1, 0, 0)),
        ("radiance hdr", b"#?RADIANCE\nFORMAT=32-bit_rle_rgbe\n\n-Y 30000 +X 30000\n" + b"\x00" * 64),
        ("gif", b"GIF89a" + struct.pack("<HH", 65535, 65535) + b"\x00" * 32),
        ("jpeg 2000", b"\x00\x00\x00\x0cjP  \r\n\x87\n" + b"\x00" * 64),
        ("openexr", b"\x76\x2f\x31\x01" + b"\x02\x00\x00\x00" + b"\x00" * 64),
        ("svg", b'<svg xmlns="http://www.w3.org/2000/svg" width="99999" height="99999"/>'),
        ("pdf", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n"),
        ("zip", b"PK\x03\x04" + b"\x00" * 64),
        ("text", b"hello, I am not an image"),
        ("empty", b""),
        ("one byte", b"\xff"),
        ("magic only jpeg", b"\xff\xd8\xff"),
        ("magic only png", b"\x89PNG\r\n\x1a\n"),
        ("riff not webp", b"RIFF\x10\x00\x00\x00WAVEfmt "),
        ("random", rng.randbytes(rng.randint(1, 4096))),
    ]
    return rng.choice(choices)


def gen_truncated(rng: random.Random) -> tuple[str, bytes]:
    """A real photo in a supported format, cut at a random byte."""
    ext = rng.choice(SUPPORTED_EXTS)
    data = _encode(_photo(rng), ext)
    cut = rng.randint(1, len(data) - 1)
    return f"{ext} cut at {cut}/{len(data)}", data[:cut]


def gen_mutated(rng: random.Random) -> tuple[str, bytes]:
    """A real photo with bytes flipped, overwritten, inserted, deleted or repeated."""
    ext = rng.choice(SUPPORTED_EXTS)
    data = bytearray(_encode(_photo(rng, max_side_px=320), ext))
    ops = []
    for _ in range(rng.randint(1, 12)):
        at = rng.randrange(len(data))
        op = rng.choice(("flip", "byte", "insert", "delete", "repeat", "ff"))
        if op == "flip":
            data[at] ^= 1 << rng.randrange(8)
        elif op == "byte":
            data[at] = rng.randrange(256)
        elif op == "insert":
            data[at:at] = rng.randbytes(rng.randint(1, 64))
        elif op == "delete":
            del data[at : at + rng.randint(1, 64)]
        elif op == "repeat":
            data[at:at] = data[at : at + rng.randint(1, 512)] * rng.randint(2, 8)
        else:
            data[at : at + 4] = b"\xff\xff\xff\xff"
        ops.append(op)
        if not data:
            break
    return f"{ext} mutated: {','.join(ops)}", bytes(data)


def gen_odd_pixels(rng: random.Random) -> tuple[str, bytes]:
    """Valid files of odd colour spaces, bit depths and channel counts."""
    bgr = _photo(rng, max_side_px=320)
    rgb = Image.fromarray(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    choice = rng.randrange(22)
    if choice == 0:
        return "jpeg cmyk", _pillow(rgb.convert("CMYK"), "JPEG")
    if choice == 1:
        return "jpeg grey", _pillow(rgb.convert("L"), "JPEG")
    if choice == 2:
        return "jpeg ycbcr 4:4:4", _pillow(rgb, "JPEG", subsampling=0)
    if choice == 3:
        return "png palette", _pillow(rgb.convert("P"), "PNG")
    if choice == 4:
        return "png 1 bit", _pillow(rgb.convert("1"), "PNG")
    if choice == 5:
        return "png grey+alpha", _pillow(rgb.convert("LA"), "PNG")
    if choice == 6:
        return "png 16-bit grey", _pillow(rgb.convert("I;16"), "PNG")
    if choice == 7:
        bgra16 = cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA).astype(np.uint16) * 257
        return "png 16-bit rgba", _encode(bgra16, ".png")
    if choice == 8:
        return "tiff cmyk", _pillow(rgb.convert("CMYK"), "TIFF")
    if choice == 9:
        return "tiff 1 bit", _pillow(rgb.convert("1"), "TIFF")
    if choice == 10:
        return "tiff 16-bit", _encode(bgr.astype(np.uint16) * 257, ".tiff")
    if choice == 11:
        return "tiff float32", _encode(bgr.astype(np.float32) / 255, ".tiff")
    if choice == 12:
        return "tiff lab", _pillow(rgb.convert("LAB"), "TIFF")
    if choice == 13:
        return "tiff ycbcr jpeg", _pillow(rgb, "TIFF", compression="jpeg")
    if choice == 14:
        return "tiff multi-page", _pillow(rgb, "TIFF", save_all=True, append_images=[rgb.convert("L")] * 3)
    if choice == 15:
        return "tiff 32-bit int", _pillow(rgb.convert("I"), "TIFF")
    if choice == 16:
        return "bmp 1 bit", _pillow(rgb.convert("1"), "BMP")
    if choice == 17:
        return "bmp palette", _pillow(rgb.convert("P"), "BMP")
    if choice == 18:
        return "bmp 32-bit", _encode(cv2.cvtColor(bgr, cv2.COLOR_BGR2BGRA), ".bmp")
    if choice == 19:
        return "webp lossless rgba", _pillow(rgb.convert("RGBA"), "WEBP", lossless=True)
    if choice == 20:
        frames = [rgb, rgb.convert("L").convert("RGB")]
        return "webp animated", _pillow(rgb, "WEBP", save_all=True, append_images=frames)
    return "png rgba", _pillow(rgb.convert("RGBA"), "PNG")


def gen_exif_rotation(rng: random.Random) -> tuple[str, bytes]:
    """A JPEG (or TIFF) with an EXIF orientation, valid (1-8) or not."""
    bgr = _photo(rng, max_side_px=320)
    rgb = Image.fromarray(cv2.cvtColor(bgr[:, : max(1, bgr.shape[1] // 2)], cv2.COLOR_BGR2RGB))
    orientation = rng.choice((1, 2, 3, 4, 5, 6, 7, 8, 0, 9, 65535))
    exif = Image.Exif()
    exif[0x0112] = orientation
    fmt = rng.choice(("JPEG", "JPEG", "PNG", "WEBP"))
    return f"{fmt.lower()} exif orientation {orientation}", _pillow(rgb, fmt, exif=exif.tobytes())


def gen_extreme_size(rng: random.Random) -> tuple[str, bytes]:
    """Valid frames of extreme shape within the limits: 1x1, 1xN, Nx1, thin strips, a few near 50 MP."""
    roll = rng.random()
    if roll < 0.01:
        width, height = 7_000, 7_000  # near the pixel limit: a real decode of 49 MP
    elif roll < 0.4:
        width, height = 1, rng.randint(1, 12_000)
    elif roll < 0.8:
        width, height = rng.randint(1, 12_000), rng.randint(1, 3)
    else:
        width, height = rng.randint(1, 64), rng.randint(1, 64)
    if rng.random() < 0.5:
        width, height = height, width
    img = np.full((height, width, 3), rng.randrange(256), np.uint8)
    ext = rng.choice(SUPPORTED_EXTS)
    return f"{ext} {width}x{height}", _encode(img, ext)


def gen_zero_size(rng: random.Random) -> tuple[str, bytes]:
    """Headers of zero width or height, in every format."""
    fmt = rng.randrange(5)
    width, height = rng.choice([(0, 0), (0, 100), (100, 0)])
    if fmt == 0:
        return f"png {width}x{height}", png_bomb(width, height)
    if fmt == 1:
        return f"jpeg {width}x{height}", jpeg_bomb(width, height)
    if fmt == 2:
        return f"tiff {width}x{height}", tiff_bomb(width, height)
    if fmt == 3:
        return f"bmp {width}x{height}", bmp_bomb(width, height)
    return f"webp {max(1, width)}x{max(1, height)}", webp_bomb(max(1, width), max(1, height))


def gen_huge_metadata(rng: random.Random) -> tuple[str, bytes]:
    """Big or bomb-like metadata around a small valid frame."""
    bgr = _photo(rng, max_side_px=160)
    choice = rng.randrange(6)
    if choice <= 1:  # PNG text chunks: a big tEXt, or a zTXt that inflates to 200 MB
        png = _encode(bgr, ".png")
        if choice == 0:
            chunk = _png_chunk(b"tEXt", b"Comment\x00" + b"A" * rng.randint(1_000_000, 8_000_000))
            note = "png 1-8 MB tEXt"
        else:
            chunk = _png_chunk(b"zTXt", b"Comment\x00\x00" + _deflated_zeros(200_000_000))
            note = "png zTXt inflating to 200 MB"
        return note, png[:33] + chunk + png[33:]
    if choice == 2:  # an iCCP profile bomb
        png = _encode(bgr, ".png")
        chunk = _png_chunk(b"iCCP", b"icc\x00\x00" + _deflated_zeros(100_000_000))
        return "png iCCP inflating to 100 MB", png[:33] + chunk + png[33:]
    if choice == 3:  # JPEG with many big comment segments
        jpg = _encode(bgr, ".jpg")
        count = rng.randint(10, 300)
        segments = (b"\xff\xfe" + struct.pack(">H", 65535) + b"C" * 65533) * count
        return f"jpeg {count} x 64 KB comments", jpg[:2] + segments + jpg[2:]
    if choice == 4:  # EXIF whose IFD claims 65535 entries
        jpg = _encode(bgr, ".jpg")
        tiff = b"II*\x00" + struct.pack("<I", 8) + struct.pack("<H", 65535) + b"\x12\x01\x03\x00" * 64
        app1 = b"Exif\x00\x00" + tiff
        segment = b"\xff\xe1" + struct.pack(">H", len(app1) + 2) + app1
        return "jpeg exif 65535 entries", jpg[:2] + segment + jpg[2:]
    # TIFF whose tag claims 2^30 values past the end of the file
    page = bytearray(_encode(bgr, ".tiff"))
    ifd = struct.unpack("<I", page[4:8])[0]
    count = struct.unpack("<H", page[ifd : ifd + 2])[0]
    entry = ifd + 2 + 12 * rng.randrange(count)
    page[entry + 4 : entry + 12] = struct.pack("<II", 2**30, 0x7FFFFFF0)
    return "tiff tag of 2^30 values", bytes(page)


def gen_jpeg_scans(rng: random.Random) -> tuple[str, bytes]:
    """Progressive JPEGs whose last scan repeats: a CPU bomb when repeated thousands of times."""
    ok, enc = cv2.imencode(
        ".jpg", _photo(rng, max_side_px=640), [cv2.IMWRITE_JPEG_PROGRESSIVE, 1, cv2.IMWRITE_JPEG_QUALITY, 90]
    )
    if not ok:
        raise RuntimeError("OpenCV could not encode a progressive JPEG")
    data = enc.tobytes()
    last_scan = data.rindex(b"\xff\xda")
    scan = data[last_scan:-2]
    repeats = rng.choice((5, 50, 200, 2_000))
    return f"progressive jpeg, last scan x{repeats}", data[:last_scan] + scan * repeats + b"\xff\xd9"


GENERATORS: dict[str, Callable[[random.Random], tuple[str, bytes]]] = {
    "bomb_png": gen_bomb_png,
    "bomb_jpeg": gen_bomb_jpeg,
    "bomb_tiff": gen_bomb_tiff,
    "bomb_bmp": gen_bomb_bmp,
    "bomb_webp": gen_bomb_webp,
    "bomb_real": gen_bomb_real,
    "other_format": gen_other_format,
    "truncated": gen_truncated,
    "mutated": gen_mutated,
    "odd_pixels": gen_odd_pixels,
    "exif_rotation": gen_exif_rotation,
    "extreme_size": gen_extreme_size,
    "zero_size": gen_zero_size,
    "huge_metadata": gen_huge_metadata,
    "jpeg_scans": gen_jpeg_scans,
}
# How often each kind comes after the first round (which has one of each): mutations and truncations
# most, as they explore the most; the one real bomb rarely, as it is always the same file.
WEIGHTS: dict[str, float] = {
    "bomb_png": 6,
    "bomb_jpeg": 6,
    "bomb_tiff": 6,
    "bomb_bmp": 4,
    "bomb_webp": 4,
    "bomb_real": 0.2,
    "other_format": 5,
    "truncated": 15,
    "mutated": 30,
    "odd_pixels": 8,
    "exif_rotation": 4,
    "extreme_size": 4,
    "zero_size": 2,
    "huge_metadata": 1.5,
    "jpeg_scans": 1.5,
}


def generate(count: int, *, seed: int = 0) -> Iterator[HostileCase]:
    """`count` hostile files: one of each kind first, then kinds drawn by WEIGHTS; case i is the same for a
    given seed whatever the count."""
    kinds = list(GENERATORS)
    for index in range(count):
        rng = random.Random(f"{seed}:{index}")
        kind = kinds[index] if index < len(kinds) else rng.choices(kinds, [WEIGHTS[k] for k in kinds])[0]
        note, data = GENERATORS[kind](rng)
        yield HostileCase(index=index, kind=kind, note=note, data=data)
