"""Settings, evidence frames (SHA-256 at rest, checked when fetched), the audit trail over HTTP,
readiness and metrics."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from pydantic import SecretStr, ValidationError

from api.audit import evidence_path
from api.settings import Settings
from tests.api.conftest import Service, tiny_png

PNG = tiny_png(value=7)


def test_settings_from_environment_and_secrets_hidden(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("THROWBOX_DATA_DIR", str(tmp_path / "d"))
    monkeypatch.setenv("THROWBOX_DATABASE_URL", "postgresql+psycopg://tb:hunter2@db/throwbox")
    monkeypatch.setenv("THROWBOX_WEBHOOK_URLS", '["https://hooks.example/a"]')
    monkeypatch.setenv("THROWBOX_WEBHOOK_SECRET", "s3cret-value")
    settings = Settings()
    assert settings.data_dir == tmp_path / "d"
    assert settings.resolved_database_url == "postgresql+psycopg://tb:hunter2@db/throwbox"
    assert settings.webhook_urls == ["https://hooks.example/a"]
    shown = repr(settings) + str(settings) + settings.model_dump_json()
    assert "hunter2" not in shown and "s3cret-value" not in shown


def test_settings_default_sqlite_under_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path)
    assert settings.resolved_database_url == f"sqlite:///{(tmp_path / 'throwbox.sqlite3').resolve()}"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        # a webhook that nobody could verify
        ({"webhook_urls": ["https://h.example/x"]}, "THROWBOX_WEBHOOK_SECRET"),
        # not an HTTP URL
        ({"webhook_urls": ["ftp://h.example/x"], "webhook_secret": SecretStr("k")}, "http:// or https://"),
        # retries must be at least one attempt
        ({"webhook_max_attempts": 0}, "greater than or equal to 1"),
    ],
)
def test_bad_settings_are_refused_clearly(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("/", ".").replace("+", ".")):
        Settings(**overrides)  # type: ignore[arg-type]


def test_evidence_stored_by_sha256_and_checked_on_fetch(service: Service) -> None:
    svc = service
    stored = svc.ok("POST", "/v1/evidence", "reader", 201, content=PNG, headers={"Content-Type": "image/png"})
    sha = hashlib.sha256(PNG).hexdigest()
    assert stored == {"sha256": sha, "size_bytes": len(PNG), "media_type": "image/png"}
    fetched = svc.call("GET", f"/v1/evidence/{sha}", "surveillance")
    assert fetched.status_code == 200 and fetched.content == PNG
    assert fetched.headers["content-type"] == "image/png"
    # Refused uploads: wrong media type, empty body.
    assert (
        svc.call(
            "POST", "/v1/evidence", "reader", content=b"x", headers={"Content-Type": "text/plain"}
        ).status_code
        == 415
    )
    assert (
        svc.call(
            "POST", "/v1/evidence", "reader", content=b"", headers={"Content-Type": "image/png"}
        ).status_code
        == 422
    )
    # The declared type is checked against the bytes: a PNG declared as JPEG, text declared as PNG.
    for body, declared, named in (
        (PNG, "image/jpeg", "a PNG image"),
        (b"not a frame", "image/png", "none of these"),
    ):
        refused = svc.call("POST", "/v1/evidence", "reader", content=body, headers={"Content-Type": declared})
        assert refused.status_code == 415 and named in refused.json()["detail"], refused.text
    assert svc.call("GET", f"/v1/evidence/{'1' * 64}", "surveillance").status_code == 404
    # A roll refers to evidence by SHA-256; an unknown one is refused before anything is stored.
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "EV", "game": "hrd6"})
    svc.ok("POST", "/v1/rounds/1/no-more-bets", "dealer", 404)
    rid = svc.ok("POST", "/v1/tables/EV/rounds", "dealer", 201)["id"]
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    body = {
        "roll_id": "ev-1",
        "source": "reader",
        "verdict": "void",
        "faces": [],
        "evidence_sha256": "2" * 64,
    }
    assert svc.call("POST", "/v1/tables/EV/rolls", "reader", json=body).status_code == 404
    body["evidence_sha256"] = sha
    svc.ok("POST", "/v1/tables/EV/rolls", "reader", 201, json=body)
    # A frame changed on disk no longer matches its SHA-256: refused with 409, never served.
    path = evidence_path(svc.settings.evidence_dir, sha)
    path.write_bytes(PNG[:-1] + b"\x00")
    tampered = svc.call("GET", f"/v1/evidence/{sha}", "surveillance")
    assert tampered.status_code == 409 and "does not match" in tampered.json()["detail"]


def test_audit_trail_names_who_did_what(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "AU", "game": "hrd10"})
    rid = svc.ok("POST", "/v1/tables/AU/rounds", "dealer", 201)["id"]
    entries = svc.ok("GET", "/v1/audit", "surveillance")
    assert [(e["action"], e["actor"].split(":")[0]) for e in entries] == [
        ("table.create", "admin"),
        ("round.open", "dealer"),
    ]
    assert entries[1]["subject"] == f"round:{rid}"
    assert entries[1]["prev_hash"] == entries[0]["hash"]
    assert svc.ok("GET", "/v1/audit/verify", "admin") == {
        "ok": True,
        "entries": 2,
        "first_bad_seq": None,
        "problem": None,
    }


def test_table_config_checked_by_rules_engine(service: Service) -> None:
    svc = service
    bad = svc.call(
        "POST",
        "/v1/tables",
        "admin",
        json={"id": "B", "game": "hrd10", "settings": {"extra_roll_reach": "sometimes"}},
    )
    assert bad.status_code == 422
    assert bad.json()["detail"]["problems"][0]["clause"] == "settings"
    svc.ok(
        "POST",
        "/v1/tables",
        "admin",
        201,
        json={"id": "B", "game": "hrd10", "settings": {"extra_roll_reach": "one_circle"}},
    )
    assert svc.call("POST", "/v1/tables", "admin", json={"id": "B", "game": "hrd10"}).status_code == 409
    assert svc.call("POST", "/v1/tables", "admin", json={"id": "bad id!", "game": "hrd10"}).status_code == 422
    assert svc.call("POST", "/v1/tables", "admin", json={"id": "C", "game": "craps"}).status_code == 422


def test_readyz_and_metrics(service: Service) -> None:
    svc = service
    ready = svc.client.get(svc.base_url + "/readyz")
    body = ready.json()
    assert body["checks"]["database"] == {"ok": True, "detail": "reachable"}
    assert "calibration" not in body["checks"]  # a table's calibration is the table's, not the service's
    # Ready exactly when every check passes (the reader's weights may be absent in a fresh clone).
    assert body["ready"] == all(check["ok"] for check in body["checks"].values())
    assert ready.status_code == (200 if body["ready"] else 503)
    svc.call("GET", "/v1/tables", None)
    text = svc.client.get(svc.base_url + "/metrics").text
    assert 'throwbox_http_requests_total{method="GET",route="/v1/tables",status="401"} 1.0' in text
    assert "throwbox_http_request_duration_seconds_bucket" in text
    assert 'throwbox_errors_total{kind="client_4xx"}' in text
    # A table cannot name a calibration that is not there (tests/api/test_table_faults.py: its faults).
    table = {"id": "CAL", "game": "hrd10", "calibration_id": "CAL"}
    missing = svc.call("POST", "/v1/tables", "admin", json=table)
    assert missing.status_code == 404 and "no calibration 'CAL'" in missing.json()["detail"]


def test_migrations_match_the_models(service: Service) -> None:
    # The schema Alembic built is the one the models describe: nothing to autogenerate.
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext
    from sqlalchemy import create_engine

    from api.db.models import Base

    engine = create_engine(service.settings.resolved_database_url)
    try:
        with engine.connect() as connection:
            diffs = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    finally:
        engine.dispose()
    assert diffs == []


def test_readyz_models_check(service: Service, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import json

    from vision import onnx_session

    manifest = tmp_path / "manifest.json"
    entry = {"sha256": "0" * 64, "version": "1", "input_size_hw": [64, 64]}
    manifest.write_text(json.dumps({"models": {"detector": {"file": "det.onnx", **entry}}}))
    monkeypatch.setattr(onnx_session, "MANIFEST_PATH", manifest)
    ready = service.client.get(service.base_url + "/readyz")
    check = ready.json()["checks"]["models"]
    assert ready.status_code == 503 and check["ok"] is False
    assert "det.onnx" in check["detail"]  # the weight file the manifest names is not there
    manifest.unlink()
    monkeypatch.setattr("api.routes.health.MODELS_RETRY_S", 0.0)  # no waiting for the retry
    check = service.client.get(service.base_url + "/readyz").json()["checks"]["models"]
    assert check == {"ok": False, "detail": f"model manifest not found: {manifest}"}


def test_stored_read_and_its_frame(service: Service) -> None:
    from api.audit import store_evidence
    from api.db.models import Read
    from api.db.session import Database

    svc = service
    database = Database(svc.settings.resolved_database_url)
    try:
        with database.session() as session:
            sha = store_evidence(
                session,
                evidence_dir=svc.settings.evidence_dir,
                data=PNG,
                media_type="image/png",
                max_bytes=svc.settings.max_evidence_bytes,
            )
            document = {
                "verdict": "valid",
                "faces": [1, 2, 3, 4, 5, 6],
                "winner": 1,
                "match_count": "no_match",
            }
            session.add(
                Read(id="r1", table_id=None, result=document, evidence_sha256=sha, created_by="reader:t#1")
            )
    finally:
        database.dispose()
    read = svc.ok("GET", "/v1/reads/r1", "surveillance")
    assert read["faces"] == [1, 2, 3, 4, 5, 6] and read["evidence_sha256"] == sha
    frame = svc.call("GET", "/v1/reads/r1/frame", "dealer")
    assert frame.status_code == 200 and frame.content == PNG
    assert frame.headers["x-content-sha256"] == hashlib.sha256(frame.content).hexdigest()
    assert svc.call("GET", "/v1/reads/nope/frame", "admin").status_code == 404
    evidence_path(svc.settings.evidence_dir, sha).write_bytes(b"swapped")
    assert svc.call("GET", "/v1/reads/r1/frame", "admin").status_code == 409


def test_unreachable_database_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    env = {
        **os.environ,
        "THROWBOX_DATA_DIR": str(tmp_path),
        "THROWBOX_DATABASE_URL": "postgresql+psycopg://tb:hunter2@127.0.0.1:1/throwbox",
    }
    done = subprocess.run(
        [sys.executable, "-c", "from api.cli import main; main()", "audit", "verify"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("error: cannot read the schema revision: OperationalError: ")
    assert "hunter2" not in done.stderr + done.stdout
