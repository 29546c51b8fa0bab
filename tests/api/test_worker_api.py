"""Table workers, the service side (issue 50): the worker role's limits, table leases (grant, renewal, 409,
takeover epochs, release, one winner among concurrent takers), fencing of a superseded worker's rolls,
`PUT /v1/reads/{id}`, `GET /v1/tables/{id}/live-config`, `worker_lost` (once, across replicas; never after a
clean release) and `THROWBOX_EXTERNAL_WORKERS`, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from pydantic import SecretStr
from sqlalchemy import update
from typer.testing import CliRunner

from api.auth import Role, create_key
from api.db.models import GameTable, TableLease
from api.db.session import Database
from api.live_service import LiveService
from api.main import create_app
from api.metrics import Metrics
from api.settings import Settings
from tests.api.conftest import Service, ServiceFactory, tiny_png
from tests.api.test_events import parse_sse
from tests.conftest import serve_app

PNG = tiny_png(value=9)


def lease(svc: Service, table: str, worker: str, who: str = "worker") -> httpx.Response:
    return svc.call("POST", f"/v1/tables/{table}/lease", who, json={"worker_id": worker})


@contextmanager
def database_of(svc: Service) -> Iterator[Database]:
    """The service's database, opened apart (as another replica would)."""
    database = Database(svc.settings.resolved_database_url)
    try:
        yield database
    finally:
        database.dispose()


def expire(svc: Service, table: str) -> None:
    """Make the table's lease expired now (a worker that stopped renewing), without waiting out its TTL."""
    with database_of(svc) as database, database.session() as session:
        session.execute(
            update(TableLease)
            .where(TableLease.table_id == table)
            .values(expires_at=datetime.now(UTC) - timedelta(seconds=1))
        )


def alerts_of(svc: Service, kind: str) -> list[dict[str, Any]]:
    return [a for a in svc.ok("GET", "/v1/alerts", "admin") if a["kind"] == kind]


def open_for_dice(svc: Service, table: str) -> int:
    """A table with a round waiting for dice."""
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": table, "game": "hrd6"})
    round_id: int = svc.ok("POST", f"/v1/tables/{table}/rounds", "dealer", 201)["id"]
    svc.ok("POST", f"/v1/rounds/{round_id}/no-more-bets", "dealer")
    return round_id


def test_a_worker_key_does_its_tables_work_and_nothing_more(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd6"})
    assert [t["id"] for t in svc.ok("GET", "/v1/tables", "worker")] == ["T"]
    svc.ok("GET", "/v1/tables/T", "worker")
    refused = [
        ("POST", "/v1/tables/T/rounds", None),
        ("POST", "/v1/tables", {"id": "U", "game": "hrd6"}),
        ("POST", "/v1/keys", {"role": "worker", "name": "more"}),
        ("GET", "/v1/keys", None),
        ("GET", "/v1/audit", None),
        ("GET", "/v1/rounds", None),
        ("GET", "/v1/alerts", None),
        ("POST", "/v1/settle", {"game": "hrd6", "wagers": [], "rolls": [[1, 2, 3, 4, 5, 6]]}),
        ("POST", "/v1/alerts", {"message": "a review"}),  # a review is surveillance's
    ]
    for method, path, body in refused:
        answer = svc.call(method, path, "worker", json=body)
        assert answer.status_code == 403, (method, path, answer.text)
    # Not even with the supervisor capability may a worker key correct a settled round.
    made = svc.ok("POST", "/v1/keys", "admin", 201, json={"role": "worker", "name": "w", "supervisor": True})
    assert made["role"] == "worker"
    correction = {"reason": "misread", "first_roll": [1, 2, 3, 4, 5, 6]}
    answer = svc.client.post(
        svc.base_url + "/v1/rounds/1/corrections",
        json=correction,
        headers={"Authorization": f"Bearer {made['key']}"},
    )
    assert answer.status_code == 403
    # A live alert is the worker's, with its data; not surveillance's.
    body = {
        "kind": "camera_lost",
        "message": "camera 1: no frames",
        "table_id": "T",
        "data": {"source": "c1"},
    }
    raised = svc.ok("POST", "/v1/alerts", "worker", 201, json=body)
    assert raised["kind"] == "camera_lost" and raised["data"] == {"source": "c1"}
    assert raised["raised_by"].startswith("worker:")
    assert svc.call("POST", "/v1/alerts", "surveillance", json=body).status_code == 403


def test_keys_create_role_worker_on_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from api.cli import app

    monkeypatch.setenv("THROWBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("THROWBOX_DATABASE_URL", raising=False)
    assert CliRunner().invoke(app, ["db", "upgrade"]).exit_code == 0  # keys never make a database
    made = CliRunner().invoke(app, ["keys", "create", "--role", "worker", "--name", "floor-1"])
    assert made.exit_code == 0, made.output
    assert "role worker" in made.stdout and made.stdout.strip().splitlines()[-1].startswith("tbx_")


def test_lease_grant_renewal_conflict_takeover_and_release(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd10"})
    assert lease(svc, "nope", "w1").status_code == 404
    first = lease(svc, "T", "w1").json()
    assert first["epoch"] == 1 and first["worker_id"] == "w1" and first["ttl_s"] == 5.0
    renewed = lease(svc, "T", "w1").json()  # the heartbeat: same epoch, later expiry
    assert renewed["epoch"] == 1 and renewed["expires_at"] > first["expires_at"]
    held = lease(svc, "T", "w2")
    assert held.status_code == 409
    assert held.json()["holder"] == "w1" and held.json()["expires_at"] == renewed["expires_at"]
    assert "w1" in held.json()["detail"]
    # w1 stops renewing: w2 takes the table over, one epoch on; now w1 is refused.
    expire(svc, "T")
    taken = lease(svc, "T", "w2").json()
    assert taken["epoch"] == 2 and taken["worker_id"] == "w2"
    assert lease(svc, "T", "w1").json()["holder"] == "w2"
    # Releasing what one does not hold changes nothing; the holder's release frees the table.
    assert svc.call("DELETE", "/v1/tables/T/lease?worker_id=w1", "worker").status_code == 204
    assert lease(svc, "T", "w1").status_code == 409
    assert svc.call("DELETE", "/v1/tables/T/lease?worker_id=w2", "worker").status_code == 204
    assert lease(svc, "T", "w1").json()["epoch"] == 3  # a takeover from another worker (released)
    # A worker re-taking its own expired lease, nobody in between, keeps its epoch.
    expire(svc, "T")
    assert lease(svc, "T", "w1").json()["epoch"] == 3
    assert svc.call("DELETE", "/v1/tables/nope/lease?worker_id=w1", "worker").status_code == 404
    assert svc.call("POST", "/v1/tables/T/lease", "worker", json={"worker_id": "bad id!"}).status_code == 422
    # Grants and takeovers are audited, renewals (heartbeats) are not.
    entries = svc.ok("GET", "/v1/audit?subject=table:T", "admin")
    takes = [
        (e["payload"]["worker_id"], e["payload"]["epoch"]) for e in entries if e["action"] == "lease.take"
    ]
    assert takes == [("w1", 1), ("w2", 2), ("w1", 3), ("w1", 3)]
    assert [e["payload"]["worker_id"] for e in entries if e["action"] == "lease.release"] == ["w2"]


def test_concurrent_takers_across_two_replicas_get_one_lease(
    backend: str, service_factory: ServiceFactory
) -> None:
    with service_factory(backend=backend) as svc:
        for n in range(3):
            svc.ok("POST", "/v1/tables", "admin", 201, json={"id": f"C{n}", "game": "hrd6"})
        # A second replica: another app (engine, pool) on the same database.
        replica = create_app(svc.settings)
        with serve_app(replica) as other_url:
            bases = [svc.base_url, other_url]

            def race(table: str, prefix: str) -> tuple[str, list[tuple[int, str]]]:
                """Eight workers ask for the table at once, half through each replica."""
                barrier = threading.Barrier(8)

                def take(i: int) -> tuple[int, str]:
                    barrier.wait()
                    answer = svc.client.post(
                        f"{bases[i % 2]}/v1/tables/{table}/lease",
                        json={"worker_id": f"{prefix}{i}"},
                        headers=svc.headers("worker"),
                    )
                    return answer.status_code, answer.json().get("worker_id") or answer.json()["holder"]

                with ThreadPoolExecutor(8) as pool:
                    results = list(pool.map(take, range(8)))
                winners = [who for code, who in results if code == 200]
                assert sorted(code for code, _ in results) == [200] + [409] * 7, results
                assert {who for _, who in results} == set(winners)  # every 409 names the winner
                return winners[0], results

            for n in range(3):
                table = f"C{n}"
                # A first take (no lease row yet: the insert races), then a takeover of the expired lease
                # (the row's lock): one winner each time, one epoch on.
                for epoch, prefix in ((1, "a"), (2, "b")):
                    winner, _ = race(table, prefix)
                    with database_of(svc) as database, database.read_session() as session:
                        row = session.get(TableLease, table)
                        assert row is not None and (row.worker_id, row.epoch) == (winner, epoch)
                    expire(svc, table)


def test_a_superseded_workers_roll_is_refused_and_a_replay_is_a_duplicate(service: Service) -> None:
    svc = service
    round_id = open_for_dice(svc, "F")

    def roll(roll_id: str, worker: str | None, epoch: int | None) -> httpx.Response:
        headers = {} if epoch is None else {"X-Throwbox-Lease-Epoch": str(epoch)}
        if worker is not None:
            headers["X-Throwbox-Worker-Id"] = worker
        body = {"roll_id": roll_id, "source": "reader", "verdict": "void", "faces": [], "round_id": round_id}
        return svc.call("POST", "/v1/tables/F/rolls", "worker", json=body, headers=headers)

    assert lease(svc, "F", "w1").json()["epoch"] == 1
    assert roll("F-1", "w1", 1).status_code == 201  # the holder's roll
    expire(svc, "F")
    assert lease(svc, "F", "w2").json()["epoch"] == 2
    late = roll("F-2", "w1", 1)  # w1 does not know yet that it lost the table
    assert late.status_code == 409 and "lease_superseded" in late.json()["detail"]
    assert roll("F-2", None, 1).status_code == 409  # no worker named: the epoch alone is behind
    assert roll("F-1", "w1", 1).json()["duplicate"] is True  # applied before the takeover: answered, once
    first = roll("F-3", "w2", 2)
    assert first.status_code == 201 and first.json()["duplicate"] is False
    replay = roll("F-3", "w2", 2)  # the spool's replay under the current epoch
    assert replay.status_code == 200 and replay.json()["duplicate"] is True
    assert roll("F-4", None, None).status_code == 201  # without the header: as before
    applied = [r["roll_id"] for r in svc.ok("GET", "/v1/tables/F/rolls", "admin")]
    assert sorted(applied) == ["F-1", "F-3", "F-4"]


def test_put_read_records_once_with_its_audit_entry_and_event(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "R", "game": "hrd6"})
    sha = svc.ok("POST", "/v1/evidence", "worker", 201, content=PNG, headers={"Content-Type": "image/png"})[
        "sha256"
    ]
    document = {
        "verdict": "void",
        "faces": [],
        "reasons": ["dice_off_table"],
        "winner": None,
        "match_count": 0,
        "frame_id": "R-1-7",
        "calibration_id": None,
        "source": "live",
        "dice": [],
    }
    body = {"table_id": "R", "document": document, "evidence_sha256": sha}
    made = svc.ok("PUT", "/v1/reads/rd-1", "worker", 201, json=body)
    assert made == {"read_id": "rd-1", "table_id": "R", "evidence_sha256": sha, "duplicate": False}
    again = svc.ok("PUT", "/v1/reads/rd-1", "worker", 200, json=body)
    assert again["duplicate"] is True
    other = {**body, "document": {**document, "faces": [1]}}
    assert svc.call("PUT", "/v1/reads/rd-1", "worker", json=other).status_code == 409
    assert svc.call("PUT", "/v1/reads/rd-2", "worker", json={**body, "table_id": "nope"}).status_code == 404
    missing = {**body, "evidence_sha256": "f" * 64}
    assert svc.call("PUT", "/v1/reads/rd-2", "worker", json=missing).status_code == 404
    stored = svc.ok("GET", "/v1/reads/rd-1", "admin")
    assert stored["frame_id"] == "R-1-7" and stored["evidence_sha256"] == sha
    assert svc.call("GET", "/v1/reads/rd-1/frame", "admin").content == PNG
    # One audit entry and one `read` event, as the in-process loop leaves them.
    entries = svc.ok("GET", "/v1/audit?subject=read:rd-1", "admin")
    assert [e["action"] for e in entries] == ["read.create"]
    assert entries[0]["actor"].startswith("worker:") and entries[0]["payload"]["evidence_sha256"] == sha
    assert entries[0]["payload"]["frame_id"] == "R-1-7"
    events = parse_sse(svc.call("GET", "/v1/events?follow=false&types=read", "admin").text)
    assert len(events) == 1
    data = events[0]["data"]["data"]
    assert data["read_id"] == "rd-1" and data["source"] == "live" and data["reasons"] == ["dice_off_table"]


def _calibrate(folder: Path, table_id: str) -> str:
    from calibration.camera import CameraIntrinsics
    from calibration.layout import ThrowBoxLayout
    from calibration.store import save_table
    from calibration.table import calibrate_table

    h, w = 240, 320
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


def test_live_config_gives_game_camera_calibration_and_enrollment(service: Service) -> None:
    from calibration.store import load_table_file
    from vision.pips.enrolled import Enrollment, save_enrollment

    svc = service
    folder = svc.settings.calibration_dir
    calibration_id = _calibrate(folder, "L")
    table = {"id": "L", "game": "hrd10", "camera_source": "rtsp://cam/1", "calibration_id": calibration_id}
    svc.ok("POST", "/v1/tables", "admin", 201, json=table)
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "P", "game": "hrd6"})
    bare = svc.ok("GET", "/v1/tables/P/live-config", "worker")
    assert bare == {
        "table_id": "P",
        "game": "hrd6",
        "dice": 6,
        "camera_source": None,
        "calibration_id": None,
        "calibration": None,
        "enrollment": None,
        "no_die": None,  # the table's no-die filter (vision/table/no_die.py): none learned yet
        "lease_ttl_s": 5.0,
    }
    save_enrollment(
        Enrollment(
            table_id="L",
            model_sha256="a" * 64,
            d_weight=np.full((6, 4), 0.25, np.float32),
            d_bias=np.zeros(6, np.float32),
            examples={"1": 3, "6": 2},
        ),
        folder,
    )
    config = svc.ok("GET", "/v1/tables/L/live-config", "worker")
    assert (config["dice"], config["camera_source"], config["calibration_id"]) == (
        10,
        "rtsp://cam/1",
        calibration_id,
    )
    # The calibration file as stored: written out, it loads as the same calibration.
    copy = Path(svc.settings.data_dir) / "copy" / "L.json"
    copy.parent.mkdir()
    copy.write_text(json.dumps(config["calibration"]), encoding="utf-8")
    assert load_table_file(copy, table_id="L").calibration_id == calibration_id
    assert config["enrollment"]["body"]["examples"] == {"1": 3, "6": 2}
    assert config["enrollment"]["body"]["table_id"] == "L"
    assert svc.ok("GET", "/v1/tables/L/live-config", "admin") == config
    assert svc.call("GET", "/v1/tables/nope/live-config", "worker").status_code == 404
    assert svc.call("GET", "/v1/tables/L/live-config", "reader").status_code == 403
    # A calibration the table names that is not on disk (the table was recalibrated): said, not hidden.
    (folder / "L.json").unlink()
    assert svc.call("GET", "/v1/tables/L/live-config", "worker").status_code == 409


def test_worker_lost_is_raised_once_across_replicas_and_not_after_a_release(
    backend: str, service_factory: ServiceFactory
) -> None:
    with service_factory(backend=backend, lease_ttl_s=0.4, worker_check_s=0.05) as svc:
        for table in ("G", "H"):
            svc.ok("POST", "/v1/tables", "admin", 201, json={"id": table, "game": "hrd6"})
        with serve_app(create_app(svc.settings)):  # a second replica, its own monitor
            assert lease(svc, "G", "gone").status_code == 200
            assert lease(svc, "H", "clean").status_code == 200
            assert svc.call("DELETE", "/v1/tables/H/lease?worker_id=clean", "worker").status_code == 204
            deadline = time.monotonic() + 10
            while not alerts_of(svc, "worker_lost") and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(0.6)  # both monitors have looked again several times since
        lost = alerts_of(svc, "worker_lost")
        assert len(lost) == 1, lost
        assert lost[0]["table_id"] == "G"
        assert lost[0]["data"]["worker_id"] == "gone" and lost[0]["data"]["epoch"] == 1
        assert lost[0]["data"]["last_heartbeat"]
        # The worker comes back (its lost lease renewed, same epoch), then stops again: a new loss, said once.
        assert lease(svc, "G", "gone").json()["epoch"] == 1
        deadline = time.monotonic() + 10
        while len(alerts_of(svc, "worker_lost")) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert len(alerts_of(svc, "worker_lost")) == 2


def test_a_takeover_before_the_monitor_looks_still_says_the_worker_was_lost(
    service_factory: ServiceFactory,
) -> None:
    with service_factory(worker_check_s=60) as svc:  # the monitor does not look during this test
        svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "K", "game": "hrd6"})
        lease(svc, "K", "w1")
        expire(svc, "K")
        assert lease(svc, "K", "w2").json()["epoch"] == 2
        lost = alerts_of(svc, "worker_lost")
        assert [(a["data"]["worker_id"], a["data"]["epoch"]) for a in lost] == [("w1", 1)]


def test_external_workers_leave_camera_tables_to_the_workers(tmp_path: Path) -> None:
    def live_tables(external: bool) -> tuple[list[tuple[str, str, str, str | None]], Any]:
        settings = Settings(
            data_dir=tmp_path / f"data-{external}", live_tables=True, external_workers=external
        )
        database = Database(settings.resolved_database_url)
        try:
            database.migrate()
            with database.session() as session:
                session.add(GameTable(id="cam", game="hrd6", settings={}, camera_source="rtsp://cam/1"))
                create_key(session, role=Role.ADMIN, name="a")
            live = LiveService(settings=settings, database=database, metrics=Metrics(), app_state=None)
            tables = live._tables()
            if external:
                live.start()  # starts nothing: no loop, no thread to start them, no reader loaded
                started = live._starter
                live.stop()
                return tables, started
            return tables, None
        finally:
            database.dispose()

    assert live_tables(external=False)[0] == [("cam", "hrd6", "rtsp://cam/1", None)]
    assert live_tables(external=True) == ([], None)


def test_the_demo_table_is_left_to_a_worker_with_its_clips(service_factory: ServiceFactory) -> None:
    with service_factory(demo=True, external_workers=True) as svc:
        config = svc.ok("GET", "/v1/tables/demo/live-config", "worker")
        assert (config["game"], config["dice"], config["camera_source"]) == ("hrd10", 10, "<demo clips>")
        time.sleep(0.5)  # the in-process loops would have made their keys by now, had they started
        names = {key["name"] for key in svc.ok("GET", "/v1/keys", "admin")}
        assert "demo-dashboard" in names and not any(n.startswith(("live-", "demo-croupier")) for n in names)


def test_settings_read_the_worker_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THROWBOX_EXTERNAL_WORKERS", "true")
    monkeypatch.setenv("THROWBOX_LEASE_TTL_S", "2.5")
    settings = Settings()
    assert settings.external_workers is True and settings.lease_ttl_s == 2.5
    assert Settings(database_url=SecretStr("sqlite://")).external_workers is True
    monkeypatch.delenv("THROWBOX_EXTERNAL_WORKERS")
    assert Settings().external_workers is False  # the embedded default: `make run` unchanged


def test_an_alert_sent_again_with_its_key_is_the_same_alert(service: Service) -> None:
    """A worker's spool replays an alert whose first answer was lost: with its `alert_key` the service answers
    the alert already raised (200), with no second alert, audit entry or event; the key used for another
    alert is a 409; two sends at once still make one alert."""
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "AK", "game": "hrd10"})
    body = {"kind": "camera_lost", "message": "camera 2: no frames", "table_id": "AK", "data": {}}
    first = svc.ok("POST", "/v1/alerts", "worker", 201, json={**body, "alert_key": "w1-a1"})
    again = svc.ok("POST", "/v1/alerts", "worker", 200, json={**body, "alert_key": "w1-a1"})
    assert again["id"] == first["id"]
    other = svc.call("POST", "/v1/alerts", "worker", json={**body, "message": "other", "alert_key": "w1-a1"})
    assert other.status_code == 409 and "another alert" in other.json()["detail"]
    # Without a key, each send is an alert (as before).
    svc.ok("POST", "/v1/alerts", "worker", 201, json=body)
    with ThreadPoolExecutor(6) as pool:
        codes = list(
            pool.map(
                lambda _: (
                    svc.call("POST", "/v1/alerts", "worker", json={**body, "alert_key": "w1-a2"}).status_code
                ),
                range(6),
            )
        )
    assert sorted(codes) == [200] * 5 + [201], codes
    alerts = [a for a in svc.ok("GET", "/v1/alerts?table_id=AK", "admin") if a["kind"] == "camera_lost"]
    assert len(alerts) == 3  # w1-a1, the one without a key, w1-a2
    raised = [e for e in svc.ok("GET", "/v1/audit?limit=1000", "admin") if e["action"] == "alert.raise"]
    assert len([e for e in raised if e["payload"].get("table_id") == "AK"]) == 3
