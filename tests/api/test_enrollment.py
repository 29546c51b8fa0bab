"""Table enrollment through the service (issue 47): `POST /v1/tables/{id}/enrollment` with each source as a
background job followed in the database, reads that name the enrollment, refusals that change nothing, the
summary and its removal; and `throwbox enroll --frames / --confirmed`.

The reader is the real one (detector and all) with its face model replaced by a fake that needs no weights
(tests/vision/enroll_data.py): sure every die shows a 1, with an embedding that tells the drawn dice apart,
so only an enrollment reads them right.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr
from sqlalchemy import func, select
from typer.testing import CliRunner

from api.auth import Role, create_key
from api.db.models import AuditEntry, EnrollmentJob
from api.db.session import Database
from api.main import create_app
from api.read_records import record_read
from api.settings import Settings
from tests.api.conftest import Service, database_url
from tests.conftest import serve_app
from tests.vision.enroll_data import (
    CentreGreySession,
    ProbsOnlySession,
    SureRightSession,
    annotated,
    die_boxes,
    fake_face_model,
    fake_manifest,
    frame,
    frames_zip,
    jpeg,
    photos_zip,
)

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "layout" / "correct.jpg"


@contextmanager
def enroll_service(
    backend: str,
    data_dir: Path,
    *,
    fake_face: bool = True,
    session: type[CentreGreySession] = CentreGreySession,
) -> Iterator[tuple[Service, Any]]:
    """The service with its reader's face model faked by `session` (or the shipped one), keys for every
    role, table T."""
    from vision.reader import Reader

    with database_url(backend, data_dir) as url:
        settings = Settings(data_dir=data_dir, database_url=SecretStr(url) if url else None)
        app = create_app(settings)
        reader = Reader(threads=1)
        if fake_face:
            fake = fake_face_model(data_dir.parent / f"model-{uuid.uuid4().hex[:6]}", session)
            reader.onnx_models["pips"] = fake
            reader.faces.model = fake
            reader.models = {**reader.models, "pips": fake.spec.tag}
        app.state.reader = reader
        with serve_app(app) as base_url, httpx.Client(timeout=30.0) as client:
            with app.state.database.session() as session:
                keys = {
                    role.value: create_key(session, role=role, name=f"t-{role.value}").secret for role in Role
                }
            svc = Service(base_url=base_url, settings=settings, keys=keys, client=client)
            svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd10"})
            yield svc, app


def wait_done(svc: Service, job_id: str, timeout_s: float = 30.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        job: dict[str, Any] = svc.ok("GET", f"/v1/enrollment-jobs/{job_id}", "surveillance")
        if job["state"] in ("done", "failed") or time.monotonic() > deadline:
            return job
        time.sleep(0.05)


def post(
    svc: Service, source: str, archive: bytes | None = None, who: str = "admin", **form: str
) -> httpx.Response:
    files = {"archive": ("dice.zip", archive, "application/zip")} if archive is not None else None
    data = {"source": source, **form}
    return svc.call("POST", "/v1/tables/T/enrollment", who, data=data, files=files)


# Confirmed rolls: (the reader's faces, None where unsure; the dealer's faces). See the module docstring of
# api/enrollment_sources.py for the rule; the dice used per face are counted in CONFIRMED_PER_FACE.
CONFIRMED_ROLLS = [
    ([None, 1, 2, 2, 3, 3, 4, 4, 5, 5], [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]),  # one unsure die: all 10
    ([None, None, None, 1, 2, 3, 4, 5, 6, 6], [6, 6, 6, 1, 2, 3, 4, 5, 6, 6]),  # the faces left all 6: all 10
    ([None, None, 3, 4, 5, 6, 1, 2, 3, 4], [1, 2, 3, 4, 5, 6, 1, 2, 3, 4]),  # 1 and 2 left for two: 8
    ([6, 1, 2, 3, 4, 5, 1, 2, 3, 4], [1, 1, 2, 3, 4, 5, 1, 2, 3, 4]),  # the reader's sure 6 not keyed: none
]
CONFIRMED_PER_FACE = {"1": 4, "2": 4, "3": 5, "4": 5, "5": 4, "6": 6}


def add_confirmed_rolls(svc: Service, app: Any, rolls: list[tuple[list[int | None], list[int]]]) -> list[str]:
    """For each: a read of a drawn frame (the reader's faces), and the dealer's keyed roll naming it."""
    roll_ids = []
    for n, (read_faces, confirmed) in enumerate(rolls):
        read_id = uuid.uuid4().hex
        dice = [
            {"face": f, "uncertain": f is None, "box_xyxy": list(box), "cocked": False, "stacked": False}
            for f, box in zip(read_faces, die_boxes(len(read_faces)), strict=True)
        ]
        document = {"verdict": "no_decision", "faces": [], "dice": dice}
        with app.state.database.session() as session:
            record_read(
                session,
                settings=svc.settings,
                read_id=read_id,
                table_id="T",
                document=document,
                evidence_jpeg=jpeg(annotated(frame(confirmed))),  # drawn over: not learned from
                actor="test",
                frame_jpeg=jpeg(frame(confirmed)),
            )
        round_id = svc.ok("POST", "/v1/tables/T/rounds", "dealer", 201)["id"]
        svc.ok("POST", f"/v1/rounds/{round_id}/no-more-bets", "dealer")
        roll_id = f"keyed-{n}"
        body = {
            "roll_id": roll_id,
            "source": "dealer",
            "verdict": "valid",
            "faces": confirmed,
            "read_id": read_id,
        }
        answer = svc.ok("POST", "/v1/tables/T/rolls", "dealer", 201, json=body)
        assert answer["applied"], answer
        if not answer["settled"]:  # an Extra Roll may be due: let the round end so the next one opens
            extra = {**body, "roll_id": f"{roll_id}-x", "read_id": None, "faces": confirmed[:1]}
            svc.ok("POST", "/v1/tables/T/rolls", "dealer", 201, json=extra)
        roll_ids.append(roll_id)
    return roll_ids


@pytest.mark.parametrize("source", ["photos", "frames", "confirmed"])
def test_each_source_enrolls_the_table_and_reads_name_it(backend: str, tmp_path: Path, source: str) -> None:
    with enroll_service(backend, tmp_path / "data") as (svc, app):
        if source == "confirmed":
            add_confirmed_rolls(svc, app, CONFIRMED_ROLLS)
            answer = post(svc, "confirmed")
            expected = CONFIRMED_PER_FACE
        elif source == "photos":
            answer = post(svc, "photos", photos_zip({f: 12 for f in range(1, 7)}))
            expected = {str(f): 10 for f in range(1, 7)}
        else:
            answer = post(svc, "frames", frames_zip())
            expected = {"1": 4, "2": 4, "3": 4, "4": 4, "5": 5, "6": 5}
        assert answer.status_code == 202, answer.text
        started = answer.json()
        assert started["state"] == "queued" and started["dice_per_face"] == expected
        job = wait_done(svc, started["job_id"])
        assert job["state"] == "done", job
        assert job["progress"] == 1.0 and job["error"] is None
        assert job["held_in_accuracy"] == 1.0 and job["dice_per_face"] == expected
        # Proved on dice held out of each fit: the shipped head reads only the 1s right, the enrolled all.
        validation = job["validation"]
        assert validation["helps"] and not validation["forced"] and validation["folds"] == 5
        assert validation["dice"] == sum(expected.values()) == validation["enrolled_right"]
        assert validation["shipped_right"] == int(expected["1"])
        if source == "confirmed":
            report = job["examples"]
            assert (report["rolls_used"], report["rolls_skipped"]) == (3, 1)
            assert [u["how"] for u in report["used"]] == [
                "ambiguous",
                "all_equal",
                "one_unsure",
            ]  # newest first
            assert set(report["used"][0]["dice_skipped"]) == {"1", "2"}  # its two unsure dice
            assert "disagree" in report["skipped"][0]["reason"]

        # Another replica (a database connection of its own) reads the same job.
        replica = Database(svc.settings.resolved_database_url)
        try:
            with replica.read_session() as session:
                row = session.get(EnrollmentJob, started["job_id"])
                assert row is not None and (row.state, row.progress) == ("done", 1.0)
                assert row.result_sha256 == job["result_sha256"]
        finally:
            replica.dispose()

        summary = svc.ok("GET", "/v1/tables/T/enrollment", "surveillance")
        assert summary["sha256"] == job["result_sha256"] and summary["dice_per_face"] == expected
        assert summary["validation"] == validation
        assert (
            summary["fitted_at"] is not None
            and summary["face_model_sha256"] == app.state.reader.onnx_models["pips"].spec.sha256
        )

        # A read at the table names the enrollment; one without a table, the shipped model.
        image = {"image": ("f.jpg", FIXTURE.read_bytes(), "image/jpeg")}
        read = svc.ok("POST", "/v1/reads", "reader", 201, files=image, data={"table_id": "T"})
        assert read["models"]["pips"] == f"fake_face+enroll:T:{job['result_sha256'][:8]}"
        plain = svc.ok("POST", "/v1/reads", "reader", 201, files=image)
        assert plain["models"]["pips"] == "fake_face"

        events = svc.client.get(
            svc.base_url + "/v1/events?follow=false&types=enrollment", headers=svc.headers("admin")
        )
        assert '"action": "fitted"' in events.text or '"action":"fitted"' in events.text
        audit = svc.ok("GET", "/v1/audit", "admin")
        actions = [e["action"] for e in audit]
        assert "enrollment.request" in actions and "enrollment.fitted" in actions

        # Removed (admin only): the table reads with the shipped model again.
        assert svc.call("DELETE", "/v1/tables/T/enrollment", "surveillance").status_code == 403
        gone = svc.ok("DELETE", "/v1/tables/T/enrollment", "admin")
        assert gone["sha256"] == job["result_sha256"]
        assert svc.call("GET", "/v1/tables/T/enrollment", "admin").status_code == 404
        again = svc.ok("POST", "/v1/reads", "reader", 201, files=image, data={"table_id": "T"})
        assert again["models"]["pips"] == "fake_face"
        with app.state.database.read_session() as session:
            deleted = session.scalar(
                select(func.count()).select_from(AuditEntry).where(AuditEntry.action == "enrollment.deleted")
            )
        assert deleted == 1


def _nothing_changed(svc: Service, app: Any) -> None:
    assert svc.call("GET", "/v1/tables/T/enrollment", "admin").status_code == 404
    with app.state.database.read_session() as session:
        assert session.scalar(select(func.count()).select_from(EnrollmentJob)) == 0
        assert not session.scalars(select(AuditEntry).where(AuditEntry.action.like("enrollment.%"))).all()


def _zip_of(entries: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def test_bad_requests_are_refused_and_change_nothing(tmp_path: Path) -> None:
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        cases: list[tuple[str, bytes | None, int, str]] = [
            ("photos", b"these bytes are not a zip", 415, "they are no zip archive"),  # the one upload rule
            ("photos", _zip_of({f"1/{k}.jpg": b"" for k in range(2001)}), 422, "2001 entries"),
            ("photos", _zip_of({"1/zeros.jpg": bytes(20 * 1024 * 1024)}), 422, "zip bomb"),
            (
                "photos",
                photos_zip({1: 3, 2: 3, 3: 3, 4: 3, 5: 3, 6: 3}, top="dice/seven/"),
                422,
                "folders named by their face",
            ),
            ("photos", photos_zip({1: 5, 2: 5, 3: 5, 4: 5, 5: 5, 6: 2}), 422, "too few labelled dice"),
            ("photos", None, 422, "needs a zip archive"),
            ("frames", photos_zip({1: 3}), 422, "has a YOLO label"),
            ("confirmed", None, 422, "too few labelled dice"),
            ("confirmed", _zip_of({}), 422, "takes no archive"),
        ]
        for source, archive, code, words in cases:
            answer = post(svc, source, archive)
            assert answer.status_code == code, (source, words, answer.text)
            assert words in answer.json()["detail"], (words, answer.json())
            _nothing_changed(svc, app)
        # The form, read by the route itself: what its schema refuses is refused.
        archive = photos_zip({f: 3 for f in range(1, 7)})
        for data, words in [
            ({"source": "photos", "max_dice": "17"}, "'max_dice' must be a whole number 18 .. 60"),
            ({"source": "photos", "max_dice": "²"}, "'max_dice' must be"),
            ({"source": "photos", "colour": "red"}, "unknown form fields: 'colour'"),
            ({"source": "everything"}, "'source' must be one of photos, frames, confirmed"),
        ]:
            files = {"archive": ("dice.zip", archive, "application/zip")}
            answer = svc.call("POST", "/v1/tables/T/enrollment", "admin", data=data, files=files)
            assert answer.status_code == 422 and words in answer.json()["detail"], answer.text
        plain = svc.call(
            "POST", "/v1/tables/T/enrollment", "admin", data={"source": "photos", "archive": "x"}
        )
        assert plain.status_code == 422 and "must be a file part" in plain.json()["detail"]
        _nothing_changed(svc, app)
        assert post(svc, "photos", archive, who="surveillance").status_code == 403
        missing = svc.call("POST", "/v1/tables/NOPE/enrollment", "admin", data={"source": "confirmed"})
        assert missing.status_code == 404
        _nothing_changed(svc, app)
        # Confirmed rolls that give too few dice say how many rolls were used and skipped.
        add_confirmed_rolls(svc, app, CONFIRMED_ROLLS[3:])
        refused = post(svc, "confirmed")
        assert refused.status_code == 422 and "(rolls: 0 used, 1 skipped)" in refused.json()["detail"]
        assert svc.call("GET", "/v1/enrollment-jobs/nope", "admin").status_code == 404


def test_a_face_model_without_embedding_cannot_be_enrolled(tmp_path: Path) -> None:
    with enroll_service("sqlite", tmp_path / "data", session=ProbsOnlySession) as (svc, app):
        answer = post(svc, "photos", photos_zip({f: 3 for f in range(1, 7)}))
        assert answer.status_code == 409 and "no embedding output" in answer.json()["detail"]
        _nothing_changed(svc, app)
        bad = post(svc, "photos", photos_zip({f: 3 for f in range(1, 7)}), force="yes")
        assert bad.status_code == 422 and "'force'" in bad.json()["detail"]


def test_the_shipped_face_model_can_be_enrolled(tmp_path: Path) -> None:
    """Stage 18c ships with its embedding output (models/expose_embedding.py): the job runs and proves or
    refuses itself with its figures."""
    with enroll_service("sqlite", tmp_path / "data", fake_face=False) as (svc, _):
        answer = post(svc, "photos", photos_zip({f: 4 for f in range(1, 7)}))
        assert answer.status_code == 202, answer.text
        job = wait_done(svc, answer.json()["job_id"], timeout_s=60.0)
        validation = job["validation"]
        assert validation is not None and validation["dice"] == 24 and validation["folds"] == 5
        assert job["state"] == ("done" if validation["helps"] else "failed"), job


def test_an_enrollment_that_does_not_prove_itself_is_refused_unless_forced(tmp_path: Path) -> None:
    with enroll_service("sqlite", tmp_path / "data", session=SureRightSession) as (svc, app):
        archive = photos_zip({f: 5 for f in range(1, 7)})
        refused = wait_done(svc, post(svc, "photos", archive).json()["job_id"])
        assert refused["state"] == "failed" and refused["result_sha256"] is None
        assert "does not prove itself" in refused["error"]
        assert "shipped head 100.0 % (30/30" in refused["error"] and "enrolled" in refused["error"]
        figures = refused["validation"]
        assert figures["shipped_right"] == 30 and not figures["helps"] and not figures["forced"]
        assert svc.call("GET", "/v1/tables/T/enrollment", "admin").status_code == 404
        with app.state.database.read_session() as session:
            assert not session.scalars(
                select(AuditEntry).where(AuditEntry.action == "enrollment.fitted")
            ).all()

        forced = wait_done(svc, post(svc, "photos", archive, force="true").json()["job_id"])
        assert forced["state"] == "done" and forced["validation"]["forced"], forced
        summary = svc.ok("GET", "/v1/tables/T/enrollment", "surveillance")
        assert summary["sha256"] == forced["result_sha256"] and summary["validation"]["forced"]
        with app.state.database.read_session() as session:
            fitted = session.scalars(select(AuditEntry).where(AuditEntry.action == "enrollment.fitted")).all()
            requested = session.scalars(
                select(AuditEntry).where(AuditEntry.action == "enrollment.request")
            ).all()
        assert len(fitted) == 1 and '"forced": true' in fitted[0].payload.replace('":true', '": true')
        assert sorted('"force": true' in r.payload.replace('":true', '": true') for r in requested) == [
            False,
            True,
        ]


def test_one_job_at_a_time_per_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import api.routes.enrollment as route

    monkeypatch.setattr(route, "start_job", lambda **kwargs: None)  # the first job stays queued
    with enroll_service("sqlite", tmp_path / "data") as (svc, _):
        archive = photos_zip({f: 3 for f in range(1, 7)})
        first = post(svc, "photos", archive)
        assert first.status_code == 202
        second = post(svc, "photos", archive)
        assert second.status_code == 409 and first.json()["job_id"] in second.json()["detail"]


def test_enroll_command_frames_and_confirmed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import vision.onnx_session as onnx_session
    from api.cli import app as cli
    from tests.vision.enroll_data import CentreGreySession, write_frames

    manifest = fake_manifest(tmp_path / "models")
    data_dir = tmp_path / "data"
    with enroll_service("sqlite", data_dir) as (svc, app):
        add_confirmed_rolls(svc, app, CONFIRMED_ROLLS)
    monkeypatch.setattr(onnx_session, "onnxruntime_session", lambda *a: CentreGreySession())
    runner = CliRunner()
    base = ["enroll", "--table", "T", "--manifest", str(manifest), "--data-dir", str(data_dir)]

    out = runner.invoke(cli, [*base, "--confirmed"])
    assert out.exit_code == 0, out.output
    assert "rolls: 3 used, 1 skipped" in out.output and "-> 100.0 %" in out.output
    from vision.pips.enrolled import load_enrollment

    saved = load_enrollment(data_dir / "calibration", "T")
    assert saved is not None and saved.examples == CONFIRMED_PER_FACE
    database = Database(Settings(data_dir=data_dir).resolved_database_url)
    try:
        with database.read_session() as session:
            fitted = session.scalars(select(AuditEntry).where(AuditEntry.action == "enrollment.fitted")).all()
        assert len(fitted) == 1 and saved.checksum in fitted[0].payload
    finally:
        database.dispose()

    frames = write_frames(tmp_path / "frames")
    elsewhere = tmp_path / "cal"
    out = runner.invoke(cli, [*base, "--frames", str(frames), "--calibration-dir", str(elsewhere)])
    assert out.exit_code == 0, out.output
    other = load_enrollment(elsewhere, "T")
    assert other is not None and other.examples == {"1": 4, "2": 4, "3": 4, "4": 4, "5": 5, "6": 5}

    both = runner.invoke(cli, [*base, "--confirmed", "--frames", str(frames)])
    assert both.exit_code == 2 and "give one of" in both.output
    few = runner.invoke(cli, [*base[:2], "U", *base[3:], "--confirmed"])
    assert few.exit_code == 2 and "too few labelled dice" in few.output
