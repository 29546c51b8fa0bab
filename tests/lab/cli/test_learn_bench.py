"""`throwbox lab learn-bench` (issue 56, item 4): its pieces, and a few rolls of the whole path (rendered
wide-style scenes, the live loop, the scripted person at the console, the table's refits)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from lab.cli import app
from lab.learn_bench import (
    Played,
    Scene,
    decision,
    die_reason_kind,
    match,
    struck_aside,
    summary,
    why_left,
    wilson,
    wrong_faces,
)
from vision.judge.validity import ValidityConfig, judge_die
from vision.types import DieCandidate, FaceReading

runner = CliRunner()
BOXES = ((10.0, 10.0, 30.0, 30.0), (50.0, 10.0, 70.0, 30.0), (90.0, 10.0, 110.0, 30.0))
SCENE = Scene("s-1", Path("x.jpg"), tuple(zip(BOXES, (2, 5, 6), strict=True)))  # type: ignore[arg-type]


def test_wilson_interval_matches_the_formula_at_known_points() -> None:
    lo, hi = wilson(0, 100)
    assert abs(lo) < 1e-12 and abs(hi - 0.0370) < 1e-4
    lo, hi = wilson(50, 100)
    assert abs(lo - 0.4038) < 1e-4 and abs(hi - 0.5962) < 1e-4
    assert wilson(0, 0) == (0.0, 1.0)


def test_match_takes_the_true_die_under_each_box_once() -> None:
    read = [
        (48.0, 8.0, 72.0, 32.0),
        (200.0, 0.0, 220.0, 20.0),
        (9.0, 9.0, 31.0, 31.0),
        (8.0, 8.0, 32.0, 32.0),
    ]
    assert match(read, BOXES) == [1, None, 0, None]


def test_the_scripted_person_answers_from_the_truth() -> None:
    waiting = {
        "table_id": "learn",
        "roll_id": "r1",
        "round_id": 3,
        "dice": [
            {"index": 1, "box_xyxy": [200.0, 0.0, 220.0, 20.0]},  # no die there: struck
            {"index": 0, "box_xyxy": [48.0, 8.0, 72.0, 32.0]},  # the 5
        ],
    }
    body = decision(waiting, SCENE)
    assert body["dice"] == [{"face": 5}, {"struck": True}] and body["call"] == "valid"
    assert body["added"] == [{"box_xyxy": list(BOXES[0]), "face": 2}, {"box_xyxy": list(BOXES[2]), "face": 6}]


def test_boxes_the_tables_filter_set_aside_are_counted_and_those_on_a_die_named() -> None:
    doc = {
        "set_aside": [
            {"box_xyxy": [200.0, 0.0, 220.0, 20.0], "reason": "table_no_die"},  # on no die: right
            {"box_xyxy": list(BOXES[1]), "reason": "table_no_die"},  # on a true die: harm
            {"box_xyxy": list(BOXES[2]), "reason": "no_die"},  # the die-state model's, not the table's
        ]
    }
    assert struck_aside(doc, SCENE) == (2, 1)
    assert struck_aside({}, SCENE) == (0, 0)


def test_faces_wrong_are_counted_against_the_die_under_each_box() -> None:
    read = [
        {"box_xyxy": list(BOXES[0]), "face": 2},
        {"box_xyxy": list(BOXES[1]), "face": 3},  # wrong
        {"box_xyxy": [200.0, 0.0, 220.0, 20.0], "face": 1},  # on no die: wrong
    ]
    assert wrong_faces(read, SCENE) == (3, 2)


def test_summary_measures_the_throws_after_each_mark() -> None:
    played = [
        Played(i, f"s{i}", min(i, 5), i < 5, "valid", 0 if i < 5 else 10, int(i == 7), "m") for i in range(12)
    ]
    first, at5 = summary(played, at_confirmed=[0, 5, 50], window=4)
    assert (first["throws"], first["left_to_person"], first["faces_given"]) == (4, 4, 0)
    assert (at5["throws"], at5["left_to_person"], at5["faces_given"], at5["faces_wrong"]) == (4, 0, 40, 1)
    assert at5["wrong_per_1000"] == 25.0 and at5["wrong_per_1000_95"][0] < 25.0 < at5["wrong_per_1000_95"][1]
    assert first["left_because"] == {} and at5["dice_unsure_because"] == {}
    assert first["called_invalid_or_void"] == 0
    void = [
        Played(i, f"s{i}", 0, False, v, 0, 0, "m", why)
        for i, (v, why) in enumerate(
            (("void", ("cocked_multi_side",)), ("invalid", ("die_off_table",)), ("valid", ()))
        )
    ]
    (called,) = summary(void, at_confirmed=[0], window=3)
    assert called["called_invalid_or_void"] == 2 and called["left_because"] == {}  # a wrong call, not left
    assert called["called_because"] == {"cocked_multi_side": 1, "die_off_table": 1}
    why = [
        Played(i, f"s{i}", 0, True, "no_decision", 0, 0, "m", ("face_uncertain",), ("peer_unsure",) * i)
        for i in range(3)
    ]
    (mark,) = summary(why, at_confirmed=[0], window=3)
    assert mark["left_because"] == {"face_uncertain": 3} and mark["dice_unsure_because"] == {"peer_unsure": 3}


def test_each_reason_the_judge_gives_an_uncertain_die_has_its_kind() -> None:
    """The kinds are read from the judge's own words: a change of wording fails here, not silently as
    "other" in a report."""
    box = DieCandidate((0.0, 0.0, 40.0, 40.0), ((0.0, 0.0), (40.0, 0.0), (40.0, 40.0), (0.0, 40.0)), 0.9)
    unsure = (0.5, 0.3, 0.05, 0.05, 0.05, 0.05)
    sure_3 = (0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
    every = ValidityConfig(require_turns_agree=True, require_pip_agree=False)
    cases = [
        (FaceReading(unsure, None), every, {}, "face_unsure"),
        (FaceReading(unsure, 4), every, {}, "pip_count_veto"),
        (FaceReading(sure_3, None, turns_agree=False), every, {}, "turns_disagree"),
        (FaceReading(sure_3, 5), ValidityConfig(require_pip_agree=True, classical_veto=False), {}, None),
        (FaceReading(sure_3, None), every, {"whole_die": False}, "not_whole_die"),
        (FaceReading(sure_3, None), every, {"overlap": 0.9}, "boxes_overlap"),
        (FaceReading(sure_3, None, peer_face=2, peer_confidence=0.99), every, {}, "peer_disagrees"),
        (FaceReading(sure_3, None, peer_face=3, peer_confidence=0.5), every, {}, "peer_unsure"),
    ]
    for reading, config, extra, kind in cases:
        die = judge_die(box, reading, config=config, **extra)
        assert die.uncertain and die.reasons
        kinds = {die_reason_kind(r) for r in die.reasons}
        assert "other" not in kinds and (kind is None or kind in kinds), (die.reasons, kinds)
    pip = judge_die(
        box, FaceReading(sure_3, 5), config=ValidityConfig(require_pip_agree=True, classical_veto=False)
    )
    assert {die_reason_kind(r) for r in pip.reasons} == {"pip_count_disagrees"}
    assert die_reason_kind("a reason no judge gives") == "other"
    for module in ("decide", "rest_frames"):  # the words the judge's later stages add to a die's reasons
        words = (Path(__file__).parents[3] / "vision" / "judge" / f"{module}.py").read_text()
        adds = {"decide": "more than one side resting", "rest_frames": "the frames of the rest disagree"}
        assert adds[module] in words and die_reason_kind(adds[module] + " ...") != "other"


def test_why_a_roll_was_left_reads_its_findings_and_its_unsure_dice() -> None:
    doc = {
        "findings": [
            {"reason": "face_uncertain"},
            {"reason": "count_mismatch"},
            {"reason": "face_uncertain"},
        ],
        "dice": [
            {"uncertain": False, "reasons": []},
            {
                "uncertain": True,
                "reasons": ["low confidence 0.52 < 0.99 (reads 4)", "another box covers 60% of"],
            },
            {"uncertain": True, "reasons": []},
        ],
    }
    assert why_left(doc) == (("count_mismatch", "face_uncertain"), ("boxes_overlap", "face_unsure", "other"))
    assert why_left({}) == ((), ())


def test_a_few_rolls_through_the_live_loop_with_the_scripted_person(tmp_path: Path) -> None:
    scenes = tmp_path / "scenes"
    rendered = runner.invoke(
        app,
        ["synth", str(scenes), "--scenes", "3", "--seed", "5600", "--style", "wide", "--workers", "1"],
    )
    assert rendered.exit_code == 0, rendered.output
    out = tmp_path / "r" / "bench.json"
    args = ["learn-bench", "--scenes", str(scenes), "--confirmed", "3", "--every-dice", "10"]
    result = runner.invoke(app, [*args, "--window", "3", "--at", "0", "--out", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert out.with_suffix(".png").stat().st_size > 10_000
    assert doc["throws"] == len(doc["played"]) >= 1 and doc["path"] in ("head", "fine_tune")
    left = [p for p in doc["played"] if p["left_to_person"]]
    assert doc["confirmed_rolls"] == len(left) <= 3
    assert doc["at"][0]["confirmed_rolls"] == 0 and doc["at"][0]["throws"] == min(3, doc["throws"])
    for p in doc["played"]:
        assert p["model"].startswith("pips_facenet") and p["faces_wrong"] <= p["faces_given"] <= 10
        assert bool(p["reasons"]) == p["left_to_person"]  # a roll left says why; one decided has no reason
    for refit in doc["refits"]:  # every 10 confirmed dice, one ends, stored or saying why not
        assert refit["state"] in ("done", "failed") and refit["line"]
        assert refit["state"] == "done" or refit["error"]
