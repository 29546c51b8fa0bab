"""The count of dice comes from the game (issue 48): `POST /v1/reads` and `throwbox read --table` take it from
the table's game and round; an explicit `expect` wins; a read with no count says so."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import cv2
import httpx
import pytest
from typer.testing import CliRunner

from api.auth import Role, create_key
from api.cli import app as cli_app
from api.db.models import GameTable
from api.db.session import Database
from api.main import create_app
from api.read_count import NO_COUNT_WARNING, ReadCount, resolve_count, table_count
from api.settings import Settings
from tests.conftest import serve_app
from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from vision.reader import Reader

FIXTURE = Path(__file__).resolve().parents[1] / "vision" / "fixtures" / "IMG_20191208_111702.jpg"
FIRST = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]  # four fives: the Extra Roll throws the other six


@contextmanager
def two_dice_service(tmp_path: Path) -> Iterator[tuple[str, dict[str, dict[str, str]], bytes]]:
    """The service reading with fake models that find two fours in the image; headers per role; the PNG."""
    img = plain(480, 640)
    boxes = [draw_die(img, face=4, centre_xy=(150 + 200 * i, 240), edge_px=80) for i in range(2)]
    app = create_app(Settings(data_dir=tmp_path / "data"))
    app.state.reader = Reader(
        manifest_path=write_manifest(tmp_path),
        session_factory=factory(FakeDetectorSession(boxes), FakeFaceSession([one_hot(4), one_hot(4)])),
    )
    ok, png = cv2.imencode(".png", img)
    assert ok
    with serve_app(app) as base_url:
        with app.state.database.session() as session:
            keys = {
                r.value: create_key(session, role=r, name=r.value).secret for r in (Role.ADMIN, Role.DEALER)
            }
            keys["reader"] = create_key(session, role=Role.READER, name="camera").secret
        headers = {who: {"Authorization": f"Bearer {key}"} for who, key in keys.items()}
        yield base_url, headers, bytes(png)


def test_the_count_comes_from_the_game_and_the_round(tmp_path: Path) -> None:
    with two_dice_service(tmp_path) as (base, headers, png), httpx.Client(timeout=60.0) as http:

        def read(**fields: str) -> dict[str, Any]:
            files = {"image": ("t.png", png, "image/png")}
            response = http.post(f"{base}/v1/reads", files=files, data=fields, headers=headers["reader"])
            assert response.status_code == 201, response.text
            doc: dict[str, Any] = response.json()
            return doc

        for table, game in (("T10", "hrd10"), ("T6", "hrd6")):
            body = {"id": table, "game": game}
            created = http.post(f"{base}/v1/tables", json=body, headers=headers["admin"])
            assert created.status_code == 201, created.text
        # No table, no expect: judged with no count, and said so.
        alone = read()
        assert alone["count"] == {"expected": None, "source": "none"}
        assert (alone["expected_dice"], alone["verdict"]) == (None, "valid")
        # The six-dice table: six expected, two seen, so the two fours cannot be a valid roll.
        six = read(table_id="T6")
        assert six["count"] == {"expected": 6, "source": "game", "game": "hrd6"}
        assert six["expected_dice"] == 6 and six["verdict"] != "valid"
        assert read(table_id="T10")["count"] == {"expected": 10, "source": "game", "game": "hrd10"}
        # An explicit expect wins over the table's game.
        given = read(table_id="T6", expect="2")
        assert given["count"] == {"expected": 2, "source": "given"}
        assert (given["expected_dice"], given["verdict"], given["faces"]) == (2, "valid", [4, 4])
        # A table the service does not know is refused (issue 57: it was read with no count, no warning).
        files = {"image": ("t.png", png, "image/png")}
        unknown = http.post(
            f"{base}/v1/reads", files=files, data={"table_id": "NOPE"}, headers=headers["reader"]
        )
        assert unknown.status_code == 404 and unknown.json()["detail"] == "no table 'NOPE'", unknown.text
        # While the round waits for the Extra Roll, the Extra Roll's own count.
        dealer = headers["dealer"]
        rid = http.post(f"{base}/v1/tables/T10/rounds", headers=dealer).json()["id"]
        wagers = [
            {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
            {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
            {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
        ]
        assert http.post(f"{base}/v1/rounds/{rid}/wagers", json={"wagers": wagers}, headers=dealer).is_success
        assert http.post(f"{base}/v1/rounds/{rid}/no-more-bets", headers=dealer).is_success
        roll = {"roll_id": "T10-1", "source": "reader", "verdict": "valid", "faces": FIRST}
        posted = http.post(f"{base}/v1/tables/T10/rolls", json=roll, headers=headers["reader"])
        assert posted.status_code == 201, posted.text
        summary = posted.json()["round"]
        assert posted.json()["phase"] == "awaiting_extra_roll"
        rethrow = 10 - summary["first_roll"]["match_count"]
        assert summary["dice_to_rethrow"] == rethrow == 6
        extra = read(table_id="T10")
        assert extra["count"] == {"expected": 6, "source": "extra_roll", "game": "hrd10", "round_id": rid}
        assert extra["expected_dice"] == 6
        assert read(table_id="T6")["count"]["source"] == "game"  # the other table's round is its own


def test_resolve_count_order() -> None:
    table = ReadCount(6, "game", game="hrd6")
    assert resolve_count(10, table) == ReadCount(10, "given")
    assert resolve_count(None, table) is table
    assert resolve_count(None, None).as_dict() == {"expected": None, "source": "none"}


def test_table_count_refuses_a_game_with_no_dice(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    database.migrate()
    with database.session() as session:
        session.add(GameTable(id="W", game="lightning_roulette", settings={}))
        session.add(GameTable(id="S", game="hrd6", settings={}))
    with database.read_session() as session:
        assert table_count(session, "W") is None
        assert table_count(session, "missing") is None
        assert table_count(session, "S") == ReadCount(6, "game", game="hrd6")
    database.dispose()


def test_cli_read_takes_the_count_from_the_service_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setenv("THROWBOX_DATA_DIR", str(data_dir))
    monkeypatch.delenv("THROWBOX_DATABASE_URL", raising=False)
    runner = CliRunner()
    calibrations = ["--calibration-dir", str(tmp_path / "calibration")]

    def read(*args: str) -> tuple[dict[str, Any], str]:
        result = runner.invoke(cli_app, ["read", str(FIXTURE), "--json", *calibrations, *args])
        assert result.exit_code == 0, result.output
        doc: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
        return doc, result.stderr

    # No service database yet: the table gives no count, said on stderr, and the read warns.
    doc, err = read("--table", "T6")
    assert doc["count"] == {"expected": None, "source": "none"}
    assert "no service database" in err and NO_COUNT_WARNING in err
    assert not (data_dir / "throwbox.sqlite3").exists()  # looking did not create one
    database = Database(Settings(data_dir=data_dir).resolved_database_url)
    database.migrate()
    with database.session() as session:
        session.add(GameTable(id="T6", game="hrd6", settings={}))
    database.dispose()
    doc, err = read("--table", "T6")
    assert doc["count"] == {"expected": 6, "source": "game", "game": "hrd6"}
    assert doc["expected_dice"] == 6 and NO_COUNT_WARNING not in err
    doc, err = read("--table", "T6", "--expect", "10")
    assert doc["count"] == {"expected": 10, "source": "given"} and doc["expected_dice"] == 10
    doc, err = read()
    assert doc["count"] == {"expected": None, "source": "none"} and NO_COUNT_WARNING in err
