"""`throwbox lab settle-bench`: the settle detector scored on synthetic throws, and its usage errors."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lab.cli import app
from lab.cli.settle_bench import run_settle_bench
from tests.vision.test_settle import write_synth_style_clip

runner = CliRunner()


def test_settle_bench_scores_against_ground_truth() -> None:
    result = run_settle_bench(throws=2, seed=4, width_px=320, height_px=240, die_edge_px=12)
    summary = result.summary()
    assert summary["throws"] == 2 and summary["read_once"] == 2
    assert summary["missed"] == 0 and summary["extra_reads"] == 0 and summary["reads_while_moving"] == 0
    assert len(result.latency_ms) == 2
    assert all(300.0 - 50.0 <= ms <= 300.0 + 50.0 for ms in result.latency_ms)
    assert result.frames == len(result.update_ms) > 300


def test_settle_bench_on_synth_format_clips(tmp_path: Path) -> None:
    for k in range(2):
        write_synth_style_clip(tmp_path / f"v{k:04d}", seed=20 + k)
    result = runner.invoke(app, ["settle-bench", "--videos", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["throws"] == 2 and summary["read_once"] == 2 and summary["reads_while_moving"] == 0
    assert 200.0 <= summary["latency_ms_median"] <= 350.0


def test_settle_bench_refuses_an_unknown_video_format(tmp_path: Path) -> None:
    (tmp_path / "v0").mkdir()
    (tmp_path / "v0" / "video.json").write_text(json.dumps({"format": "other/2"}))
    result = runner.invoke(app, ["settle-bench", "--videos", str(tmp_path)])
    assert result.exit_code == 2
    assert "expected 'throwbox-video/1'" in result.output
    empty = runner.invoke(app, ["settle-bench", "--videos", str(tmp_path / "v0")])
    assert empty.exit_code == 2 and "no throw videos" in empty.output
