"""models.table_marks: the measurement `min_mark_likeness` rests on runs and separates its two sides."""

from __future__ import annotations

import json

import pytest

from models.table_marks import main, measure


def test_the_empty_box_and_a_die_on_a_mark_fall_on_either_side_of_the_bar() -> None:
    trials = measure(offsets_mm=[0.0], faces=[3])
    assert trials.marks >= 1
    assert len(trials.empty_light_changes) == 3 * trials.marks  # the selftest's three unmoved looks
    assert min(trials.empty_light_changes) >= trials.bar
    assert max(trials.die_at_offset_mm[0.0]) < trials.bar


def test_the_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--offsets-mm", "0", "--faces", "2", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert set(doc) == {"marks", "bar", "empty_box_light_changes", "camera_moved", "die_at_offset_mm"}
    assert doc["die_at_offset_mm"]["0"]["n"] == doc["marks"]
