"""`throwbox read --table ID` uses the table's stored calibration and records which one (issue 6)."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
from typer.testing import CliRunner

from api.cli import app
from calibration.store import save_table, table_path
from tests.calibration.conftest import Scenes


def _read(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["read", *args, "--json"])
    return result.exit_code, result.stdout, result.stderr


def test_read_records_the_calibration_it_used(scenes: Scenes, tmp_path: Path) -> None:
    save_table(scenes.cal, tmp_path)
    frame = tmp_path / "frame.png"
    cv2.imwrite(str(frame), scenes.empty)
    code, out, err = _read(str(frame), "--table", "t-small", "--calibration-dir", str(tmp_path))
    assert code == 0, err
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc["calibration_id"] == scenes.cal.calibration_id
    assert doc["verdict"] in {"valid", "invalid", "void", "no_decision"}


def test_read_warns_when_the_table_marks_came_from_another_detector(scenes: Scenes, tmp_path: Path) -> None:
    from dataclasses import replace

    from calibration.marks import make_mark

    mark = make_mark(scenes.empty, box_xyxy=(120.0, 250.0, 150.0, 280.0), score=0.6)
    save_table(replace(scenes.cal, marks=(mark,), marks_detector="detect_old_2025jan"), tmp_path)
    frame = tmp_path / "frame.png"
    cv2.imwrite(str(frame), scenes.empty)
    code, _, err = _read(str(frame), "--table", "t-small", "--calibration-dir", str(tmp_path))
    assert code == 0, err
    assert "found by the detector detect_old_2025jan" in err and "calibrate the table again" in err


def test_read_without_a_stored_calibration_says_none(scenes: Scenes, tmp_path: Path) -> None:
    frame = tmp_path / "frame.png"
    cv2.imwrite(str(frame), scenes.empty)
    code, out, err = _read(str(frame), "--table", "nowhere", "--calibration-dir", str(tmp_path))
    assert code == 0, err
    assert json.loads(out.strip().splitlines()[-1])["calibration_id"] is None
    assert "table 'nowhere' has no calibration in" in err and "read from the image alone" in err


def test_read_refuses_an_image_of_another_resolution(scenes: Scenes, tmp_path: Path) -> None:
    save_table(scenes.cal, tmp_path)
    frame = tmp_path / "big.png"
    cv2.imwrite(str(frame), np.full((480, 800, 3), 90, np.uint8))
    code, out, _ = _read(str(frame), "--table", "t-small", "--calibration-dir", str(tmp_path))
    assert code == 1
    doc = json.loads(out.strip().splitlines()[-1])
    assert doc["verdict"] is None and "calibrated at" in doc["error"]


def test_read_refuses_a_corrupt_calibration(scenes: Scenes, tmp_path: Path) -> None:
    path = save_table(scenes.cal, tmp_path)
    path.write_text(path.read_text().replace('"table_id"', '"table_idx"', 1))
    assert path == table_path(tmp_path, "t-small")
    frame = tmp_path / "frame.png"
    cv2.imwrite(str(frame), scenes.empty)
    code, _, err = _read(str(frame), "--table", "t-small", "--calibration-dir", str(tmp_path))
    assert code == 2 and "t-small" in err


def test_the_api_reads_with_the_tables_calibration(scenes: Scenes, tmp_path: Path) -> None:
    """`POST /v1/reads` with a `table_id` whose table has a stored calibration reads as that table's camera
    sees (as `throwbox read --table` does) and names the calibration; a table with no calibration reads
    from the image alone, an unknown table is 404; a frame of another resolution is refused, saying why."""
    import httpx

    from api.auth import Role, create_key
    from api.db.models import GameTable
    from api.main import create_app
    from api.settings import Settings
    from tests.conftest import serve_app

    settings = Settings(data_dir=tmp_path / "data")
    save_table(scenes.cal, settings.calibration_dir)
    app = create_app(settings)
    with serve_app(app) as base_url, httpx.Client(timeout=60) as http:
        with app.state.database.session() as session:
            key = create_key(session, role=Role.READER, name="camera").secret
            session.add(GameTable(id="T1", game="hrd10", settings={}, calibration_id="t-small"))
            session.add(GameTable(id="T2", game="hrd10", settings={}))
        headers = {"Authorization": f"Bearer {key}"}
        ok, png = cv2.imencode(".png", scenes.empty)
        assert ok

        def post(table: str, image: bytes = png.tobytes()) -> httpx.Response:
            files = {"image": ("frame.png", image, "image/png")}
            return http.post(f"{base_url}/v1/reads", files=files, data={"table_id": table}, headers=headers)

        calibrated = post("T1")
        assert calibrated.status_code == 201, calibrated.text
        assert calibrated.json()["calibration_id"] == scenes.cal.calibration_id
        alone = post("T2")
        assert alone.status_code == 201, alone.text
        assert alone.json()["calibration_id"] is None
        unknown = post("nowhere")  # a table that does not exist is named, not read past (issue 57)
        assert (unknown.status_code, unknown.json()) == (404, {"detail": "no table 'nowhere'"})
        ok, other = cv2.imencode(".png", np.full((480, 800, 3), 90, np.uint8))
        refused = post("T1", other.tobytes())
        assert refused.status_code == 422 and "640x360" in refused.json()["detail"]
        assert "800x480" in refused.json()["detail"]
