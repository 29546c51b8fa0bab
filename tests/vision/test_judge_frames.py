"""Committed synthetic frames of each case with known verdicts, through the die-state model and the judge,
and through the whole reader (tests/vision/fixtures/judge, seed 700: see its LICENSE).

Cases: a valid roll, a die cocked on chips (read by 675a.4(c)), a die wedged between two stacks (void), a
die on a die (invalid), a die beyond the wall (invalid) and a die missing from the picture (invalid).
The die-state part needs the committed die-state model; the whole-reader part needs the detector and the
face classifier in models/manifest.json and is skipped, saying so, while they are not committed.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import cv2
import numpy as np
import pytest

from calibration.layout import ThrowBoxLayout
from datasets.format import SceneTruth, read_scene
from lab.judge_eval.evaluate import MIN_VISIBLE, one_hot
from vision.annotate import RED, annotate
from vision.judge.config import JudgeConfig
from vision.judge.validity import Judgement, ValidityConfig, judge
from vision.onnx_session import load_model, manifest_lists
from vision.state.model import DieStateClassifier
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, FaceReading, Frame, Roll, Verdict

FIXTURES = Path(__file__).parent / "fixtures" / "judge"
# case, verdict, reason code of the deciding finding (None: no finding)
CASES: list[tuple[str, Verdict, str | None]] = [
    ("valid", Verdict.VALID, None),
    ("cocked", Verdict.VALID, "cocked_read_by_rule"),
    ("wedged", Verdict.VOID, "cocked_multi_side"),
    ("stacked", Verdict.INVALID, "die_on_die"),
    ("off_table", Verdict.INVALID, "die_off_table"),
    ("missing", Verdict.INVALID, "die_off_table"),
]


@pytest.fixture(scope="module")
def die_state() -> DieStateClassifier:
    if not manifest_lists("die_state"):
        pytest.skip("models/manifest.json lists no die_state model (models/train_die_state.py makes it)")
    return DieStateClassifier(load_model("die_state"))


def _scene(case: str) -> tuple[SceneTruth, np.ndarray]:
    scene = read_scene(FIXTURES / f"{case}.json")
    image = cv2.imread(str(FIXTURES / scene.image), cv2.IMREAD_COLOR)
    assert image is not None
    return scene, np.asarray(image, np.uint8)


def _geometry(scene: SceneTruth) -> TableGeometry:
    return TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())


def _judge_on_true_boxes(
    scene: SceneTruth, image: np.ndarray, die_state: DieStateClassifier
) -> tuple[Judgement, list[int]]:
    """The judge on the true boxes and faces; also the scene's die index of each judged die."""
    seen = [i for i, d in enumerate(scene.dice) if d.in_image and d.visible_fraction >= MIN_VISIBLE]
    cands = tuple(
        DieCandidate(box_xyxy=scene.dice[i].box_xyxy, top_quad=scene.dice[i].top_quad, score=1.0)
        for i in seen
    )
    reads = tuple(
        FaceReading(face_probs=one_hot(scene.dice[i].face or scene.dice[i].face_geometric), pip_count=None)
        for i in seen
    )
    out = judge(
        cands,
        reads,
        expected_dice=scene.expected_dice,
        config=ValidityConfig(require_whole_die=False, require_apart=False),
        states=die_state(image, cands),
        geometry=_geometry(scene),
    )
    return out, seen


# What the judge alone gets wrong on these frames with the die-state model of 2026-11-30 03:42Z (the one
# with `no_die`), measured with `pytest --runxfail`; strict, so a model that fixes it lifts the mark. The
# model before it passed this case; on the tuning scenes the new one is better (docs/history/judge.md,
# "Detections that are no die"), but not on this frame.
JUDGE_MISSES = {
    "missing": "the verdict is right (invalid) but the die-state model calls die 8, a flat die 27 % visible, "
    "off the table (p=0.93) and die 5 on die 9 (p=0.93): die_off_table names die 8 instead of no die",
}


def _marked(cases: list[tuple[str, Verdict, str | None]], misses: dict[str, str]) -> list[object]:
    return [
        pytest.param(
            *c,
            id=c[0],
            marks=[pytest.mark.xfail(reason=misses[c[0]], strict=True)] if c[0] in misses else [],
        )
        for c in cases
    ]


@pytest.mark.parametrize(("case", "verdict", "reason"), _marked(CASES, JUDGE_MISSES))
def test_judge_on_committed_frames(
    case: str, verdict: Verdict, reason: str | None, die_state: DieStateClassifier
) -> None:
    scene, image = _scene(case)
    assert scene.verdict == verdict.value or (case == "cocked" and scene.verdict == "valid")
    out, seen = _judge_on_true_boxes(scene, image, die_state)
    assert out.verdict is verdict, out.reasons
    if reason is None:
        assert not any(f.verdict is not Verdict.VALID for f in out.findings), out.reasons
        return
    finding = next(f for f in out.findings if f.reason == reason)
    concerned = {seen[i - 1] for i in finding.die_ids}
    if case in ("cocked", "wedged"):
        (true_die,) = [i for i, d in enumerate(scene.dice) if d.cocked]
        assert concerned == {true_die}
        die = out.dice[seen.index(true_die)]
        assert die.cocked
        assert die.face == scene.dice[true_die].face  # the face by the rule, or None (void)
    elif case == "stacked":
        (top,) = [i for i, d in enumerate(scene.dice) if d.stacked]
        assert top in concerned
    elif case == "off_table":
        (off,) = [i for i, d in enumerate(scene.dice) if d.off_table]
        assert concerned == {off}
    else:  # missing: the die is not in the picture, so no die is named
        assert finding.die_ids == ()


def test_annotated_frame_marks_the_dice_a_decision_concerns(die_state: DieStateClassifier) -> None:
    scene, image = _scene("stacked")
    out, _ = _judge_on_true_boxes(scene, image, die_state)
    roll = Roll(
        dice=out.dice,
        verdict=out.verdict,
        reasons=out.reasons,
        expected_dice=10,
        faces=(),
        frame_id="stacked",
        table_id=None,
        models={},
        timing_ms={},
        findings=out.findings,
    )
    drawn = annotate(image, roll)
    finding = next(f for f in out.findings if f.reason == "die_on_die")
    x0, y0, _, y1 = (round(v) for v in out.dice[finding.die_ids[0] - 1].candidate.box_xyxy)
    # The outer frame around the concerned die is drawn in red, a few pixels outside its box.
    ring = drawn[max(0, y0 - 8) : y1 + 8, max(0, x0 - 8) : x0 - 1]
    assert np.any(np.all(ring == np.array(RED, np.uint8), axis=-1))


# What the whole reader still gets wrong on these frames, measured with the models of 2026-11-30 (die-state
# model 03:42Z, the rest unchanged since 2026-11-29) and its judge (`pytest --runxfail
# tests/vision/test_judge_frames.py`); strict, so a fix lifts the mark. (The valid frame passed for an hour
# on 2026-11-30 while faint pips gave no count; that change was withdrawn.)
WHOLE_READER_MISSES = {
    "valid": "die 5's classifier reads 6 but its pip count is 2: face_uncertain, no_decision",
    "cocked": "the detector does not find the cocked die, and finds three chip stacks: two are set aside "
    "as no die, the third is kept (the count needs it) and is object_unclear: no_decision, not read by rule",
    "missing": "the verdict is right (invalid) but the die-state model calls die 5 a die on die 2 (p=0.85): "
    "the reason is die_on_die, not die_off_table",
}


@pytest.mark.parametrize(("case", "verdict", "reason"), _marked(CASES, WHOLE_READER_MISSES))
def test_whole_reader_on_committed_frames(case: str, verdict: Verdict, reason: str | None) -> None:
    if not manifest_lists("detector", "pips", "die_state"):
        pytest.skip("the detector and face classifier are not committed yet (models/manifest.json)")
    from vision.reader import Reader

    scene, image = _scene(case)
    roll = Reader().read(Frame(image=image, frame_id=case), expected_dice=10, geometry=_geometry(scene))
    assert roll.verdict is verdict, roll.reasons
    if reason is not None:
        assert any(f.reason == reason for f in roll.findings), roll.reasons


def test_whole_reader_finds_the_wedged_die_by_a_second_look() -> None:
    """The committed wedged frame: a chip taken for an 11th die is set aside, and the detection nearest the
    wedged die (IoU 0.23 with its true box) is called no die (p=1.00) and kept, as the count needs it.
    Without the second look within that box (vision/state/probe.py) the roll is left to a person
    (object_unclear); with it, the die wedged on more than one side is found there and the roll is void
    (675a.4(c)), the finding saying how it was found."""
    if not manifest_lists("detector", "pips", "die_state"):
        pytest.skip("the detector and face classifier are not committed yet (models/manifest.json)")
    from vision.reader import Reader, ReaderConfig

    scene, image = _scene("wedged")
    frame = Frame(image=image, frame_id="wedged")
    roll = Reader().read(frame, expected_dice=10, geometry=_geometry(scene))
    assert roll.verdict is Verdict.VOID, roll.reasons
    voids = [f for f in roll.findings if f.reason == "cocked_multi_side"]
    assert any("second look" in f.detail for f in voids), roll.reasons
    off = ReaderConfig(validity=ValidityConfig(judge=replace(JudgeConfig(), wedged_probe_min=None)))
    before = Reader(config=off).read(frame, expected_dice=10, geometry=_geometry(scene))
    assert before.verdict is Verdict.NO_DECISION, before.reasons
    assert any(f.reason == "object_unclear" for f in before.findings)
