"""API keys: the service always keeps one active admin key, over the API (409) and in the CLI (exit 1)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select
from typer.testing import CliRunner

from api.auth import LastAdminKeyError, Role, create_key, revoke_key
from api.db.models import ApiKey
from api.db.session import Database
from tests.api.conftest import Service

runner = CliRunner()


def admin_ids(svc: Service) -> list[int]:
    listed = svc.ok("GET", "/v1/keys", "admin")
    return [k["id"] for k in listed if k["role"] == "admin" and k["revoked_at"] is None]


def test_the_last_active_admin_key_cannot_be_revoked(service: Service) -> None:
    svc = service
    (only,) = admin_ids(svc)
    # The only admin revokes itself: refused, with the reason, and the key still works.
    response = svc.call("DELETE", f"/v1/keys/{only}", "admin")
    assert response.status_code == 409
    assert response.json()["detail"] == (
        f"key {only} is the last active admin key: revoking it would leave no one able to administer "
        "the service; create another admin key first"
    )
    assert admin_ids(svc) == [only]
    # With a second admin, the first may go; then the second is the last one and stays.
    second = svc.ok("POST", "/v1/keys", "admin", 201, json={"role": "admin", "name": "second-admin"})
    assert svc.ok("DELETE", f"/v1/keys/{only}", "admin")["revoked_at"] is not None
    assert svc.call("GET", "/v1/keys", "admin").status_code == 401  # the first key is revoked indeed
    as_second = {"Authorization": f"Bearer {second['key']}"}
    refused = svc.client.delete(f"{svc.base_url}/v1/keys/{second['id']}", headers=as_second)
    assert refused.status_code == 409 and f"key {second['id']} is the last active admin key" in refused.text
    # Revoking the already revoked first key again is not a loss of the last admin: 200, as before.
    again = svc.client.delete(f"{svc.base_url}/v1/keys/{only}", headers=as_second)
    assert again.status_code == 200
    # Other roles' keys are revoked as before, and an unknown key is still a 404.
    reader = svc.client.post(
        f"{svc.base_url}/v1/keys", headers=as_second, json={"role": "reader", "name": "cam-9"}
    ).json()
    assert svc.client.delete(f"{svc.base_url}/v1/keys/{reader['id']}", headers=as_second).status_code == 200
    assert svc.client.delete(f"{svc.base_url}/v1/keys/99999", headers=as_second).status_code == 404
    listed = svc.client.get(f"{svc.base_url}/v1/keys", headers=as_second).json()
    assert [k["id"] for k in listed if k["role"] == "admin" and k["revoked_at"] is None] == [second["id"]]


@pytest.mark.parametrize(
    ("admins", "revoke", "refused"),
    [
        (1, 0, True),  # the only admin key
        (2, 0, False),  # another admin key stays active
        (2, 1, False),
    ],
)
def test_revoke_key_keeps_one_admin(tmp_path: Path, admins: int, revoke: int, refused: bool) -> None:
    database = Database(f"sqlite:///{tmp_path / 'keys.sqlite3'}")
    database.migrate()
    try:
        with database.session() as session:
            ids = [create_key(session, role=Role.ADMIN, name=f"admin-{i}").key_id for i in range(admins)]
            create_key(session, role=Role.SURVEILLANCE, name="watcher")  # not an admin: does not count
        with database.session() as session:
            if refused:
                with pytest.raises(LastAdminKeyError, match="last active admin key"):
                    revoke_key(session, ids[revoke])
            else:
                assert revoke_key(session, ids[revoke]) is True
        with database.read_session() as session:
            active = session.scalars(
                select(ApiKey.id).where(ApiKey.role == "admin", ApiKey.revoked_at.is_(None))
            ).all()
        assert len(active) == (admins if refused else admins - 1) and len(active) >= 1
    finally:
        database.dispose()


def test_cli_refuses_to_revoke_the_last_admin_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from api.cli import app

    monkeypatch.setenv("THROWBOX_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("THROWBOX_DATABASE_URL", raising=False)
    assert runner.invoke(app, ["db", "upgrade"]).exit_code == 0  # keys never make a database
    made = runner.invoke(app, ["keys", "create", "--role", "admin", "--name", "ops"])
    assert made.exit_code == 0, made.output
    key_id = made.stdout.split()[2]  # "created key <id> (...)"
    refused = runner.invoke(app, ["keys", "revoke", key_id])
    assert refused.exit_code == 1
    assert f"error: key {key_id} is the last active admin key" in refused.stderr
    assert "create another admin key first" in refused.stderr
    listed = runner.invoke(app, ["keys", "list"])
    assert f"{key_id}\tadmin\tactive\tops" in listed.stdout
    # With a second admin key, the first one can be revoked.
    second = runner.invoke(app, ["keys", "create", "--role", "admin", "--name", "ops-2"])
    assert second.exit_code == 0, second.output
    revoked = runner.invoke(app, ["keys", "revoke", key_id])
    assert revoked.exit_code == 0, revoked.output
    assert f"revoked key {key_id}" in revoked.stdout
    assert f"{key_id}\tadmin\trevoked\tops" in runner.invoke(app, ["keys", "list"]).stdout


def test_two_admins_revoking_each_other_at_once_leave_one(service: Service) -> None:
    svc = service
    (first,) = admin_ids(svc)
    survivor: tuple[int, str] = (first, svc.keys["admin"])
    for n in range(5):
        as_survivor = {"Authorization": f"Bearer {survivor[1]}"}
        other = svc.client.post(
            f"{svc.base_url}/v1/keys", headers=as_survivor, json={"role": "admin", "name": f"admin-{n}"}
        ).json()
        admins = [survivor, (other["id"], other["key"])]
        barrier = threading.Barrier(2)

        def revoke_other(me: int, barrier: threading.Barrier = barrier, admins: list[Any] = admins) -> int:
            (_, key), (target, _) = admins[me], admins[1 - me]
            with httpx.Client(timeout=30) as client:
                barrier.wait()
                url = f"{svc.base_url}/v1/keys/{target}"
                return client.delete(url, headers={"Authorization": f"Bearer {key}"}).status_code

        with ThreadPoolExecutor(2) as pool:
            codes = list(pool.map(revoke_other, [0, 1]))
        # One wins; the other is refused as the last admin (409) or is already revoked itself (401).
        assert sorted(codes) in ([200, 401], [200, 409]), codes
        survivor = admins[codes.index(200)]
        listed = svc.client.get(f"{svc.base_url}/v1/keys", headers={"Authorization": f"Bearer {survivor[1]}"})
        active = [k["id"] for k in listed.json() if k["role"] == "admin" and k["revoked_at"] is None]
        assert active == [survivor[0]]
