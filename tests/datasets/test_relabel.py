"""`throwbox lab synth-relabel`: rule-based truth re-derived from the physics (datasets.synth.relabel)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from datasets.synth.generator import GeneratorConfig
from datasets.synth.relabel import BACKUP_DIR, RelabelError, relabel_dataset
from datasets.synth.writer import generate_dataset
from lab.cli import app

runner = CliRunner()


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("relabel") / "ds"
    cfg = GeneratorConfig(seed=41, mix={"normal": 0.5, "cocked": 0.5}, resolutions=((160, 120, 1.0),))
    generate_dataset(out, cfg, scenes=3, workers=1)
    return out


def _copy(made: Path, tmp_path: Path) -> Path:
    import shutil

    dst = tmp_path / "ds"
    shutil.copytree(made, dst)
    return dst


def test_a_fresh_data_set_is_reproduced_and_unchanged(made: Path) -> None:
    report = relabel_dataset(made, write=False)
    assert (report.scenes, report.not_reproduced, report.dice, report.verdicts) == (3, (), (), ())


def test_a_wrong_label_is_put_right_and_the_old_one_kept(made: Path, tmp_path: Path) -> None:
    ds = _copy(made, tmp_path)
    path = sorted((ds / "labels").glob("*.json"))[0]
    right = path.read_text()
    doc = json.loads(right)
    doc["dice"][2]["face"] = 7 - doc["dice"][2]["face"]
    doc["faces"][2] = doc["dice"][2]["face"]
    doc["verdict"], doc["reasons"] = "void", ["cocked_multi_side"]
    wrong = json.dumps(doc, indent=1) + "\n"
    path.write_text(wrong)
    dry = relabel_dataset(ds, write=False)
    assert [(d.die, d.changes[0][0]) for d in dry.dice] == [(2, "face")] and dry.written == 0
    assert dry.dice[0].tilt_deg == pytest.approx(doc["dice"][2]["tilt_deg"], abs=0.01)
    assert dry.dice[0].rests_on == doc["dice"][2]["rests_on"]
    assert path.read_text() == wrong
    report = relabel_dataset(ds, write=True)
    assert report.written == 1 and report.verdicts == ((doc["scene_id"], "void", "valid"),)
    assert json.loads(path.read_text())["dice"] == json.loads(right)["dice"]
    assert json.loads(path.read_text())["verdict"] == "valid"
    assert (ds / BACKUP_DIR / path.name).read_text() == wrong
    manifest = json.loads((ds / "manifest.json").read_text())
    assert manifest["relabelled"][-1]["labels_rewritten"] == 1 and manifest["by_verdict"]["valid"] >= 1
    again = relabel_dataset(ds, write=True)
    assert (again.dice, again.written) == ((), 0)


def test_a_scene_the_physics_no_longer_makes_is_left_alone(made: Path, tmp_path: Path) -> None:
    ds = _copy(made, tmp_path)
    path = sorted((ds / "labels").glob("*.json"))[1]
    doc = json.loads(path.read_text())
    doc["dice"][0]["position_mm"][0] += 5.0
    doc["dice"][0]["face"] = 7 - doc["dice"][0]["face"]
    path.write_text(json.dumps(doc, indent=1) + "\n")
    before = path.read_text()
    report = relabel_dataset(ds, write=True)
    assert report.not_reproduced == (doc["scene_id"],) and report.written == 0
    assert path.read_text() == before


def test_a_folder_that_is_no_data_set_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RelabelError, match=r"no manifest\.json"):
        relabel_dataset(tmp_path, write=False)
    result = runner.invoke(app, ["synth-relabel", str(tmp_path), "--dry-run"])
    assert result.exit_code == 2 and "no manifest.json" in result.output


def test_cli_reports_and_writes_nothing_on_a_dry_run(made: Path) -> None:
    result = runner.invoke(app, ["synth-relabel", str(made), "--dry-run", "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "3 scenes simulated again: 0 with a changed label" in result.output
    assert "dry run: nothing written" in result.output
    assert not (made / BACKUP_DIR).exists()


def test_the_dealers_move_is_derived_again_and_two_workers_agree(tmp_path: Path) -> None:
    ds = tmp_path / "layout"
    cfg = GeneratorConfig(seed=5, mix={"layout": 1.0}, resolutions=((160, 120, 1.0),))
    generate_dataset(ds, cfg, scenes=2, workers=1)
    paths = sorted((ds / "labels").glob("*.json"))
    docs = [json.loads(p.read_text()) for p in paths]
    path, doc = next((p, d) for p, d in zip(paths, docs, strict=True) if d.get("layout_move"))
    right = doc["layout_move"]
    doc["layout_move"] = {**right, "first_faces": [7 - f if f else f for f in right["first_faces"]]}
    doc["layout_move"]["winner"] = right["winner"]  # keep the document valid: only the faces change
    wrong_faces = doc["layout_move"]["first_faces"]
    doc["layout_move"]["match_count"] = wrong_faces.count(right["winner"])
    if doc["layout_move"]["match_count"] < 1:  # the format needs the winner in the first roll
        doc["layout_move"]["first_faces"] = [right["winner"], *wrong_faces[1:]]
        doc["layout_move"]["match_count"] = doc["layout_move"]["first_faces"].count(right["winner"])
    path.write_text(json.dumps(doc, indent=1) + "\n")
    report = relabel_dataset(ds, write=True, workers=2)
    assert report.layout_moves == (doc["scene_id"],) and report.dice == () and report.written == 1
    assert json.loads(path.read_text())["layout_move"] == right
