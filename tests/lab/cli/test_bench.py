"""`throwbox lab bench`: the figures it reports are there and plausible, the weights it loads can be
pinned."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.cli.bench import bench_frames, cpu_description
from vision.onnx_session import MANIFEST_PATH

runner = CliRunner()


def test_bench_frames_are_1280x960_with_ten_dice() -> None:
    frames = bench_frames(2)
    assert [f.shape for f in frames] == [(960, 1280, 3)] * 2
    assert frames[0].dtype.name == "uint8" and not (frames[0] == frames[1]).all()  # a new felt each


def test_bench_reports_latency_per_setting_with_the_pinned_manifest() -> None:
    result = runner.invoke(app, ["bench", "--frames", "10", "--json", "--manifest", str(MANIFEST_PATH)])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert doc["frame_wh"] == [1280, 960] and doc["dice_per_frame"] == 10
    assert doc["started_utc"].endswith("Z") and doc["load_average_1min"] >= 0
    assert doc["cpu"]["model"] and doc["cpu"]["simd"]  # which processor the figures belong to
    for setting in ("one_thread", "all_threads"):
        r = doc[setting]
        assert 0 < r["p50_ms"] <= r["p99_ms"]
        assert len(r["dice_found_per_frame"]) == 10 and max(r["dice_found_per_frame"]) <= 10
        # The stages add up to the read (each frame's stages sum to its total; medians nearly so).
        stages = r["stage_p50_ms"]
        assert set(stages) == {"detect", "faces", "judge", "total"}
        assert stages["detect"] + stages["faces"] + stages["judge"] <= stages["total"] * 1.5
        # The models' share of a read and the rest: every model the reader loaded, each took some time.
        # (The face model for dice called cocked, where the manifest lists one, is loaded but runs only on a
        # die the die-state model calls cocked: the bench frames hold none.)
        every = {"detector", "pips", "die_state"} | (
            {"pips_peer"} if "pips_peer" in r["model_p50_ms"] else set()
        )
        assert every <= set(r["model_p50_ms"]) <= every | {"pips_cocked"}
        assert all(r["model_p50_ms"][name] > 0 for name in every)
        # Read by read, the models' sum is at least each model's time and at most the read's, and the rest is
        # the read less the models: so their medians keep the same order.
        assert max(r["model_p50_ms"].values()) <= r["all_models_p50_ms"] <= r["p50_ms"]
        assert 0 < r["outside_models_p50_ms"] < r["p50_ms"]


def test_cpu_description_reads_the_model_and_the_widest_vector_instructions(tmp_path: Path) -> None:
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 9B14\nflags\t\t: fpu sse2 avx2 avx512f avx512bw\n"
    )
    assert cpu_description(info) == {"model": "AMD EPYC 9B14", "simd": "avx512"}
    info.write_text("model name\t: Intel(R) Xeon(R) CPU E5-2680 v4\nflags\t\t: fpu sse2 avx avx2 fma\n")
    assert cpu_description(info) == {"model": "Intel(R) Xeon(R) CPU E5-2680 v4", "simd": "avx2"}
    info.write_text("model name\t: Old\nflags\t\t: fpu sse2\n")
    assert cpu_description(info)["simd"] == "other"
    # No /proc/cpuinfo (not Linux): still a model name from the platform, the vector level unknown.
    assert cpu_description(tmp_path / "missing")["simd"] == "unknown"


def test_bench_refuses_a_missing_manifest(tmp_path: Path) -> None:
    result = runner.invoke(app, ["bench", "--manifest", str(tmp_path / "nope.json")])
    assert result.exit_code == 2
    assert "does not exist" in result.output


FIXTURES = Path(__file__).resolve().parents[2] / "vision" / "fixtures"


def test_detector_sizes_time_and_score_each_size_on_a_tuning_set() -> None:
    # The committed fixture photos stand in for a tuning set here (a YOLO folder with labels).
    result = runner.invoke(
        app,
        [
            "bench",
            "--detector-sizes",
            "320,640",
            "--dataset",
            str(FIXTURES),
            "--split",
            "train",
            "--frames",
            "10",
        ],
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    assert [r["input_long_px"] for r in doc["sizes"]] == [320, 640]
    for row in doc["sizes"]:
        assert 0 < row["detect_p50_ms"] <= row["one_thread_p50_ms"] <= row["one_thread_p99_ms"]
        assert row["images"] == 3 and 0 <= row["detection"]["recall_pct"] <= 100
    # The reader at its own input size finds the fixture dice (a real score, not an empty table).
    assert doc["sizes"][1]["detection"]["recall_pct"] >= 90


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--detector-sizes", "500", "--split", "train"], "multiple of 32"),  # not a multiple of 32
        (["--detector-sizes", "a,b", "--split", "train"], "integers"),  # not numbers
        (["--detector-sizes", "512"], "not --split test"),  # a setting is never chosen on a test split
        (
            [
                "--detector-sizes",
                "512",
                "--split",
                "train",
                "--dataset",
                str(FIXTURES),
                "--dataset",
                str(FIXTURES),
            ],
            "exactly one",
        ),
    ],
)
def test_detector_sizes_refuses_bad_requests(args: list[str], message: str) -> None:
    if "--dataset" not in args:
        args = [*args, "--dataset", str(FIXTURES)]
    result = runner.invoke(app, ["bench", *args])
    assert result.exit_code == 2
    assert message in result.output
