"""lab.marker_reads: random throws over the marker table are read through its calibration and tallied."""

from __future__ import annotations

import json

import pytest

from lab.marker_reads import main, measure


def test_a_few_throws_are_read_and_nothing_of_the_table_is_taken_for_a_die_or_the_reverse() -> None:
    result = measure(reads=4, dice=6)
    assert result.reads == 4 and sum(result.verdicts.values()) == 4 and result.near_marker_frames == 1
    assert result.camera_moved == 0  # the camera never moves here
    assert result.die_set_aside == 0  # no die is ever taken for part of the table
    assert result.verdicts["invalid"] == 0  # every die stays on the table
    assert 0 <= result.faces_right <= 4 and 0 <= result.counted_right <= 4


def test_the_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--reads", "1", "--dice", "3", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["reads"] == 1 and set(doc["verdicts"]) <= {"valid", "invalid", "void", "no_decision"}
