"""One table's broken calibration, enrollment or camera is that table's trouble (issue 57): a calibration id
that names nothing is refused when it is set, `/readyz` stays 200 and lists the table's fault, the table
shows it in `GET /v1/tables/{id}`, its own reads are refused with the reason, and the other tables read on.
On a real server, with real calibration files and the shipped reader."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import cv2
import httpx
import numpy as np
import pytest

from tests.api.conftest import Service, running_service

WIDTH_PX, HEIGHT_PX = 320, 240


def _calibrate(folder: Path, table_id: str) -> str:
    """A real calibration of a 320x240 camera for `table_id`, stored in `folder`; its calibration id."""
    from calibration.camera import CameraIntrinsics
    from calibration.layout import ThrowBoxLayout
    from calibration.store import save_table
    from calibration.table import calibrate_table

    w, h = WIDTH_PX, HEIGHT_PX
    cal = calibrate_table(
        np.zeros((h, w, 3), np.uint8),
        table_id=table_id,
        intrinsics=CameraIntrinsics.from_fov(width_px=w, height_px=h, hfov_deg=60.0),
        intrinsics_rms_px=0.3,
        layout=ThrowBoxLayout(),
        corners_px=[[1, h - 2], [w - 2, h - 2], [w - 2, 1], [1, 1]],
    )
    save_table(cal, folder)
    return cal.calibration_id


@pytest.fixture
def svc(tmp_path: Path) -> Iterator[Service]:
    with running_service("sqlite", tmp_path / "data") as service:
        yield service


# Calibration ids refused when set: (value, status, words the reason holds).
REFUSED_IDS = [
    ("0" * 200, 422, "cannot name a calibration"),  # too long to be a file name
    ("../../etc/passwd", 422, "cannot name a calibration"),  # a path: never followed
    ("a/b", 422, "cannot name a calibration"),
    ("..", 422, "cannot name a calibration"),
    ("T@nodate", 422, "cannot name a calibration"),  # a recorded id without its checksum
    ("a..b", 422, "cannot name a calibration"),
    ("nowhere", 404, "no calibration 'nowhere'"),  # well formed, nothing stored under it
    ("nowhere@2026-01-01T00:00:00Z#abc", 404, "no calibration"),
]


@pytest.mark.parametrize(("value", "code", "words"), REFUSED_IDS)
def test_calibration_id_refused_when_set(svc: Service, value: str, code: int, words: str) -> None:
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd10"})
    patched = svc.call("PATCH", "/v1/tables/T", "admin", json={"calibration_id": value})
    assert patched.status_code == code, patched.text
    assert words in str(patched.json()["detail"])
    table = {"id": "U", "game": "hrd10", "calibration_id": value}
    created = svc.call("POST", "/v1/tables", "admin", json=table)
    assert created.status_code == code, created.text
    # Nothing was changed or made: the table still names no calibration, U does not exist.
    assert svc.ok("GET", "/v1/tables/T", "admin")["calibration_id"] is None
    assert svc.call("GET", "/v1/tables/U", "admin").status_code == 404
    assert not (svc.settings.data_dir.parent / "etc").exists()


def test_calibration_id_damaged_is_refused_and_a_good_one_taken(svc: Service) -> None:
    folder = svc.settings.calibration_dir
    first = _calibrate(folder, "T")
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd10"})
    assert svc.ok("PATCH", "/v1/tables/T", "admin", json={"calibration_id": first})["faults"] == []
    assert svc.ok("PATCH", "/v1/tables/T", "admin", json={"calibration_id": "T"})["calibration_id"] == "T"
    # The stored file damaged: the id names a calibration that cannot be used.
    (folder / "T.json").write_text("{not json", encoding="utf-8")
    damaged = svc.call("PATCH", "/v1/tables/T", "admin", json={"calibration_id": first})
    assert damaged.status_code == 422 and "cannot be used" in damaged.json()["detail"]
    # null takes the calibration away (nothing to load).
    assert svc.ok("PATCH", "/v1/tables/T", "admin", json={"calibration_id": None})["calibration_id"] is None


def _png(width_px: int = WIDTH_PX, height_px: int = HEIGHT_PX) -> bytes:
    ok, encoded = cv2.imencode(".png", np.full((height_px, width_px, 3), 60, np.uint8))
    assert ok
    return encoded.tobytes()


def _read(svc: Service, table_id: str) -> httpx.Response:
    files = {"image": ("frame.png", _png(), "image/png")}
    return svc.call("POST", "/v1/reads", "reader", files=files, data={"table_id": table_id})


def _faults(svc: Service, table_id: str) -> list[dict[str, str]]:
    faults: list[dict[str, str]] = svc.ok("GET", f"/v1/tables/{table_id}", "surveillance")["faults"]
    return faults


def test_a_tables_broken_calibration_enrollment_and_camera_stop_only_that_table(svc: Service) -> None:
    folder = svc.settings.calibration_dir
    for table_id in ("A", "B"):
        calibration_id = _calibrate(folder, table_id)
        table = {"id": table_id, "game": "hrd10", "calibration_id": calibration_id}
        svc.ok("POST", "/v1/tables", "admin", 201, json=table)
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "C", "game": "hrd6"})
    ready = svc.client.get(svc.base_url + "/readyz")
    assert ready.status_code == 200, ready.text
    assert ready.json()["tables"] == {t: {"ok": True, "faults": []} for t in ("A", "B", "C")}

    # A's calibration file is damaged on disk after it was set.
    (folder / "A.json").write_text('{"format": "throwbox.table-calibration"}', encoding="utf-8")
    (a_fault,) = _faults(svc, "A")
    assert a_fault["part"] == "calibration" and "format version None" in a_fault["detail"]
    assert _faults(svc, "B") == [] and _faults(svc, "C") == []
    listed = {t["id"]: t["faults"] for t in svc.ok("GET", "/v1/tables", "dealer")}
    assert listed["A"] == [a_fault] and listed["B"] == []
    ready = svc.client.get(svc.base_url + "/readyz")
    body = ready.json()
    assert ready.status_code == 200 and body["ready"] is True, ready.text
    assert "calibration" not in body["checks"]
    assert body["tables"]["A"]["ok"] is False and "calibration" in body["tables"]["A"]["faults"][0]
    assert body["tables"]["B"] == {"ok": True, "faults": []}
    # A's reads are refused with the reason (the table's fault, not the service's); B and C read on.
    refused = _read(svc, "A")
    assert refused.status_code == 409 and "its calibration" in refused.json()["detail"], refused.text
    assert _read(svc, "B").status_code == 201
    assert _read(svc, "C").status_code == 201

    # B's enrollment file is damaged: B's fault, B's reads refused; C still reads.
    (folder / "B.enrollment.json").write_text("[]", encoding="utf-8")
    (b_fault,) = _faults(svc, "B")
    assert b_fault["part"] == "enrollment" and "B.enrollment.json" in b_fault["detail"]
    assert _read(svc, "B").status_code == 409
    assert _read(svc, "C").status_code == 201
    assert svc.client.get(svc.base_url + "/readyz").status_code == 200
    # C's no-die filter (learned from its struck-out boxes) damaged: C's fault, named; C's reads refused.
    (folder / "C.no-die.json").write_text("{", encoding="utf-8")
    (c_filter,) = _faults(svc, "C")
    assert c_filter["part"] == "enrollment" and "no-die filter" in c_filter["detail"]
    refused = _read(svc, "C")
    assert refused.status_code == 409 and "its no-die filter" in refused.json()["detail"]
    (folder / "C.no-die.json").unlink()
    assert _read(svc, "C").status_code == 201

    # C's camera is lost (a table worker's alert): C's fault until the camera is back.
    alert = {"kind": "camera_lost", "message": "camera rtsp://c: no frames", "table_id": "C"}
    lost = svc.ok("POST", "/v1/alerts", "worker", 201, json=alert)
    (c_fault,) = _faults(svc, "C")
    assert c_fault["part"] == "camera" and f"alert {lost['id']}" in c_fault["detail"]
    assert "no frames" in c_fault["detail"]
    back = {"kind": "camera_recovered", "message": "camera rtsp://c is back", "table_id": "C"}
    svc.ok("POST", "/v1/alerts", "worker", 201, json=back)
    assert _faults(svc, "C") == []
    # Lost again, then acknowledged by an admin: no longer shown.
    lost = svc.ok("POST", "/v1/alerts", "worker", 201, json=alert)
    assert [f["part"] for f in _faults(svc, "C")] == ["camera"]
    svc.ok("POST", f"/v1/alerts/{lost['id']}/acknowledge", "admin")
    assert _faults(svc, "C") == []
    assert svc.client.get(svc.base_url + "/readyz").status_code == 200


def test_a_live_loop_that_cannot_start_is_its_tables_fault(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The service's own live loops (THROWBOX_LIVE_TABLES): a table whose camera cannot be opened is not
    # started; that is the table's fault, and the service stays ready.
    from api.db.models import GameTable
    from api.db.session import Database
    from tests.conftest import free_port

    data_dir = tmp_path / "data"
    data_dir.mkdir()
    database = Database(f"sqlite:///{data_dir / 'throwbox.sqlite3'}")
    try:
        database.migrate()
        with database.session() as session:
            session.add(GameTable(id="D", game="hrd10", settings={}, camera_source="no-such-camera"))
    finally:
        database.dispose()
    port = free_port()  # the loops post to the service at its own URL: known before it starts
    monkeypatch.setattr("tests.conftest.free_port", lambda: port)
    with running_service("sqlite", data_dir, live_tables=True, self_url=f"http://127.0.0.1:{port}") as svc:
        deadline = time.monotonic() + 60
        while not (faults := _faults(svc, "D")) and time.monotonic() < deadline:
            time.sleep(0.2)
        (fault,) = faults
        assert fault["part"] == "camera" and fault["detail"].startswith("the live loop could not start: ")
        assert "no-such-camera" in fault["detail"]
        ready = svc.client.get(svc.base_url + "/readyz")
        assert ready.status_code == 200 and ready.json()["tables"]["D"]["ok"] is False
