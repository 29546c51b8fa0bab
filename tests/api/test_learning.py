"""The table learns from its people (issue 56, item 3): a refit after every N confirmed dice, in the
background, stored only when it proves itself on dice it did not train on; its one line; going back.

A real server and a real SQLite database; the reader's face model is the fake of tests/vision/enroll_data.py
(`CentreGreySession` reads only the 1s right until enrolled, `SureRightSession` reads every die right, so a
refit cannot prove itself). Dealer rolls name reads of drawn frames, as in tests/api/test_enrollment.py.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from api import learning
from api.db.models import AuditEntry, EnrollmentJob
from api.read_records import record_read
from tests.api.conftest import Service
from tests.api.test_enrollment import FIXTURE, enroll_service
from tests.vision.enroll_data import SureRightSession, annotated, die_boxes, frame, jpeg

# (the reader's faces, None where unsure; the dealer's): every die certain, 20 dice covering each face 3+.
BATCH = [
    ([None, 1, 2, 2, 3, 3, 4, 4, 5, 5], [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]),
    ([None, None, None, 1, 2, 3, 4, 5, 6, 6], [6, 6, 6, 1, 2, 3, 4, 5, 6, 6]),
]


def confirm(
    svc: Service,
    app: Any,
    rolls: list[tuple[list[int | None], list[int]]],
    *,
    prefix: str,
    plain: bool = True,
) -> None:
    """For each: a read of a drawn frame, and the dealer's keyed roll naming it (the round settles). The
    read keeps its plain frame beside the annotated one, or (`plain=False`: stored before 2026-12-08) not."""
    for n, (read_faces, confirmed) in enumerate(rolls):
        read_id = uuid.uuid4().hex
        dice = [
            {"face": f, "uncertain": f is None, "box_xyxy": list(box), "cocked": False, "stacked": False}
            for f, box in zip(read_faces, die_boxes(len(read_faces)), strict=True)
        ]
        with app.state.database.session() as session:
            record_read(
                session,
                settings=svc.settings,
                read_id=read_id,
                table_id="T",
                document={"verdict": "no_decision", "faces": [], "dice": dice},
                evidence_jpeg=jpeg(annotated(frame(confirmed))),  # drawn over: not learned from
                actor="test",
                frame_jpeg=jpeg(frame(confirmed)) if plain else None,
            )
        round_id = svc.ok("POST", "/v1/tables/T/rounds", "dealer", 201)["id"]
        svc.ok("POST", f"/v1/rounds/{round_id}/no-more-bets", "dealer")
        body = {"roll_id": f"{prefix}-{n}", "source": "dealer", "verdict": "valid", "faces": confirmed}
        answer = svc.ok("POST", "/v1/tables/T/rolls", "dealer", 201, json={**body, "read_id": read_id})
        if not answer["settled"]:  # an Extra Roll: one die, so the round ends
            extra = {**body, "roll_id": f"{prefix}-{n}-x", "faces": confirmed[:1]}
            svc.ok("POST", "/v1/tables/T/rolls", "dealer", 201, json=extra)


def learning_jobs(app: Any) -> list[EnrollmentJob]:
    with app.state.database.read_session() as session:
        return list(
            session.scalars(
                select(EnrollmentJob)
                .where(EnrollmentJob.source == learning.LEARN_SOURCE)
                .order_by(EnrollmentJob.created_at)
            )
        )


def settled_jobs(app: Any, count: int, timeout_s: float = 60.0) -> list[EnrollmentJob]:
    """The table's learning jobs once `count` of them have ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        jobs = learning_jobs(app)
        if sum(j.state in ("done", "failed") for j in jobs) >= count or time.monotonic() > deadline:
            return jobs
        time.sleep(0.05)


def read_model(svc: Service) -> str:
    image = {"image": ("f.jpg", FIXTURE.read_bytes(), "image/jpeg")}
    return str(
        svc.ok("POST", "/v1/reads", "reader", 201, files=image, data={"table_id": "T"})["models"]["pips"]
    )


@pytest.fixture
def head_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The head's correction, with or without torch here: these tests are of that path (the fine-tune's are
    in test_learning_finetune.py); the fake face model is no ONNX file a fine-tune could start from."""
    monkeypatch.setattr(learning, "refit_path", lambda: "head")


def test_the_table_refits_every_n_dice_and_goes_back_in_one_call(tmp_path: Path, head_path: None) -> None:
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        state = svc.ok("GET", "/v1/tables/T/learning", "dealer")
        assert state["learn_every_dice"] == learning.LEARN_EVERY_DICE and state["path"] == "head"
        assert state["line"].startswith("reads with the shipped model; 0 confirmed dice")
        assert (
            svc.call("PUT", "/v1/tables/T/learning", "dealer", json={"learn_every_dice": 20}).status_code
            == 403
        )
        bad = svc.call("PUT", "/v1/tables/T/learning", "admin", json={"learn_every_dice": 0})
        assert bad.status_code == 422
        assert (
            svc.ok("PUT", "/v1/tables/T/learning", "admin", json={"learn_every_dice": 20})["learn_every_dice"]
            == 20
        )

        confirm(svc, app, BATCH[:1], prefix="a")  # 10 dice (11 with an Extra Roll): not yet
        assert learning_jobs(app) == []
        assert svc.ok("GET", "/v1/tables/T/learning", "dealer")["next_refit_in_dice"] in (9, 10)
        confirm(svc, app, BATCH[1:], prefix="a1")  # 20 or more: the refit starts in the background
        first = settled_jobs(app, 1)
        assert [j.state for j in first] == ["done"], [j.error for j in first]
        state = svc.ok("GET", "/v1/tables/T/learning", "surveillance")
        assert state["learned_from_dice"] == sum(first[0].dice_per_face.values()) >= 18
        assert state["held_out_accuracy"] == 1.0 and state["shipped_accuracy"] < 0.5
        assert state["line"] == (
            f"learned from {state['learned_from_dice']} dice on {state['learned_on']}, "
            "reads 100 % of its held-out dice"
        )
        assert state["learned_on"].startswith("20") and not state["has_previous"]
        one = first[0].result_sha256
        assert one is not None and read_model(svc) == f"fake_face+enroll:T:{one[:8]}"

        confirm(svc, app, BATCH, prefix="b")  # 20 more dice: a second refit, the first kept as previous
        second = settled_jobs(app, 2)
        assert [j.state for j in second] == ["done", "done"]
        two = second[1].result_sha256
        assert two is not None and two != one and read_model(svc) == f"fake_face+enroll:T:{two[:8]}"
        assert svc.ok("GET", "/v1/tables/T/learning", "dealer")["has_previous"]

        # Back: to the previous refit (the two swap), then to the shipped model; surveillance may not.
        assert (
            svc.call(
                "POST", "/v1/tables/T/learning/rollback", "surveillance", json={"to": "shipped"}
            ).status_code
            == 403
        )
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "previous"})
        assert read_model(svc) == f"fake_face+enroll:T:{one[:8]}"
        back = svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "shipped"})
        assert back["line"].startswith("reads with the shipped model") and back["has_previous"]
        assert read_model(svc) == "fake_face"
        again = svc.call("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "shipped"})
        assert again.status_code == 409 and "shipped model already" in again.json()["detail"]
        with app.state.database.read_session() as session:
            rolled = session.scalars(
                select(AuditEntry).where(AuditEntry.action == "enrollment.rolled_back")
            ).all()
            settings = session.scalars(
                select(AuditEntry).where(AuditEntry.action == "learning.settings")
            ).all()
        assert ['"to": "previous"' in e.payload.replace('":"', '": "') for e in rolled] == [True, False]
        assert len(settings) == 1
        assert svc.call("GET", "/v1/tables/NOPE/learning", "admin").status_code == 404


def test_a_refit_that_does_not_prove_itself_changes_nothing_and_says_why(
    tmp_path: Path, head_path: None
) -> None:
    with enroll_service("sqlite", tmp_path / "data", session=SureRightSession) as (svc, app):
        svc.ok("PUT", "/v1/tables/T/learning", "admin", json={"learn_every_dice": 20})
        confirm(svc, app, BATCH, prefix="a")
        jobs = settled_jobs(app, 1)
        assert [j.state for j in jobs] == ["failed"] and jobs[0].result_sha256 is None
        assert "does not prove itself" in (jobs[0].error or "")
        assert svc.call("GET", "/v1/tables/T/enrollment", "admin").status_code == 404
        state = svc.ok("GET", "/v1/tables/T/learning", "dealer")
        assert state["line"].startswith("reads with the shipped model") and "changed nothing" in state["line"]
        assert "does not prove itself" in state["line"] and state["last_refit"]["state"] == "failed"
        assert read_model(svc) == "fake_face"


def test_too_few_dice_of_a_face_is_a_failed_refit_saying_so(tmp_path: Path, head_path: None) -> None:
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        svc.ok("PUT", "/v1/tables/T/learning", "admin", json={"learn_every_dice": 10})
        confirm(svc, app, BATCH[:1], prefix="a")  # no 6 among them
        jobs = settled_jobs(app, 1)
        assert [j.state for j in jobs] == ["failed"] and "too few labelled dice" in (jobs[0].error or "")
        assert "6: 0" in (jobs[0].error or "")
        assert svc.call("GET", "/v1/tables/T/enrollment", "admin").status_code == 404


def test_refit_path_is_the_head_without_torch_and_the_fine_tune_with_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import importlib.util

    have_torch = importlib.util.find_spec("torch") is not None
    have_child = importlib.util.find_spec(learning.FINE_TUNE_MODULE) is not None
    assert learning.refit_path() == ("fine_tune" if have_torch and have_child else "head")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: object() if name in ("torch", learning.FINE_TUNE_MODULE) else real(name, *a),
    )
    assert learning.refit_path() == "fine_tune"
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else object())
    assert learning.refit_path() == "head"
    argv = learning.fine_tune_argv(work_dir=Path("/w"), table_id="T")
    assert argv[:3] == [sys.executable, "-m", learning.FINE_TUNE_MODULE] and argv[-2:] == ["--table", "T"]


@pytest.mark.parametrize("path", ["head", "fine_tune"])
def test_a_refit_takes_as_many_dice_as_its_path_uses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: learning.RefitPath
) -> None:
    """The fine-tune learns from up to FINE_TUNE_MAX_DICE of the table's dice, the head's refit from
    LEARN_MAX_DICE; the job's report names the path."""
    assert learning.FINE_TUNE_MAX_DICE > learning.LEARN_MAX_DICE
    asked: list[int] = []
    real = learning.learning_examples

    def spy(session: Any, *, table_id: str, evidence_dir: Path, limit: int) -> Any:
        asked.append(limit)
        return real(session, table_id=table_id, evidence_dir=evidence_dir, limit=limit)

    monkeypatch.setattr(learning, "refit_path", lambda: path)
    monkeypatch.setattr(learning, "learning_examples", spy)
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        job_id = learning.refit(
            database=app.state.database,
            calibration_dir=svc.settings.calibration_dir,
            evidence_dir=svc.settings.evidence_dir,
            table_id="T",
            face_model=lambda: app.state.reader.face_model,
            webhook_urls=[],
            confirmed=0,
        )
        with app.state.database.read_session() as session:
            job = session.get(EnrollmentJob, job_id)
            assert job is not None and job.state == "failed" and "too few" in (job.error or "").lower()
            assert job.examples["path"] == path
    assert asked == [learning.max_dice(path)]
    assert asked[0] == (learning.FINE_TUNE_MAX_DICE if path == "fine_tune" else learning.LEARN_MAX_DICE)


def test_the_fine_tune_runs_in_a_process_of_its_own_niced() -> None:
    done = learning.run_niced(
        [sys.executable, "-c", "import os; print(os.getpid(), os.nice(0))"], nice=learning.FINE_TUNE_NICE
    )
    pid, nice = (int(v) for v in done.stdout.split())
    assert done.returncode == 0 and pid != os.getpid()
    assert nice == min(19, os.nice(0) + learning.FINE_TUNE_NICE)


@pytest.mark.skipif(
    __import__("importlib.util").util.find_spec("torch") is None,
    reason="the torch fine-tune needs the train extra (torch), not installed here",
)
def test_with_torch_the_refit_takes_the_fine_tune_path() -> None:
    assert learning.refit_path() == "fine_tune"  # models.table_finetune is importable where torch is


def test_the_console_shows_the_tables_line(tmp_path: Path) -> None:
    with enroll_service("sqlite", tmp_path / "data") as (svc, _app):
        page = svc.client.get(svc.base_url + "/console")
        script = svc.client.get(svc.base_url + "/static/console.js")
        assert page.status_code == 200 and 'id="learning"' in page.text
        assert script.status_code == 200 and '"/learning"' in script.text and "showLearning" in script.text


def test_a_console_decision_teaches_by_its_labelled_boxes_and_its_roll_is_not_read_twice(
    tmp_path: Path,
) -> None:
    from api.db.models import ConsoleDecision, Read, Roll
    from tests.vision.enroll_data import die_boxes as boxes_of

    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        confirm(svc, app, BATCH[:1], prefix="a")  # roll a-0 (faces 1 1 2 2 3 3 4 4 5 5) naming its read
        with app.state.database.session() as session:
            read = session.scalars(select(Read).where(Read.table_id == "T")).one()
            roll = session.get(Roll, "a-0")
            assert roll is not None and read.evidence_sha256 is not None
            faces = [1, 1, 2, 2, 3, 3, 4, 4, 5, 5]
            box = [{"box_xyxy": list(b), "label": "die", "face": f, "origin": "reader", "kept": False}
                   for b, f in zip(boxes_of(10), faces, strict=True)]  # fmt: skip
            box[0] = {**box[0], "label": "no_die", "face": None}  # struck out: no die
            box[1] = {**box[1], "kept": True}  # an Extra Roll's kept die: not keyed, not learned
            box.append({"box_xyxy": list(boxes_of(11)[10]), "label": "die", "face": 6, "origin": "person"})
            session.add(
                ConsoleDecision(
                    roll_id="w-0", dealer_roll_id="a-0", table_id="T", round_id=roll.round_id or 1,
                    read_id=read.id, evidence_sha256=read.evidence_sha256, verdict="valid", faces=faces,
                    boxes=box, request_sha256="0" * 64, mismatch=False, decided_by="test",
                )
            )  # fmt: skip
        with app.state.database.read_session() as session:
            examples, report = learning.learning_examples(
                session, table_id="T", evidence_dir=svc.settings.evidence_dir
            )
            labelled = learning.labelled_boxes(session, "T")
        counts = {f: sum(1 for _, face in examples if face == f) for f in range(1, 7)}
        assert counts == {1: 0, 2: 2, 3: 2, 4: 2, 5: 2, 6: 1}  # the person's 6, not the struck or kept die
        assert report["console_rolls"] == 1 and report["rolls_used"] == 0  # a-0 is not read a second time
        assert all(crop.ndim == 3 and crop.shape[2] == 3 and crop.size > 0 for crop, _ in examples)
        assert [b["label"] for b in labelled[0]["boxes"]].count("no_die") == 1
        assert len(labelled[0]["boxes"]) == 10 and labelled[0]["boxes"][-1]["origin"] == "person"


def test_every_read_keeps_the_plain_frame_the_table_learns_from(tmp_path: Path) -> None:
    """The evidence frame has the reader's boxes and words drawn over the dice; beside it each read keeps
    the frame as the camera gave it (`frame_sha256`), and only that one is cut into labelled dice."""
    import cv2
    import numpy as np

    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        image = {"image": ("f.jpg", FIXTURE.read_bytes(), "image/jpeg")}
        read_id = svc.ok("POST", "/v1/reads", "reader", 201, files=image, data={"table_id": "T"})["read_id"]
        doc = svc.ok("GET", f"/v1/reads/{read_id}", "surveillance")
        assert doc["frame_sha256"] != doc["evidence_sha256"]

        def decoded(sha: str) -> Any:
            data = svc.call("GET", f"/v1/evidence/{sha}", "surveillance").content
            return cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR).astype(np.int16)

        original = cv2.imread(str(FIXTURE), cv2.IMREAD_COLOR).astype(np.int16)
        plain, evidence = decoded(doc["frame_sha256"]), decoded(doc["evidence_sha256"])
        assert float(np.abs(plain - original).mean()) < 2.0  # the camera's frame, JPEG at 95
        assert float(np.abs(evidence - original).max()) > 100  # drawn over

        # A read that kept only its annotated frame (stored before 2026-12-08) teaches nothing, and says so.
        confirm(svc, app, BATCH[:1], prefix="old", plain=False)
        with app.state.database.read_session() as session:
            examples, report = learning.learning_examples(
                session, table_id="T", evidence_dir=svc.settings.evidence_dir
            )
        assert examples == [] and report["rolls_used"] == 0
        assert "no plain frame" in report["skipped"][0]["reason"]


def test_the_table_learns_the_boxes_its_people_struck_out_and_reads_through_them(tmp_path: Path) -> None:
    """Console decisions whose struck-out boxes are the felt's print: the refit fits the table's no-die
    filter from the plain frames, proves it on frames it did not learn from, stores it; the table's live
    reader follows it (`models["no_die"]`); going back to the shipped model removes it."""
    import numpy as np

    from api.db.models import ConsoleDecision
    from api.live_reader import TableReader
    from tests.vision.test_no_die import table_frame
    from vision.table.no_die import load_no_die, no_die_path

    rng = np.random.default_rng(7)
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        for n in range(14):
            image, boxes, struck = table_frame(rng, 10, 2)
            read_id = uuid.uuid4().hex
            with app.state.database.session() as session:
                record_read(
                    session,
                    settings=svc.settings,
                    read_id=read_id,
                    table_id="T",
                    document={"verdict": "no_decision", "faces": [], "dice": []},
                    evidence_jpeg=jpeg(image),
                    actor="test",
                    frame_jpeg=jpeg(image),
                )
                labelled = [
                    {"box_xyxy": list(b), "label": "no_die" if s else "die", "face": None if s else 1,
                     "origin": "reader", "kept": False}
                    for b, s in zip(boxes, struck, strict=True)
                ]  # fmt: skip
                session.add(
                    ConsoleDecision(
                        roll_id=f"w-{n}", dealer_roll_id=f"d-{n}", table_id="T", round_id=n + 1,
                        read_id=read_id, evidence_sha256=None, verdict="valid", faces=[1] * 10,
                        boxes=labelled, request_sha256="0" * 64, mismatch=False, decided_by="test",
                    )
                )  # fmt: skip
        calibration_dir = svc.settings.calibration_dir
        outcome = learning.learn_no_die(
            app.state.database,
            calibration_dir=calibration_dir,
            evidence_dir=svc.settings.evidence_dir,
            table_id="T",
        )
        assert outcome["stored"], outcome
        assert (outcome["dice"], outcome["struck"]) == (140, 28)
        assert outcome["validation"]["dice_at_bar"] == 0 and outcome["validation"]["struck_at_bar"] >= 14
        entries = svc.ok("GET", "/v1/audit?subject=table:T&limit=1000", "admin")
        (audited,) = [e for e in entries if e["action"] == "learning.no_die"]
        assert audited["payload"]["stored"] is True
        state = svc.ok("GET", "/v1/tables/T/learning", "admin")
        assert "sets aside boxes like the 28 its people struck out" in state["line"]
        assert state["no_die"]["struck"] == 28 and state["no_die"]["validation"]["proves_itself"]

        table = TableReader(app.state.reader, calibration_dir=calibration_dir, table_id="T")
        assert table.models["no_die"].startswith("table:T:")
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "shipped"})
        assert load_no_die(calibration_dir, "T") is None and not no_die_path(calibration_dir, "T").exists()
        assert "no_die" not in table.models  # followed: the next read is the shipped reader's
