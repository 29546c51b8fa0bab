"""Decode image files and uploads into BGR frames, with a typed error for anything that is not an image.

Hostile input is refused before it costs anything. The format is told by the file's first bytes (its magic
number), never by its name or a declared content type, and only the five formats a camera sends are
accepted: JPEG, PNG, WebP, BMP and TIFF (OpenCV would also decode PNM, Sun raster, Radiance HDR, GIF...,
each one more door for a bomb). The width and height are read from the header alone, by Pillow's format
plugins (constructing a plugin's `ImageFile` parses the header and decodes no pixel), and a frame larger
than `max_side_px` on a side or `max_pixels` in all is refused before OpenCV allocates a byte for it: a
2.6 MB PNG that claims 30000x30000 pixels otherwise costs OpenCV 2.7 GB and half a minute. A JPEG with
more scans than `MAX_JPEG_SCANS` is refused too: each progressive scan is a pass over the whole frame, so a
small file of thousands of scans is a CPU bomb. OpenCV's own limits (`OPENCV_IO_MAX_IMAGE_PIXELS`, 2^30
pixels by default, and 2^20 px a side) are far above these, so they never decide; where a deployment sets
them lower, OpenCV's refusal is this module's typed error too. The decoded frame is checked again against
the limits, in case OpenCV reads a header otherwise than Pillow.

An upload's declared media type is a claim the bytes must back (`check_declared_type`, the one upload rule
of every image route; api/uploads.py maps it to HTTP): the bytes decide the format; a declared type that
names another is refused, naming both; a type that says nothing (none, `application/octet-stream`) leaves
the bytes to decide alone. A corrupt file of a known format is said in these words ("a corrupt PNG file:
its header cannot be read"), never in the decoding library's.

Errors (all `ValueError`s, so callers that catch `UnreadableImageError` catch them all):

    UnreadableImageError             empty, corrupt, or otherwise not readable (an upload answers 422)
    ├── UnsupportedImageFormatError  the first bytes are none of JPEG, PNG, WebP, BMP, TIFF (415)
    │   └── DeclaredTypeError        the bytes are one format, declared as another type (415)
    └── ImageTooLargeError           the header (or the decoded frame) is over a size limit (422)
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from PIL import (
    BmpImagePlugin,
    Image,
    ImageFile,
    JpegImagePlugin,
    PngImagePlugin,
    TiffImagePlugin,
    WebPImagePlugin,
)

from vision.types import ImageArray

MAX_IMAGE_BYTES = 40 * 1024 * 1024
MAX_SIDE_PX = 12_000
# 50 MP: a 48 MP phone photo (8000x6000) is read; its BGR frame is 144 MB.
MAX_PIXELS = 50_000_000
# A progressive JPEG has about ten scans; libjpeg's own tools cap them at a hundred (djpeg -maxscans).
MAX_JPEG_SCANS = 100
SUPPORTED_FORMATS = ("JPEG", "PNG", "WebP", "BMP", "TIFF")

_PLUGINS: dict[str, type[ImageFile.ImageFile]] = {
    "JPEG": JpegImagePlugin.JpegImageFile,
    "PNG": PngImagePlugin.PngImageFile,
    "WebP": WebPImagePlugin.WebPImageFile,
    "BMP": BmpImagePlugin.BmpImageFile,
    "TIFF": TiffImagePlugin.TiffImageFile,
}
_TIFF_MAGIC = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF, both byte orders
# The media type of each format, and the other names clients give them.
MEDIA_TYPES = {
    "JPEG": "image/jpeg",
    "PNG": "image/png",
    "WebP": "image/webp",
    "BMP": "image/bmp",
    "TIFF": "image/tiff",
}
_MEDIA_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "image/x-png": "image/png",
    "image/x-ms-bmp": "image/bmp",
    "image/x-bmp": "image/bmp",
    "image/tif": "image/tiff",
}
# Declared types that claim nothing about the bytes: the bytes decide alone.
NO_CLAIM = frozenset({"", "application/octet-stream"})


class UnreadableImageError(ValueError):
    """The bytes are empty, not an image format this reader takes, corrupt, or absurdly large."""


class UnsupportedImageFormatError(UnreadableImageError):
    """The first bytes are not those of a JPEG, PNG, WebP, BMP or TIFF file (whatever the name or type)."""


class DeclaredTypeError(UnsupportedImageFormatError):
    """The bytes are an image of one format, declared as another type (or as no image at all)."""


class ImageTooLargeError(UnreadableImageError):
    """The image's header (or its decoded frame) is over the byte, side or pixel-count limit."""


@dataclass(frozen=True)
class ImageHeader:
    """What an image file says about itself before any pixel is decoded."""

    format: str
    width_px: int
    height_px: int

    @property
    def pixels(self) -> int:
        """Width times height."""
        return self.width_px * self.height_px


def sniff_format(data: bytes) -> str | None:
    """The format named by the magic number at the start of `data` (one of SUPPORTED_FORMATS), or None."""
    if data.startswith(b"\xff\xd8\xff"):
        return "JPEG"
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "PNG"
    if data.startswith(b"RIFF") and data[8:12] == b"WEBP":
        return "WebP"
    if data.startswith(b"BM"):
        return "BMP"
    if data.startswith(_TIFF_MAGIC):
        return "TIFF"
    return None


def declared_media_type(content_type: str | None) -> str:
    """A declared Content-Type as its bare media type, lower case, aliases resolved ("" for none)."""
    media = (content_type or "").split(";")[0].strip().lower()
    return _MEDIA_ALIASES.get(media, media)


def _listed(names: Sequence[str]) -> str:
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def check_declared_type(
    data: bytes, *, declared_type: str | None, source: str, formats: Sequence[str] = SUPPORTED_FORMATS
) -> str:
    """The format of an upload, told by its bytes and backed by its declared type: the one upload rule.

    Raises:
        UnreadableImageError: the upload is empty.
        UnsupportedImageFormatError: the bytes are none of `formats`.
        DeclaredTypeError: the bytes are one of `formats`, declared as another type.
    """
    declared = declared_media_type(declared_type)
    if not data:
        raise UnreadableImageError(f"{source}: empty file")
    found = sniff_format(data)
    if found is None or found not in formats:
        what = "none of these" if found is None else f"a {found} image ({MEDIA_TYPES[found]})"
        raise UnsupportedImageFormatError(
            f"{source} must be a {_listed(formats)} image, told by its bytes: they are {what} "
            f"(declared {declared or 'no type'!r}); this route takes "
            f"{', '.join(MEDIA_TYPES[f] for f in formats)}"
        )
    if declared not in NO_CLAIM and declared != MEDIA_TYPES[found]:
        raise DeclaredTypeError(
            f"{source} is declared {declared!r}, but its bytes are a {found} image ({MEDIA_TYPES[found]}): "
            f"send it as {MEDIA_TYPES[found]}, or as application/octet-stream to let the bytes decide"
        )
    return found


def read_header(data: bytes, *, source: str = "upload") -> ImageHeader:
    """Format, width and height from the header alone; no pixel is decoded.

    Raises:
        UnsupportedImageFormatError: the first bytes are none of the supported formats.
        UnreadableImageError: the header of a supported format is corrupt.
    """
    fmt = sniff_format(data)
    if fmt is None:
        raise UnsupportedImageFormatError(
            f"{source}: not a readable image (its first bytes are not those of a "
            f"{', '.join(SUPPORTED_FORMATS[:-1])} or {SUPPORTED_FORMATS[-1]} file)"
        )
    try:
        with _PLUGINS[fmt](io.BytesIO(data)) as header:
            width_px, height_px = header.size
    except Image.DecompressionBombError as exc:  # Pillow's WebP plugin checks sizes over 179 MP itself
        raise ImageTooLargeError(f"{source}: {exc} (refused unread)") from exc
    # Pillow's plugins raise many types on a corrupt header (SyntaxError, OSError, ValueError, EOFError,
    # struct.error...): each means the same here, and each becomes this typed error, never a crash. Their
    # words ("not identified by this driver") are the library's, not a reader's: they stay in __cause__.
    except Exception as exc:
        raise UnreadableImageError(
            f"{source}: not a readable image: a corrupt {fmt} file (its header cannot be read)"
        ) from exc
    return ImageHeader(format=fmt, width_px=width_px, height_px=height_px)


def check_size(
    *,
    width_px: int,
    height_px: int,
    source: str,
    max_side_px: int = MAX_SIDE_PX,
    max_pixels: int = MAX_PIXELS,
) -> None:
    """Raise ImageTooLargeError (UnreadableImageError for a zero side) unless the size is within limits."""
    if width_px <= 0 or height_px <= 0:
        raise UnreadableImageError(f"{source}: not a readable image ({width_px}x{height_px} pixels)")
    if max(width_px, height_px) > max_side_px:
        raise ImageTooLargeError(
            f"{source}: {width_px}x{height_px} is larger than {max_side_px} px on a side (refused unread)"
        )
    if width_px * height_px > max_pixels:
        raise ImageTooLargeError(
            f"{source}: {width_px}x{height_px} is {width_px * height_px:,} pixels, over the "
            f"{max_pixels:,}-pixel limit (refused unread)"
        )


def decode_image(
    data: bytes, *, source: str = "upload", max_side_px: int = MAX_SIDE_PX, max_pixels: int = MAX_PIXELS
) -> ImageArray:
    """Decode encoded image bytes (JPEG, PNG, WebP, BMP or TIFF) to an (H, W, 3) uint8 BGR array.

    The header is read and checked against the limits first (see the module docstring); EXIF orientation is
    applied, as OpenCV does.
    """
    if not data:
        raise UnreadableImageError(f"{source}: empty file")
    if len(data) > MAX_IMAGE_BYTES:
        raise ImageTooLargeError(f"{source}: {len(data)} bytes is over the {MAX_IMAGE_BYTES}-byte limit")
    header = read_header(data, source=source)
    check_size(
        width_px=header.width_px,
        height_px=header.height_px,
        source=source,
        max_side_px=max_side_px,
        max_pixels=max_pixels,
    )
    # Markers are never stuffed, so counting FF DA counts the start-of-scan markers (entropy-coded data
    # escapes every FF byte as FF 00).
    if header.format == "JPEG" and (scans := data.count(b"\xff\xda")) > MAX_JPEG_SCANS:
        raise ImageTooLargeError(f"{source}: a JPEG of {scans} scans, over the {MAX_JPEG_SCANS}-scan limit")
    buf = np.frombuffer(data, dtype=np.uint8)
    try:
        img = cv2.imdecode(buf, cv2.IMREAD_COLOR)
    except cv2.error as exc:  # OpenCV's words stay in __cause__, as Pillow's above
        raise UnreadableImageError(
            f"{source}: not a readable image: a corrupt {header.format} file (its pixels cannot be decoded)"
        ) from exc
    if img is None or img.size == 0:
        raise UnreadableImageError(
            f"{source}: not a readable image: a corrupt {header.format} file (its pixels cannot be decoded)"
        )
    check_size(
        width_px=img.shape[1],
        height_px=img.shape[0],
        source=source,
        max_side_px=max_side_px,
        max_pixels=max_pixels,
    )
    out: ImageArray = np.ascontiguousarray(img)
    return out


def load_image(path: Path, *, max_side_px: int = MAX_SIDE_PX, max_pixels: int = MAX_PIXELS) -> ImageArray:
    """Read and decode an image file (no more than MAX_IMAGE_BYTES of it is read)."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_IMAGE_BYTES + 1)
    except OSError as exc:
        raise UnreadableImageError(f"{path}: cannot read file ({exc.strerror or exc})") from exc
    return decode_image(data, source=str(path), max_side_px=max_side_px, max_pixels=max_pixels)
