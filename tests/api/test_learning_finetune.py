"""The table's refit by fine-tune (issue 56, item 3), wired end to end without torch: the service writes the
job folder, runs a fake child (a small script given as `api.learning.fine_tune_argv`) that writes a
candidate ONNX (a tiny graph built here with the same outputs as the fake face model) and `result.json`,
guards the result, stores the model beside the table's calibration, and the table's reads name it; a
refused result, a crashing, silent or stuck child change nothing and say why; rollback works across both
kinds of refit. A real server and SQLite, as tests/api/test_learning.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api import learning, learning_tune
from tests.api.test_enrollment import enroll_service
from tests.api.test_learning import BATCH, confirm, read_model, settled_jobs
from tests.vision.enroll_data import EMBED

onnx = pytest.importorskip("onnx")  # the dev extra builds the fake child's candidate

CHILD = """
import hashlib, json, shutil, sys, time
from pathlib import Path
import numpy as np
work, mode, tiny = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
job = json.loads((work / "job.json").read_text())
data = np.load(work / "crops.npz")
held = int(data["held_out"].sum())
assert data["crops"].shape[1:] == (64, 64, 3) and len(data["faces"]) == len(data["crops"])
if mode == "crash":
    sys.exit("boom: the fine-tune fell over")
if mode == "silent":
    sys.exit(0)
if mode == "stuck":
    time.sleep(30)
shutil.copyfile(tiny, work / "candidate.onnx")
better = mode == "better"
result = {
    "base_sha256": job["base_sha256"],
    "candidate": "candidate.onnx",
    "candidate_sha256": hashlib.sha256((work / "candidate.onnx").read_bytes()).hexdigest(),
    "held_out": {"dice": held, "shipped_right": 0, "tuned_right": held if better else 0,
                 "shipped_sure_wrong": held, "tuned_sure_wrong": 0 if better else held + 1},
    "steps": 3, "trained_on_dice": len(data["faces"]) - held,
}
(work / "result.json").write_text(json.dumps(result))
"""


def tiny_face_model(path: Path, *, seed: int) -> Path:
    """A real ONNX graph with the fake face model's outputs: `probs` (n, 6) and `embedding` (n, EMBED),
    each a softmax or a linear map of the crop's mean colour."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.normal(size=(3, 6)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.normal(size=(3, EMBED)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("ReduceMean", ["crops"], ["pooled"], axes=[2, 3], keepdims=0),
        helper.make_node("MatMul", ["pooled", "w1"], ["logits"]),
        helper.make_node("Softmax", ["logits"], ["probs"], axis=1),
        helper.make_node("MatMul", ["pooled", "w2"], ["embedding"]),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_face",
        [helper.make_tensor_value_info("crops", TensorProto.FLOAT, ["n", 3, 64, 64])],
        [
            helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["n", 6]),
            helper.make_tensor_value_info("embedding", TensorProto.FLOAT, ["n", EMBED]),
        ],
        initializer=[w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return path


@pytest.fixture
def child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set the fake child's mode (and its candidate): the refit takes the fine-tune path with it."""
    script = tmp_path / "child.py"
    script.write_text(CHILD, encoding="utf-8")
    state: dict[str, Any] = {"mode": "better", "seed": 0}

    def argv(*, work_dir: Path, table_id: str) -> list[str]:
        tiny = tiny_face_model(tmp_path / f"tiny-{state['seed']}.onnx", seed=state["seed"])
        return [sys.executable, str(script), str(work_dir), state["mode"], str(tiny)]

    monkeypatch.setattr(learning, "refit_path", lambda: "fine_tune")
    monkeypatch.setattr(learning, "fine_tune_argv", argv)
    return state


def tuned_files(svc: Any) -> list[str]:
    return sorted(p.name for p in svc.settings.calibration_dir.glob("T.finetune-*.onnx"))


def test_a_fine_tune_that_proves_itself_is_stored_read_with_and_rolled_back(
    tmp_path: Path, child: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        svc.ok("PUT", "/v1/tables/T/learning", "admin", json={"learn_every_dice": 20})
        # The first refit takes the head's path (as where torch is absent), the second the fine-tune's.
        monkeypatch.setattr(learning, "refit_path", lambda: "head")
        confirm(svc, app, BATCH, prefix="a")
        head = settled_jobs(app, 1)
        assert [j.state for j in head] == ["done"], [j.error for j in head]
        head_tag = f"fake_face+enroll:T:{head[0].result_sha256[:8]}"
        assert read_model(svc) == head_tag
        monkeypatch.setattr(learning, "refit_path", lambda: "fine_tune")
        confirm(svc, app, BATCH, prefix="b")
        jobs = settled_jobs(app, 2)
        assert [j.state for j in jobs] == ["done", "done"], [j.error for j in jobs]
        tuned = jobs[1]
        assert tuned.examples["path"] == "fine_tune" and tuned.examples["validation"]["kind"] == "fine_tune"
        tune_tag = f"fake_face+tune:T:{tuned.result_sha256[:8]}"
        assert read_model(svc) == tune_tag
        files = tuned_files(svc)
        summary = svc.ok("GET", "/v1/tables/T/enrollment", "admin")
        assert summary["sha256"] == tuned.result_sha256 and len(files) == 1
        record = json.loads((svc.settings.calibration_dir / "T.enrollment.json").read_text())
        assert record["version"] == 2 and record["body"]["model_file"] == files[0]
        state = svc.ok("GET", "/v1/tables/T/learning", "dealer")
        assert state["path"] == "fine_tune" and state["has_previous"]
        assert state["held_out_accuracy"] == 1.0 and "reads 100 % of its held-out dice" in state["line"]

        # Back to the head's refit, forward to the fine-tune (the two swap), then to the shipped model.
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "previous"})
        assert read_model(svc) == head_tag
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "previous"})
        assert read_model(svc) == tune_tag
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "shipped"})
        assert read_model(svc) == "fake_face"
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "previous"})
        assert read_model(svc) == tune_tag and tuned_files(svc) == files

        # A second fine-tune replaces it (kept as the previous); a file neither names is removed.
        child["seed"] = 1
        confirm(svc, app, BATCH, prefix="c")
        third = settled_jobs(app, 3)[2]
        assert third.state == "done", third.error
        assert read_model(svc) == f"fake_face+tune:T:{third.result_sha256[:8]}"
        assert len(tuned_files(svc)) == 2 and files[0] in tuned_files(svc)
        svc.ok("POST", "/v1/tables/T/learning/rollback", "admin", json={"to": "previous"})
        assert read_model(svc) == tune_tag


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("worse", "the fine-tune does not prove itself, so it was not stored"),  # the guard refuses it
        ("crash", "exit 1): boom: the fine-tune fell over"),  # the child fails: its last line is said
        ("silent", "the fine-tune wrote no readable result.json"),  # exit 0 and no result
        ("stuck", "the fine-tune ran past 2 s and was stopped"),  # past its time limit
    ],
)
def test_a_fine_tune_that_fails_changes_nothing_and_says_why(
    tmp_path: Path, child: dict[str, Any], monkeypatch: pytest.MonkeyPatch, mode: str, said: str
) -> None:
    if mode == "stuck":  # only there: a loaded machine may take a second to start a child
        monkeypatch.setattr(learning_tune, "FINE_TUNE_TIMEOUT_S", 2.0)
    child["mode"] = mode
    with enroll_service("sqlite", tmp_path / "data") as (svc, app):
        svc.ok("PUT", "/v1/tables/T/learning", "admin", json={"learn_every_dice": 20})
        confirm(svc, app, BATCH, prefix="a")
        jobs = settled_jobs(app, 1)
        assert [j.state for j in jobs] == ["failed"] and jobs[0].result_sha256 is None
        assert said in (jobs[0].error or ""), jobs[0].error
        assert svc.call("GET", "/v1/tables/T/enrollment", "admin").status_code == 404
        assert tuned_files(svc) == [] and read_model(svc) == "fake_face"
        state = svc.ok("GET", "/v1/tables/T/learning", "dealer")
        assert "the last refit changed nothing" in state["line"] and said in state["line"]
        if mode == "worse":  # the refusal keeps both figures
            validation = jobs[0].examples["validation"]
            assert validation["enrolled_right"] == 0 and not validation["helps"]


def test_a_stuck_child_is_stopped_before_its_job_counts_as_dead() -> None:
    from api.enrollment import STALE_AFTER

    assert STALE_AFTER.total_seconds() > learning_tune.FINE_TUNE_TIMEOUT_S
