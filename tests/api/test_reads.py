"""POST /v1/reads over real HTTP: a photo in, the JSON contract out; bad uploads get a clear 4xx."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cv2
import httpx
import numpy as np
import pytest

from api.auth import Role, create_key
from api.main import create_app
from api.settings import Settings
from lab.hostile_images import png_bomb
from tests.conftest import serve_app
from tests.vision.bomb_cost import BOMBS, cost_of
from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from vision.reader import Reader
from vision.types import Verdict

FIXTURE = Path(__file__).resolve().parents[1] / "vision" / "fixtures" / "IMG_20191208_111702.jpg"


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[str, dict[str, str], Path]]:
    """The app with the committed models on a free port; a reader key's header; the data dir."""
    data_dir = tmp_path / "data"
    app = create_app(Settings(data_dir=data_dir))
    with serve_app(app) as base_url:
        with app.state.database.session() as session:
            key = create_key(session, role=Role.READER, name="camera").secret
        yield base_url, {"Authorization": f"Bearer {key}"}, data_dir


def test_reads_a_real_photo(server: tuple[str, dict[str, str], Path], http: httpx.Client) -> None:
    base_url, headers, data_dir = server
    files = {"image": ("roll.jpg", FIXTURE.read_bytes(), "image/jpeg")}
    response = http.post(f"{base_url}/v1/reads", files=files, data={"expect": "10"}, headers=headers)
    assert response.status_code == 201, response.text
    doc = response.json()
    assert doc["verdict"] in {v.value for v in Verdict}
    assert doc["expected_dice"] == 10
    assert len(doc["dice"]) >= 8  # the photo shows 10 dice
    assert {"face", "confidence", "box_xyxy", "cocked", "stacked"} <= set(doc["dice"][0])
    assert {"detector", "pips"} <= set(doc["models"])
    sha = doc["evidence_sha256"]
    assert (data_dir / "evidence" / sha[:2] / sha).is_file() or any(data_dir.rglob(sha))


def test_fake_models_give_the_exact_document(tmp_path: Path, http: httpx.Client) -> None:
    img = plain(480, 640)
    boxes = [draw_die(img, face=f, centre_xy=(150 + 200 * i, 240), edge_px=80) for i, f in enumerate((4, 4))]
    manifest = write_manifest(tmp_path)
    app = create_app(Settings(data_dir=tmp_path / "data"))
    app.state.reader = Reader(
        manifest_path=manifest,
        session_factory=factory(FakeDetectorSession(boxes), FakeFaceSession([one_hot(4), one_hot(4)])),
    )
    ok, png = cv2.imencode(".png", img)
    assert ok
    with serve_app(app) as base_url:
        with app.state.database.session() as session:
            key = create_key(session, role=Role.READER, name="camera").secret
            admin = create_key(session, role=Role.ADMIN, name="admin").secret
        table = {"id": "T7", "game": "hrd10"}  # a table_id must name a table (issue 57: 404 otherwise)
        made = http.post(f"{base_url}/v1/tables", json=table, headers={"Authorization": f"Bearer {admin}"})
        assert made.status_code == 201, made.text
        response = http.post(
            f"{base_url}/v1/reads",
            files={"image": ("t.png", bytes(png), "image/png")},
            data={"expect": "2", "table_id": "T7"},
            headers={"Authorization": f"Bearer {key}"},
        )
    assert response.status_code == 201, response.text
    doc = response.json()
    assert (doc["verdict"], doc["faces"], doc["winner"], doc["match_count"]) == ("valid", [4, 4], 4, 2)
    assert doc["table_id"] == "T7"


@pytest.mark.parametrize(
    ("files", "status", "detail"),
    [
        ({"image": ("a.txt", b"hello", "text/plain")}, 415, "told by its bytes"),  # no image by its bytes
        ({"image": ("a.jpg", b"", "image/jpeg")}, 422, "empty file"),  # empty upload
        ({"image": ("a.jpg", b"\xff\xd8\xff garbage", "image/jpeg")}, 422, "not a readable image"),  # corrupt
    ],
)
def test_bad_uploads_are_refused_clearly(
    server: tuple[str, dict[str, str], Path],
    http: httpx.Client,
    files: dict[str, tuple[str, bytes, str]],
    status: int,
    detail: str,
) -> None:
    base_url, headers, _ = server
    response = http.post(f"{base_url}/v1/reads", files=files, headers=headers)
    assert response.status_code == status, response.text
    assert detail in response.json()["detail"]


def test_no_file_part_is_422(server: tuple[str, dict[str, str], Path], http: httpx.Client) -> None:
    base_url, headers, _ = server
    response = http.post(f"{base_url}/v1/reads", data={"expect": "3"}, headers=headers)
    assert response.status_code == 422
    assert any(err["loc"][-1] == "image" for err in response.json()["detail"])


def test_needs_a_key(server: tuple[str, dict[str, str], Path], http: httpx.Client) -> None:
    base_url, _, _ = server
    files = {"image": ("roll.jpg", np.zeros(3, np.uint8).tobytes(), "image/jpeg")}
    assert http.post(f"{base_url}/v1/reads", files=files).status_code == 401


# ---- hostile uploads --------------------------------------------------------------------------------------


@pytest.mark.parametrize("way", ["rest", "cli"])
@pytest.mark.parametrize("name", sorted(BOMBS))
def test_bombs_are_refused_fast_and_small(way: str, name: str, tmp_path: Path) -> None:
    # Through POST /v1/reads (a real server) and `throwbox read`, each in a fresh process that measures
    # the time and the peak memory the refusal adds (tests/vision/bomb_cost.py).
    path = tmp_path / f"{name}.bin"
    path.write_bytes(BOMBS[name]())
    cost = cost_of(way, path)
    expected = "422: " if way == "rest" else "exit 1: "
    assert cost["outcome"].startswith(expected) and "(refused unread)" in cost["outcome"], cost
    assert cost["seconds"] < 0.2, cost
    assert cost["extra_mb"] < 100, cost


@contextmanager
def fake_reader_app(tmp_path: Path, reader_type: type[Reader] = Reader, **settings: Any) -> Iterator[Any]:
    """The app with fake models that see two 4s in the frame it yields, with a reader key."""
    img = plain(480, 640)
    boxes = [draw_die(img, face=4, centre_xy=(150 + 200 * i, 240), edge_px=80) for i in range(2)]
    app = create_app(Settings(data_dir=tmp_path / "data", **settings))
    app.state.reader = reader_type(
        manifest_path=write_manifest(tmp_path),
        session_factory=factory(FakeDetectorSession(boxes), FakeFaceSession([one_hot(4), one_hot(4)])),
    )
    with serve_app(app) as base_url:
        with app.state.database.session() as session:
            key = create_key(session, role=Role.READER, name="camera").secret
        yield base_url, key, img


def test_the_bytes_decide_not_the_declared_type(tmp_path: Path, http: httpx.Client) -> None:
    with fake_reader_app(tmp_path) as (base_url, key, img):
        ok, jpeg = cv2.imencode(".jpg", img)
        assert ok
        # A real JPEG sent as application/octet-stream (what many clients send) is read, and the bare key
        # (no "Bearer") is accepted.
        files = {"image": ("roll", bytes(jpeg), "application/octet-stream")}
        response = http.post(f"{base_url}/v1/reads", files=files, headers={"Authorization": key})
        assert response.status_code == 201, response.text
        assert response.json()["faces"] == [4, 4]
        # Text declared as image/jpeg is refused as not an image, naming what was declared.
        files = {"image": ("a.jpg", b"hello, I am text", "image/jpeg")}
        response = http.post(f"{base_url}/v1/reads", files=files, headers={"Authorization": f"bearer {key}"})
        assert response.status_code == 415, response.text
        detail = response.json()["detail"]
        assert "told by its bytes" in detail and "declared 'image/jpeg'" in detail


@pytest.mark.parametrize(
    ("authorization", "status"),
    [
        ("Bearer {key}", 415),  # the documented form: past the key check, to the (text) upload
        ("{key}", 415),  # the bare key: accepted too
        ("BEARER {key}", 415),  # the scheme in any case
        ("Basic {key}", 401),  # another scheme carries no key
        ("Bearer", 401),  # the scheme and no key
        ("tbx_nope_nope", 401),  # a bare key that is no key
    ],
)
def test_authorization_header_forms(
    server: tuple[str, dict[str, str], Path], http: httpx.Client, authorization: str, status: int
) -> None:
    base_url, headers, _ = server
    key = headers["Authorization"].removeprefix("Bearer ")
    files = {"image": ("a.txt", b"hello", "text/plain")}
    response = http.post(
        f"{base_url}/v1/reads", files=files, headers={"Authorization": authorization.format(key=key)}
    )
    assert response.status_code == status, response.text


def test_request_body_over_the_cap_is_413(tmp_path: Path, http: httpx.Client) -> None:
    app = create_app(Settings(data_dir=tmp_path / "data", max_request_bytes=10_000))
    with serve_app(app) as base_url:
        with app.state.database.session() as session:
            key = create_key(session, role=Role.READER, name="camera").secret
        headers = {"Authorization": f"Bearer {key}"}
        files = {"image": ("big.png", png_bomb(3000, 3000, rows=3000), "image/png")}
        declared = http.post(f"{base_url}/v1/reads", files=files, headers=headers)
        # The same body without a Content-Length (chunked): refused once 10,000 bytes have come.
        built = httpx.Request("POST", base_url, files=files)
        body, content_type = built.read(), {"Content-Type": built.headers["Content-Type"]}
        chunks = (body[i : i + 4096] for i in range(0, len(body), 4096))
        chunked = http.post(f"{base_url}/v1/reads", content=chunks, headers={**headers, **content_type})
        small = http.post(
            f"{base_url}/v1/reads", files={"image": ("a.txt", b"hi", "text/plain")}, headers=headers
        )
    assert (declared.status_code, declared.text) == (413, "Content Too Large")
    assert chunked.status_code == 413, chunked.text
    assert "Content-Length" not in chunked.request.headers
    assert small.status_code == 415  # under the cap, the request goes on to the route


class _SlowReader(Reader):
    """Holds each read until `release` is set, to fill the service's read slots."""

    release = threading.Event()
    started = threading.Event()

    def read(self, *args: Any, **kwargs: Any) -> Any:
        self.started.set()
        assert self.release.wait(timeout=30)
        return super().read(*args, **kwargs)


def test_reads_beyond_the_slots_get_503_with_retry_after(tmp_path: Path) -> None:
    _SlowReader.release.clear()
    _SlowReader.started.clear()
    with fake_reader_app(tmp_path, _SlowReader, max_concurrent_reads=1, read_queue_s=0.2) as (
        base_url,
        key,
        img,
    ):
        ok, png = cv2.imencode(".png", img)
        assert ok
        files = {"image": ("t.png", bytes(png), "image/png")}
        headers = {"Authorization": f"Bearer {key}"}
        with ThreadPoolExecutor(max_workers=1) as pool, httpx.Client(timeout=30) as client:
            first = pool.submit(client.post, f"{base_url}/v1/reads", files=files, headers=headers)
            assert _SlowReader.started.wait(timeout=20)
            busy = client.post(f"{base_url}/v1/reads", files=files, headers=headers)
            _SlowReader.release.set()
            assert first.result().status_code == 201, first.result().text
            after = client.post(f"{base_url}/v1/reads", files=files, headers=headers)
    assert busy.status_code == 503, busy.text
    assert busy.headers["Retry-After"] == "1"
    assert busy.json()["detail"] == "busy: 1 reads in progress; retry shortly"
    assert after.status_code == 201, after.text  # the slot was given back


def test_the_service_limits_default_to_the_readers(tmp_path: Path) -> None:
    # `throwbox read` (vision/image.py's defaults) and the service refuse the same images out of the box.
    from vision.image import MAX_IMAGE_BYTES, MAX_PIXELS, MAX_SIDE_PX

    settings = Settings(data_dir=tmp_path)
    assert (settings.max_image_side_px, settings.max_image_pixels) == (MAX_SIDE_PX, MAX_PIXELS)
    assert settings.max_request_bytes > MAX_IMAGE_BYTES
