"""The one upload rule of every route that takes a file, as the service's errors (api/errors.py).

The bytes decide what an upload is (vision/image.py, `check_declared_type`): a declared type that names
another is refused (415, naming both); bytes of no type the route takes are refused (415); a corrupt file of
a known type is refused (422); each in the project's words. `POST /v1/reads` and `POST /v1/evidence` take
images; `POST /v1/tables/{id}/enrollment` takes a zip archive, by the same rule.
"""

from __future__ import annotations

import io
import zipfile
from typing import TYPE_CHECKING

from api.errors import UnprocessableError, UnsupportedMediaError

if TYPE_CHECKING:
    from vision.types import ImageArray

# The zip archive's media type, the other names clients give it, and its magic numbers (a local file header;
# the end of the central directory of an empty archive).
ZIP_MEDIA_TYPE = "application/zip"
_ZIP_ALIASES = frozenset({ZIP_MEDIA_TYPE, "application/x-zip-compressed", "application/x-zip"})
_ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def decode_upload(
    data: bytes, *, declared_type: str | None, source: str, max_side_px: int, max_pixels: int
) -> ImageArray:
    """The frame of an uploaded image, by the one rule (415: not an image, or not the declared one; 422:
    empty, corrupt or over the size limits)."""
    from vision.image import (
        UnreadableImageError,
        UnsupportedImageFormatError,
        check_declared_type,
        decode_image,
    )

    try:
        check_declared_type(data, declared_type=declared_type, source=source)
        return decode_image(data, source=source, max_side_px=max_side_px, max_pixels=max_pixels)
    except UnsupportedImageFormatError as exc:
        raise UnsupportedMediaError(str(exc)) from exc
    except UnreadableImageError as exc:
        raise UnprocessableError(str(exc)) from exc


def check_image_upload(
    data: bytes, *, declared_type: str | None, source: str, formats: tuple[str, ...]
) -> str:
    """The media type of an uploaded image kept as it is (not decoded), by the one rule: its header is read
    (422 when corrupt), no pixel is decoded."""
    from vision.image import (
        MEDIA_TYPES,
        UnreadableImageError,
        UnsupportedImageFormatError,
        check_declared_type,
        read_header,
    )

    try:
        found = check_declared_type(data, declared_type=declared_type, source=source, formats=formats)
        header = read_header(data, source=source)
    except UnsupportedImageFormatError as exc:
        raise UnsupportedMediaError(str(exc)) from exc
    except UnreadableImageError as exc:
        raise UnprocessableError(str(exc)) from exc
    if header.width_px <= 0 or header.height_px <= 0:
        raise UnprocessableError(
            f"{source}: not a readable image: a {found} file of {header.width_px}x{header.height_px} pixels"
        )
    return MEDIA_TYPES[found]


def check_zip_upload(data: bytes, *, declared_type: str | None, source: str) -> None:
    """A zip archive, by the one rule: its bytes are a zip (415), declared as one or as nothing (415), and
    its directory can be read (422)."""
    from vision.image import MEDIA_TYPES, NO_CLAIM, declared_media_type, sniff_format

    declared = declared_media_type(declared_type)
    if not data.startswith(_ZIP_MAGIC):
        found = sniff_format(data)
        what = (
            "no zip archive"
            if found is None
            else f"no zip archive but a {found} image ({MEDIA_TYPES[found]})"
        )
        raise UnsupportedMediaError(
            f"{source} must be a zip archive, told by its bytes: they are {what} "
            f"(declared {declared or 'no type'!r})"
        )
    if declared not in NO_CLAIM and declared not in _ZIP_ALIASES:
        raise UnsupportedMediaError(
            f"{source} is declared {declared!r}, but its bytes are a zip archive ({ZIP_MEDIA_TYPE}): send it "
            f"as {ZIP_MEDIA_TYPE}, or as application/octet-stream to let the bytes decide"
        )
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
        raise UnprocessableError(f"{source}: a corrupt zip archive (its directory cannot be read)") from exc
