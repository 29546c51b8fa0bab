"""A worker key bound to one worker id (issue 50's loose end: a worker key could name any worker): it takes,
renews and releases leases and sends rolls as that worker only; another id is a 403 and changes nothing.
Unbound worker keys behave as before (tests/api/test_worker_api.py)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from tests.api.conftest import Service
from tests.api.test_worker_api import lease, open_for_dice


def bound_key(svc: Service, worker_id: str) -> dict[str, str]:
    made = svc.ok(
        "POST", "/v1/keys", "admin", 201, json={"role": "worker", "name": "cam-1", "worker_id": worker_id}
    )
    assert made["worker_id"] == worker_id
    return {"Authorization": f"Bearer {made['key']}"}


def test_a_bound_worker_key_acts_as_its_own_worker_only(service: Service) -> None:
    svc = service
    round_id = open_for_dice(svc, "B")
    key = bound_key(svc, "cam-1")

    def take(worker: str) -> httpx.Response:
        return svc.client.post(f"{svc.base_url}/v1/tables/B/lease", json={"worker_id": worker}, headers=key)

    refused = take("cam-2")
    assert refused.status_code == 403 and "bound to worker 'cam-1'" in refused.json()["detail"]
    granted = take("cam-1").json()
    assert (granted["worker_id"], granted["epoch"]) == ("cam-1", 1)

    # another worker's lease may not be released in its name
    other = svc.client.delete(f"{svc.base_url}/v1/tables/B/lease", params={"worker_id": "cam-2"}, headers=key)
    assert other.status_code == 403

    def roll(roll_id: str, worker: str | None) -> httpx.Response:
        headers = {**key, "X-Throwbox-Lease-Epoch": "1"}
        if worker is not None:
            headers["X-Throwbox-Worker-Id"] = worker
        body = {"roll_id": roll_id, "source": "reader", "verdict": "void", "faces": [], "round_id": round_id}
        return svc.client.post(f"{svc.base_url}/v1/tables/B/rolls", json=body, headers=headers)

    assert roll("B-1", "cam-2").status_code == 403  # a roll in another worker's name
    assert roll("B-2", None).status_code == 201  # no header: the key's own worker
    assert roll("B-3", "cam-1").status_code == 201
    applied = [r["roll_id"] for r in svc.ok("GET", "/v1/tables/B/rolls", "admin")]
    assert sorted(applied) == ["B-2", "B-3"]

    # an unbound worker key may still take the table over after the lease lapses; the bound key's stale
    # epoch is then fenced as any worker's
    assert lease(svc, "B", "cam-9").status_code == 409  # held by cam-1, unexpired
    assert (
        svc.client.delete(
            f"{svc.base_url}/v1/tables/B/lease", params={"worker_id": "cam-1"}, headers=key
        ).status_code
        == 204
    )
    assert lease(svc, "B", "cam-9").json()["epoch"] == 2
    late = roll("B-4", None)
    assert late.status_code == 409 and "lease_superseded" in late.json()["detail"]


def test_the_keys_api_records_and_checks_the_binding(service: Service) -> None:
    svc = service
    made = svc.ok(
        "POST", "/v1/keys", "admin", 201, json={"role": "worker", "name": "w", "worker_id": "cam-5"}
    )
    listed = {k["id"]: k for k in svc.ok("GET", "/v1/keys", "admin")}
    assert listed[made["id"]]["worker_id"] == "cam-5"
    assert svc.ok("POST", "/v1/keys", "admin", 201, json={"role": "worker", "name": "u"})["worker_id"] is None
    for body in (
        {"role": "dealer", "name": "d", "worker_id": "cam-5"},  # only a worker key is bound
        {"role": "worker", "name": "w", "worker_id": "bad id/"},  # an id a worker could not have
    ):
        assert svc.call("POST", "/v1/keys", "admin", json=body).status_code == 422
    entries = svc.ok("GET", "/v1/audit", "admin")
    created = [e for e in entries if e["action"] == "key.create" and e["subject"] == f"key:{made['id']}"]
    assert created and created[0]["payload"]["worker_id"] == "cam-5"


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["--role", "worker", "--worker-id", "floor-1"], 0, "bound to worker 'floor-1'"),
        (["--role", "reader", "--worker-id", "floor-1"], 2, "binds a worker key"),
        (["--role", "worker", "--worker-id", "no spaces"], 2, "--worker-id must be"),
    ],
)
def test_keys_create_binds_a_worker_key_on_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], code: int, says: str
) -> None:
    from api.cli import app

    monkeypatch.setenv("THROWBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("THROWBOX_DATABASE_URL", raising=False)
    assert CliRunner().invoke(app, ["db", "upgrade"]).exit_code == 0  # keys never make a database
    made = CliRunner().invoke(app, ["keys", "create", *args])
    assert made.exit_code == code, made.output
    assert says in made.output
    if code == 0:
        listed = CliRunner().invoke(app, ["keys", "list"])
        assert "worker_id=floor-1" in listed.stdout


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("tbx_abc_def\n", "tbx_abc_def"),  # the key alone
        (
            "created key 3 (w, role worker); it is shown once:\ntbx_abc_def\n",
            "tbx_abc_def",
        ),  # the whole output
        ("  tbx_abc_def  ", "tbx_abc_def"),
        ("", None),
        ("note\nother note\n", None),  # two lines, no key
        ("tbx_a_b\ntbx_c_d\n", None),  # two keys: which one?
    ],
)
def test_the_worker_reads_a_key_file_or_the_saved_output_of_keys_create(
    tmp_path: Path, text: str, key: str | None
) -> None:
    import typer

    from api.cli.worker import _read_key

    path = tmp_path / "worker.key"
    path.write_text(text, encoding="utf-8")
    if key is None:
        with pytest.raises(typer.BadParameter, match=r"worker\.key"):
            _read_key(path, "--key-file")
    else:
        assert _read_key(path, "--key-file") == key


def test_a_worker_whose_lease_is_refused_asks_again_later_not_every_second(
    service: Service, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A key bound to another worker id is refused (403) and will stay refused until an admin mends it: the
    worker says so once and asks again after `LEASE_REFUSED_RETRY_S`, not at every lease tick."""
    import time

    from api.worker import LEASE_REFUSED_RETRY_S, Worker

    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "R", "game": "hrd10"})
    made = svc.ok(
        "POST", "/v1/keys", "admin", 201, json={"role": "worker", "name": "w", "worker_id": "cam-1"}
    )
    worker = Worker(
        services=[svc.base_url],
        key=made["key"],
        tables=["R"],
        worker_id="cam-2",
        spool_dir=tmp_path / "spool",
    )
    runner = worker.runners["R"]
    try:
        with caplog.at_level("ERROR", logger="throwbox.worker"):
            assert runner._take() is False
        assert "bound to worker 'cam-1'" in caplog.text and "asking again in 30 s" in caplog.text
        assert runner.retry_at >= time.monotonic() + LEASE_REFUSED_RETRY_S - 5
        caplog.clear()
        with caplog.at_level("ERROR", logger="throwbox.worker"):
            assert runner._take() is False  # within the wait: no request, nothing logged
        assert caplog.text == "" and not runner.lease.held
    finally:  # never started: close what its constructor opened
        worker.control.close()
        worker.outbox.client.close()
        worker.spool.close()
