"""lab.table_marks: the measurement `min_mark_likeness` rests on runs and separates its two sides."""

from __future__ import annotations

import json

import pytest

from lab.table_marks import main, measure


def test_the_empty_box_and_a_die_on_a_mark_fall_on_either_side_of_the_bar() -> None:
    trials = measure(offsets_mm=[0.0], faces=[3], see_through=[0.3])
    assert trials.marks >= 5  # at least one the detector found, and the four corner markers' looks
    assert len(trials.empty_light_changes) == 3 * trials.marks  # the selftest's three unmoved looks
    assert min(trials.empty_light_changes) >= trials.sure_bar > trials.bar  # the empty box: sure, set aside
    assert max(trials.die_at_offset_mm[0.0]) < trials.bar  # an opaque die on a mark: counted
    assert max(trials.see_through[0.3]) < trials.sure_bar  # a see-through die: a short count is not sure


def test_the_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--offsets-mm", "0", "--faces", "2", "--see-through", "", "--json"])
    doc = json.loads(capsys.readouterr().out)
    figures = {"empty_box_light_changes", "camera_moved", "die_at_offset_mm", "see_through"}
    assert set(doc) == {"marks", "bar", "sure_bar", *figures}
    assert doc["die_at_offset_mm"]["0"]["n"] <= doc["marks"]  # one look per mark, none across a wall
