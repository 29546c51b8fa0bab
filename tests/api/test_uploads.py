"""One upload rule for every route that takes a file (issue 57, item 4): the bytes decide what it is (its
magic number); a declared type that disagrees is 415 naming both; bytes of no type the route takes are 415;
a corrupt file of a known type is 422; every refusal in the project's words, never a library's message."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path

import cv2
import httpx
import numpy as np
import pytest

from api.auth import Role, create_key
from api.main import create_app
from api.settings import Settings
from tests.conftest import serve_app
from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from vision.reader import Reader

# Words of the libraries that must never reach a client (Pillow's, OpenCV's, Python's exception names).
LIBRARY_WORDS = ("SyntaxError", "driver", "cv::", "OpenCV", "Error:", "Traceback", "struct.error")


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _zero_png() -> bytes:
    """A well-formed PNG that says it is 0x0 pixels: the finding's "not identified by this driver"."""
    header = _png_chunk(b"IHDR", struct.pack(">IIBBBBB", 0, 0, 8, 2, 0, 0, 0))
    return b"\x89PNG\r\n\x1a\n" + header + _png_chunk(b"IEND", b"")


def _encoded(ext: str) -> bytes:
    img = plain(480, 640)
    for i in range(2):
        draw_die(img, face=4, centre_xy=(150 + 200 * i, 240), edge_px=80)
    ok, data = cv2.imencode(ext, img)
    assert ok
    return bytes(data)


JPEG = _encoded(".jpg")
PNG = _encoded(".png")
BMP = _encoded(".bmp")
RANDOM = np.random.default_rng(57).integers(0, 256, 4096, dtype=np.uint8).tobytes()
CORRUPT_JPEG = b"\xff\xd8\xff" + RANDOM  # the magic of a JPEG, then noise
CORRUPT_PNG = b"\x89PNG\r\n\x1a\n" + RANDOM


@pytest.fixture(scope="module")
def app_keys(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """The app with fake models (two 4s) on a free port; reader and admin keys; a table "T"."""
    tmp = tmp_path_factory.mktemp("uploads")
    img = plain(480, 640)
    boxes = [draw_die(img, face=4, centre_xy=(150 + 200 * i, 240), edge_px=80) for i in range(2)]
    app = create_app(Settings(data_dir=tmp / "data"))
    app.state.reader = Reader(
        manifest_path=write_manifest(tmp),
        session_factory=factory(FakeDetectorSession(boxes), FakeFaceSession([one_hot(4), one_hot(4)])),
    )
    with serve_app(app) as base_url:
        with app.state.database.session() as session:
            keys = {
                role: create_key(session, role=Role(role), name=role).secret for role in ("reader", "admin")
            }
        headers = {"Authorization": f"Bearer {keys['admin']}"}
        httpx.post(
            f"{base_url}/v1/tables", json={"id": "T", "game": "hrd10"}, headers=headers
        ).raise_for_status()
        yield base_url, keys


def _refusal(response: httpx.Response, status: int, *named: str) -> str:
    assert response.status_code == status, response.text
    detail = response.json()["detail"]
    assert isinstance(detail, str), detail
    for words in named:
        assert words in detail, (words, detail)
    assert not any(word in detail for word in LIBRARY_WORDS), detail
    return detail


# (bytes, declared type, status, words the answer names). A comment per case says what it stands for.
IMAGE_CASES = [
    (JPEG, "text/plain", 415, ("'text/plain'", "a JPEG image (image/jpeg)")),  # finding: was 201
    (PNG, "image/jpeg", 415, ("'image/jpeg'", "a PNG image (image/png)")),  # finding: was 201
    (RANDOM, "image/jpeg", 415, ("'image/jpeg'", "none of")),  # no image by its bytes: unsupported
    (_zero_png(), "image/png", 422, ("corrupt PNG",)),  # finding: leaked "SyntaxError: ... driver"
    (CORRUPT_JPEG, "image/jpeg", 422, ("corrupt JPEG",)),  # a JPEG by its magic, then noise
    (b"", "image/png", 422, ("empty",)),
]
IMAGE_IDS = ["jpeg-as-text", "png-as-jpeg", "noise-as-jpeg", "zero-size-png", "corrupt-jpeg", "empty"]


@pytest.mark.parametrize(("data", "declared", "status", "named"), IMAGE_CASES, ids=IMAGE_IDS)
def test_reads_refuse_by_the_one_rule(
    app_keys: tuple[str, dict[str, str]], data: bytes, declared: str, status: int, named: tuple[str, ...]
) -> None:
    base_url, keys = app_keys
    files = {"image": ("frame", data, declared)}
    answer = httpx.post(f"{base_url}/v1/reads", files=files, headers={"Authorization": keys["reader"]})
    _refusal(answer, status, *named)


@pytest.mark.parametrize(("data", "declared", "status", "named"), IMAGE_CASES, ids=IMAGE_IDS)
def test_evidence_refuses_by_the_one_rule(
    app_keys: tuple[str, dict[str, str]], data: bytes, declared: str, status: int, named: tuple[str, ...]
) -> None:
    base_url, keys = app_keys
    headers = {"Authorization": keys["reader"], "Content-Type": declared}
    _refusal(httpx.post(f"{base_url}/v1/evidence", content=data, headers=headers), status, *named)


@pytest.mark.parametrize(
    ("data", "declared"),
    [(JPEG, "application/octet-stream"), (PNG, "image/png"), (JPEG, "image/jpeg"), (BMP, "image/bmp")],
)
def test_reads_take_what_the_bytes_say_when_the_claim_agrees_or_is_none(
    app_keys: tuple[str, dict[str, str]], data: bytes, declared: str
) -> None:
    base_url, keys = app_keys
    files = {"image": ("frame", data, declared)}
    answer = httpx.post(f"{base_url}/v1/reads", files=files, headers={"Authorization": keys["reader"]})
    assert answer.status_code == 201, answer.text
    assert answer.json()["faces"] == [4, 4]


def test_evidence_keeps_the_type_its_bytes_say(app_keys: tuple[str, dict[str, str]]) -> None:
    base_url, keys = app_keys
    headers = {"Authorization": keys["reader"], "Content-Type": "application/octet-stream"}
    stored = httpx.post(f"{base_url}/v1/evidence", content=JPEG, headers=headers)
    assert stored.status_code == 201, stored.text
    assert stored.json()["media_type"] == "image/jpeg"
    # A BMP is an image, but not one the service keeps as evidence (it serves JPEG, PNG and WebP).
    headers["Content-Type"] = "image/bmp"
    _refusal(
        httpx.post(f"{base_url}/v1/evidence", content=BMP, headers=headers),
        415,
        "a BMP image (image/bmp)",
        "image/jpeg, image/png, image/webp",
    )


def _zip() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("1/a.png", PNG)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "declared", "status", "named"),
    [
        (PNG, "image/png", 415, ("'image/png'", "a zip archive")),  # an image where a zip belongs
        (RANDOM, "application/zip", 415, ("'application/zip'", "no zip archive")),  # not a zip by its bytes
        (_zip(), "text/plain", 415, ("'text/plain'", "a zip archive (application/zip)")),  # a zip mislabelled
        (b"PK\x03\x04" + RANDOM, "application/zip", 422, ("corrupt zip",)),  # a zip's magic, then noise
    ],
    ids=["png-as-archive", "noise-as-zip", "zip-as-text", "corrupt-zip"],
)
def test_enrollment_archives_follow_the_same_rule(
    app_keys: tuple[str, dict[str, str]], data: bytes, declared: str, status: int, named: tuple[str, ...]
) -> None:
    base_url, keys = app_keys
    answer = httpx.post(
        f"{base_url}/v1/tables/T/enrollment",
        data={"source": "photos"},
        files={"archive": ("dice.zip", data, declared)},
        headers={"Authorization": keys["admin"]},
    )
    _refusal(answer, status, *named)


def test_the_cli_and_the_service_share_the_header_words(tmp_path: Path) -> None:
    # `throwbox read` says the same words for the same corrupt file as the service (one rule, one place).
    from vision.image import UnreadableImageError, load_image

    path = tmp_path / "zero.png"
    path.write_bytes(_zero_png())
    with pytest.raises(UnreadableImageError) as info:
        load_image(path)
    assert "corrupt PNG" in str(info.value) and "SyntaxError" not in str(info.value)
