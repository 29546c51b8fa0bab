"""`throwbox lab synth` end to end through the CLI, and its refusals."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lab.cli import app

runner = CliRunner()


def test_synth_writes_a_data_set(tmp_path: Path) -> None:
    out = tmp_path / "ds"
    result = runner.invoke(
        app,
        [
            "synth",
            str(out),
            "--scenes",
            "2",
            "--seed",
            "3",
            "--dice",
            "6",
            "--width",
            "160",
            "--height",
            "120",
            "--workers",
            "1",
            "--mix",
            "normal=1,stacked=1",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "wrote 2 scenes" in result.output
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["n_dice"] == 6 and manifest["scenes"] == 2
    docs = [json.loads(p.read_text()) for p in sorted((out / "labels").glob("*.json"))]
    assert len(docs) == 2 and all(d["expected_dice"] == 6 for d in docs)
    assert all(d["camera"]["intrinsics"]["width_px"] == 160 for d in docs)


def test_synth_refuses_bad_options(tmp_path: Path) -> None:
    bad_mix = runner.invoke(app, ["synth", str(tmp_path / "x"), "--mix", "flying=1"])
    assert bad_mix.exit_code == 2 and "unknown scenario 'flying'" in bad_mix.output
    bad_dice = runner.invoke(app, ["synth", str(tmp_path / "y"), "--dice", "7"])
    assert bad_dice.exit_code == 2 and "10 dice" in bad_dice.output
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


def test_synth_refuses_to_mix_two_data_sets(tmp_path: Path) -> None:
    args = ["--scenes", "1", "--width", "160", "--height", "120", "--workers", "1"]
    assert runner.invoke(app, ["synth", str(tmp_path), "--seed", "1", *args]).exit_code == 0
    again = runner.invoke(app, ["synth", str(tmp_path), "--seed", "2", *args])
    assert again.exit_code == 2 and "seed=1" in again.output
    assert runner.invoke(app, ["synth", str(tmp_path), "--seed", "1", *args]).exit_code == 0  # same set: fine


def test_contact_sheet_from_a_data_set(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    assert (
        runner.invoke(
            app, ["synth", str(ds), "--scenes", "2", "--width", "160", "--height", "120", "--workers", "1"]
        ).exit_code
        == 0
    )
    sheet = tmp_path / "sheet.png"
    result = runner.invoke(app, ["synth-sheet", str(sheet), "--from", str(ds), "--cols", "2"])
    assert result.exit_code == 0, result.output
    assert sheet.stat().st_size > 10_000


def test_contact_sheet_of_fresh_scenes_one_per_scenario(tmp_path: Path) -> None:
    sheet = tmp_path / "fresh.jpg"
    args = ["synth-sheet", str(sheet), "--scenes", "2", "--mix", "normal=1,stacked=1", "--cols", "2"]
    result = runner.invoke(app, [*args, "--width", "160", "--height", "120"])
    assert result.exit_code == 0, result.output
    assert "2 scenes" in result.output and sheet.stat().st_size > 5_000


def test_same_data_set_with_one_or_two_workers(tmp_path: Path) -> None:
    """Each scene is a function of (seed, index): the worker count changes nothing, images included."""
    args = ["--scenes", "3", "--seed", "9", "--width", "160", "--height", "120", "--mix", "normal=1,cocked=1"]
    one, two = tmp_path / "one", tmp_path / "two"
    assert runner.invoke(app, ["synth", str(one), *args, "--workers", "1"]).exit_code == 0
    assert runner.invoke(app, ["synth", str(two), *args, "--workers", "2"]).exit_code == 0
    for sub in ("labels", "images"):
        names = sorted(p.name for p in (one / sub).iterdir())
        assert names == sorted(p.name for p in (two / sub).iterdir()) and len(names) == 3
        for name in names:
            assert (one / sub / name).read_bytes() == (two / sub / name).read_bytes(), name


def test_synth_writes_throw_videos(tmp_path: Path) -> None:
    args = [
        "synth",
        str(tmp_path),
        "--scenes",
        "0",
        "--videos",
        "1",
        "--dice",
        "6",
        "--width",
        "96",
        "--height",
        "72",
    ]
    result = runner.invoke(app, [*args, "--workers", "1"])
    assert result.exit_code == 0, result.output
    assert "wrote 1 throw videos" in result.output
    (doc,) = list((tmp_path / "videos").glob("*/video.json"))
    assert json.loads(doc.read_text())["final"]["expected_dice"] == 6


def test_synth_check_agrees_on_a_propped_scene() -> None:
    """`throwbox lab synth-check` (colour-id render against the face truth) on one staged propped die."""
    result = runner.invoke(app, ["synth-check", "--scenes", "1", "--seed", "20", "--mix", "propped=1"])
    assert result.exit_code == 0, result.output
    assert "10 of 10 dice agree" in result.output and "(1 of them cocked)" in result.output
