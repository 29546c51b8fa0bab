"""The fuzz benchmark (lab/fuzz.py) on a tiny N: one hostile image of each kind, through the reader as
`throwbox read` runs it and through a real `throwbox serve`."""

from __future__ import annotations

import json
from pathlib import Path

import typer
from typer.testing import CliRunner

from lab.fuzz import register
from lab.hostile_images import GENERATORS, generate


def test_the_first_cases_are_one_of_each_kind_and_repeatable() -> None:
    first = list(generate(len(GENERATORS), seed=3))
    assert [case.kind for case in first] == list(GENERATORS)
    again = list(generate(len(GENERATORS), seed=3))
    assert [case.data for case in again] == [case.data for case in first]
    assert [case.data for case in generate(len(GENERATORS), seed=4)] != [case.data for case in first]


def test_fuzz_runs_every_kind_through_cli_and_rest(tmp_path: Path) -> None:
    app = typer.Typer()
    register(app)
    out = tmp_path / "report.json"
    count = len(GENERATORS)
    result = CliRunner().invoke(app, ["--count", str(count), "--seed", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["kinds"] == dict.fromkeys(sorted(GENERATORS), 1)
    cli, rest = report["ways"]["cli"], report["ways"]["rest"]
    # Every case has an outcome; none is a crash, a 5xx or a dead server.
    assert sum(cli["outcomes"].values()) == count and set(cli["outcomes"]) <= {"read", "refused"}
    assert sum(rest["outcomes"].values()) == count and set(rest["outcomes"]) <= {"201", "415", "422"}
    # The bombs, at least, are refused: 422 as images, or 415 where the type drawn for the upload disagrees
    # with the bytes (the one upload rule of issue 57 looks at the type before the image).
    refused_rest = rest["outcomes"].get("422", 0) + rest["outcomes"].get("415", 0)
    assert cli["outcomes"]["refused"] >= 8 and refused_rest >= 8
    assert cli["findings"] == rest["findings"] == 0 and report["server_starts"] == 1
    # The memory figures are measured (a process with the models loaded is well over 50 MB) and bounded.
    for way in (cli, rest):
        assert 50 < way["peak_rss_mb"] < 1024, way
        assert way["slowest_case"]["kind"] in GENERATORS and way["slowest_case"]["seconds"] > 0
    assert "cli:" in result.output and "rest:" in result.output
