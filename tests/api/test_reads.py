"""POST /v1/reads over real HTTP: a photo in, the JSON contract out; bad uploads get a clear 4xx."""

from __future__ import annotations

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
        ({"image": ("a.txt", b"hello", "text/plain")}, 415, "must be an image"),  # wrong content type
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
