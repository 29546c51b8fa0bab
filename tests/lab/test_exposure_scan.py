"""lab.exposure_scan: a set read as the reader measures its exposure, under a change, and its usage errors."""

from __future__ import annotations

from pathlib import Path

from vision.judge.exposure import measure_exposure


def test_the_scan_reads_a_set_as_the_reader_measures_it(tmp_path: Path) -> None:
    import subprocess
    import sys

    import cv2

    from lab.exposure_scan import scan

    fixtures = sorted(
        (Path(__file__).resolve().parents[1] / "vision" / "fixtures").glob("IMG_*.jpg")
    )  # three real photos
    plain_scan = scan(fixtures, change_kind=None, level=0.0, quiet=True)
    least = min(measure_exposure(cv2.imread(str(p))).bright_level for p in fixtures)
    assert plain_scan["frames"] == 3 and plain_scan["least_bright_level"] == least
    assert plain_scan["fail_clipped_bar"] == plain_scan["fail_dark_bar"] == 0
    # A sixth of the light takes each of these photos under the dark bar (their 99th percentile is ~190).
    dark = scan(fixtures, change_kind="dim", level=0.15, quiet=True)
    assert dark["fail_dark_bar"] == 3 and dark["least_bright_level"] < 60
    missing = subprocess.run(
        [sys.executable, "-m", "lab.exposure_scan", str(tmp_path / "nowhere")],
        capture_output=True,
        text=True,
    )
    assert missing.returncode == 2 and "dataset not found" in missing.stderr
