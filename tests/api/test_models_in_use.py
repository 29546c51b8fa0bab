"""Putting a model in use by a command (issue 55, item 7): `throwbox models list|use|rollback` on a manifest,
each weight file checked by SHA-256, and the running service told (`POST /v1/models/reload`), which reloads
and audits the change."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app
from api.model_registry import RegistryError, history, rollback, status, use
from tests.api.conftest import running_service
from vision.onnx_session import MANIFEST_PATH, manifest_lists

runner = CliRunner()
pytestmark = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "pips_cocked", "die_state"),
    reason="models/manifest.json lists no detector, face, cocked-face and die-state models",
)


def _manifest_in(folder: Path, *, pips_from: str = "pips") -> Path:
    """A copy of the shipped manifest in `folder`, its weight files named from there; the face model
    entry taken from `pips_from` (the shipped `pips_cocked` entry makes a second, real face model)."""
    raw = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    raw["models"]["pips"] = dict(raw["models"][pips_from])
    for entry in raw["models"].values():
        entry["file"] = os.path.relpath(MANIFEST_PATH.parent / entry["file"], folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.json"
    path.write_text(json.dumps(raw, indent=2), encoding="utf-8")
    return path


def test_a_candidate_is_put_in_use_checked_by_sha256_and_rolled_back(tmp_path: Path) -> None:
    in_use = _manifest_in(tmp_path / "live")
    original = in_use.read_bytes()
    candidate = _manifest_in(tmp_path / "cand", pips_from="pips_cocked")
    change = use(in_use, candidate, names=["pips"])
    assert list(change.changed) == ["pips"] and len(history(in_use)) == 1
    assert all(e.state == "ok" for e in status(in_use))
    assert json.loads(in_use.read_text())["models"]["pips"]["file"].endswith("pips_facenet_2026nov.onnx")
    back = rollback(in_use)
    assert list(back.changed) == ["pips"] and in_use.read_bytes() == original and history(in_use) == []
    with pytest.raises(RegistryError, match="no kept manifest"):
        rollback(in_use)


def test_a_file_that_differs_from_its_sha256_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    in_use = _manifest_in(tmp_path / "live")
    original = in_use.read_bytes()
    candidate = _manifest_in(tmp_path / "cand")
    raw = json.loads(candidate.read_text())
    raw["models"]["pips"]["sha256"] = "0" * 64
    candidate.write_text(json.dumps(raw), encoding="utf-8")
    with pytest.raises(RegistryError, match="refused"):
        use(in_use, candidate)
    with pytest.raises(RegistryError, match="lists no model nope"):
        use(in_use, _manifest_in(tmp_path / "other"), names=["nope"])
    assert in_use.read_bytes() == original and history(in_use) == []


def test_list_says_which_weight_files_are_not_the_manifests(tmp_path: Path) -> None:
    in_use = _manifest_in(tmp_path / "live")
    listed = runner.invoke(app, ["models", "list", "--manifest", str(in_use)])
    assert listed.exit_code == 0, listed.output
    assert listed.output.count(" ok ") == len(json.loads(in_use.read_text())["models"])
    raw = json.loads(in_use.read_text())
    raw["models"]["detector"]["file"] = "gone.onnx"
    in_use.write_text(json.dumps(raw), encoding="utf-8")
    broken = runner.invoke(app, ["models", "list", "--manifest", str(in_use)])
    assert broken.exit_code == 1 and "missing" in broken.output


def test_the_service_told_of_a_change_reads_with_the_new_model_and_audits_it(tmp_path: Path) -> None:
    in_use = _manifest_in(tmp_path / "live")
    candidate = _manifest_in(tmp_path / "cand", pips_from="pips_cocked")
    with running_service("sqlite", tmp_path / "data", models_manifest=in_use) as svc:
        before = svc.ok("GET", "/v1/models", "surveillance")
        tags = {m["name"]: m["tag"] for m in before["models"]}
        assert tags["pips"] == "pips_facenet_18c_2026dec"
        assert svc.call("POST", "/v1/models/reload", "dealer").status_code == 403
        key_file = tmp_path / "admin.key"
        key_file.write_text(svc.keys["admin"] + "\n", encoding="utf-8")
        told = runner.invoke(
            app,
            ["models", "use", str(candidate), "--model", "pips", "--manifest", str(in_use),
             "--service", svc.base_url, "--key-file", str(key_file)],
        )  # fmt: skip
        assert told.exit_code == 0, told.output
        assert "changed: pips (audited)" in told.output
        after = svc.ok("GET", "/v1/models", "surveillance")
        assert {m["name"]: m["tag"] for m in after["models"]}["pips"] == "pips_facenet_2026nov"
        entries = svc.ok("GET", "/v1/audit", "surveillance", params={"subject": "manifest:manifest.json"})
        (entry,) = [e for e in entries if e["action"] == "models.reload"]
        payload = entry["payload"] if isinstance(entry["payload"], dict) else json.loads(entry["payload"])
        assert payload["changed"] == ["pips"]
        assert payload["before"]["pips"] != payload["after"]["pips"]
        assert svc.ok("GET", "/v1/audit/verify", "surveillance")["ok"] is True
        # A manifest that cannot be loaded: 409, and the models in use stay.
        raw = json.loads(in_use.read_text())
        raw["models"]["pips"]["sha256"] = "0" * 64
        in_use.write_text(json.dumps(raw), encoding="utf-8")
        refused = svc.call("POST", "/v1/models/reload", "admin")
        assert refused.status_code == 409 and "the models in use stay" in refused.json()["detail"]
        kept = svc.ok("GET", "/v1/models", "surveillance")
        assert {m["name"]: m["tag"] for m in kept["models"]}["pips"] == "pips_facenet_2026nov"
