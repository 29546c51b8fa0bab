"""The layout-box checks (593.4(e), (g), (h)) on constructed readings: each die a face and a layout box."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rules.hrd.dice import new_matches
from vision.judge.decide import verdict_of
from vision.judge.layout_check import DOUBT_CODES, check_layout_move, decide_extra_roll, split_extra_roll
from vision.types import DieCandidate, DieReading, Finding, LayoutSplit, Roll, Verdict


def die(face: int | None, box: str | None = None, *, x: float = 0.0) -> DieReading:
    """A read die at a made-up place; `box` is the layout box label it lies in (None: the throw area)."""
    probs = tuple(1.0 if face == k else 0.0 for k in range(1, 7)) if face else (1 / 6,) * 6
    candidate = DieCandidate(
        box_xyxy=(x, 0.0, x + 20.0, 20.0),
        top_quad=((x, 0.0), (x + 20.0, 0.0), (x + 20.0, 20.0), (x, 20.0)),
        score=0.9,
    )
    return DieReading(
        candidate=candidate, face=face, face_probs=probs, uncertain=face is None, layout_box=box
    )


# First roll 5 5 5 5 6 6 6 1 1 4: winner 5, four of a kind.
RIGHT_MOVE = [die(5, "Five")] * 4 + [die(6), die(6), die(6), die(1), die(1), die(4)]


@pytest.mark.parametrize(
    ("dice", "reasons"),
    [
        (RIGHT_MOVE, []),  # all four 5s in the Five box, nothing else there
        ([die(5, "Five")] * 3 + [die(5)] + RIGHT_MOVE[4:], ["missing_match", "match_left_behind"]),
        ([die(5, "Six")] * 4 + RIGHT_MOVE[4:], ["wrong_box", "missing_match"]),  # the wrong box
        ([*RIGHT_MOVE[:4], die(6, "Five"), *RIGHT_MOVE[5:]], ["wrong_face", "extra_dice"]),  # a 6 moved too
        ([*RIGHT_MOVE, die(3, "Two")], ["wrong_box"]),  # another box holds a die
        ([*RIGHT_MOVE[:3], die(None, "Five"), *RIGHT_MOVE[4:]], ["unreadable"]),  # cannot tell: say so
    ],
)
def test_593_4_e_dealer_moves_all_matching_dice_and_only_them(
    dice: list[DieReading], reasons: list[str]
) -> None:
    check = check_layout_move(dice=dice, winner=5, match_count=4)
    assert [p.reason for p in check.problems] == reasons
    assert check.ok is (not reasons)
    assert check.as_dict()["box"] == "Five"


@pytest.mark.parametrize(
    ("dice", "reasons", "dealer_error"),
    [
        # one 5 in the box not found, the frame shows 9 of the table's 10 dice: it may lie there unseen
        ([die(5, "Five")] * 3 + RIGHT_MOVE[4:], ["count_unsure"], False),
        # a 5 left behind in the throw area: all 10 found, so the short box is the dealer's
        ([die(5, "Five")] * 3 + [die(5)] + RIGHT_MOVE[4:], ["missing_match", "match_left_behind"], True),
        # two short but only one die unseen: at least one is missing, whatever the reader missed
        ([die(5, "Five")] * 2 + RIGHT_MOVE[4:] + [die(2)], ["missing_match"], True),
        # a die in the box the reader cannot read: its doubt, not the dealer's error
        ([*RIGHT_MOVE[:3], die(None, "Five"), *RIGHT_MOVE[4:]], ["unreadable"], False),
        # the wrong box, one of its dice not found: the box left empty is more than the unseen die could fill
        ([*[die(5, "Six")] * 3, *RIGHT_MOVE[4:]], ["wrong_box", "missing_match"], True),
        # the right move, and an unread detection in the box that is no die (11 found of the table's 10)
        ([*RIGHT_MOVE, die(None, "Five")], ["unreadable", "extra_unsure"], False),
        # ... but an unread fifth die where all found are the table's 10 is a die too many: the dealer's
        ([*RIGHT_MOVE[:4], die(None, "Five"), *RIGHT_MOVE[5:]], ["unreadable", "extra_dice"], True),
        # ... and a surplus of two with one detection too many (11 found): at least one die too many
        (
            [*RIGHT_MOVE[:4], die(None, "Five"), die(None, "Five"), *RIGHT_MOVE[5:]],
            ["unreadable", "extra_dice"],
            True,
        ),
        # doubt and an error together (a die in the box unread, a 6 moved in: five there): the error stands
        (
            [*RIGHT_MOVE[:3], die(None, "Five"), die(6, "Five"), *RIGHT_MOVE[5:]],
            ["unreadable", "wrong_face", "extra_dice"],
            True,
        ),
    ],
)
def test_593_4_e_the_readers_doubt_does_not_accuse_the_dealer(
    dice: list[DieReading], reasons: list[str], dealer_error: bool
) -> None:
    """The move keeps all the table's dice on the layout: a box short by no more dice than the reader did
    not find is `count_unsure`, which, like `unreadable`, asks a person to look (no `dealer_error`)."""
    check = check_layout_move(dice=dice, winner=5, match_count=4, dice_on_table=10)
    assert [p.reason for p in check.problems] == reasons
    assert check.dealer_error is dealer_error and not check.ok
    doc = check.as_dict()
    assert doc["dealer_error"] is dealer_error
    assert [p["accuses_dealer"] for p in doc["problems"]] == [  # type: ignore[union-attr]
        r not in DOUBT_CODES for r in reasons
    ]
    # without the table's count the check cannot tell, and a short box is the dealer's
    if reasons == ["count_unsure"]:
        assert [p.reason for p in check_layout_move(dice=dice, winner=5, match_count=4).problems] == [
            "missing_match"
        ]


def test_layout_problem_names_the_dice() -> None:
    dice = [die(5, "Five")] * 3 + [die(5, x=300.0)] + RIGHT_MOVE[4:]
    check = check_layout_move(dice=dice, winner=5, match_count=4)
    left = next(p for p in check.problems if p.reason == "match_left_behind")
    assert left.die_ids == (3,)
    assert "throw area" in left.message


def test_593_4_h_extra_roll_reads_only_the_rethrown_dice() -> None:
    # Four 5s kept in the Five box; six rethrown: 5 5 2 3 4 6 -> two new matches.
    dice = [die(5, "Five")] * 4 + [die(5), die(5), die(2), die(3), die(4), die(6)]
    read = split_extra_roll(dice=dice, winner=5, kept=4, expected_dice=10)
    assert read.ok
    assert read.kept == 4
    assert sorted(read.thrown_faces) == [2, 3, 4, 5, 5, 6]
    # The rules engine counts the new matches of the rethrown dice alone: the kept 5s are not counted again.
    assert new_matches(winner=5, rethrown=read.thrown_faces) == 2


@pytest.mark.parametrize(
    ("dice", "reasons"),
    [
        ([die(5, "Five")] * 3 + [die(5)] * 3 + [die(2)] * 4, ["kept_changed", "thrown_count"]),
        (
            [die(5, "Five")] * 4 + [die(5, "Six"), die(5), die(2), die(3), die(4), die(6)],
            ["wrong_box", "thrown_count"],
        ),
        ([die(5, "Five")] * 4 + [die(None), die(5), die(2), die(3), die(4), die(6)], ["unreadable"]),
    ],
)
def test_593_4_g_extra_roll_problems(dice: list[DieReading], reasons: list[str]) -> None:
    read = split_extra_roll(dice=dice, winner=5, kept=4, expected_dice=10)
    assert [p.reason for p in read.problems] == reasons
    assert not read.ok
    # a rethrown die the reader cannot read is its doubt, not the dealer's error
    assert read.dealer_error is (reasons != ["unreadable"])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"winner": 7, "match_count": 3}, "winner must be a face"),
        ({"winner": 5, "match_count": 0}, "match_count must be positive"),
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, int], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_layout_move(dice=RIGHT_MOVE, **kwargs)
    with pytest.raises(ValueError, match="kept must be"):
        split_extra_roll(dice=RIGHT_MOVE, winner=5, kept=11, expected_dice=10)


def _extra_roll(dice: list[DieReading], *findings: Finding) -> Roll:
    verdict = verdict_of(list(findings))
    faces = tuple(d.face for d in dice if d.face is not None)
    return Roll(
        tuple(dice),
        verdict,
        tuple(f.detail for f in findings),
        10,
        faces,
        "f",
        None,
        {},
        {},
        findings=tuple(findings),
    )


KEPT = [die(5, "Five", x=30.0 * i) for i in range(4)]
THROWN = [die(f, x=300.0 + 30 * i) for i, f in enumerate([5, 2, 3, 4, 6, 1])]


def test_593_4_g_the_extra_roll_sets_aside_what_the_judge_found_about_kept_dice_alone() -> None:
    on_kept = Finding(Verdict.NO_DECISION, "stacked_unclear", (1, 2), "two kept dice side by side")
    decided = decide_extra_roll(_extra_roll(KEPT + THROWN, on_kept), winner=5, kept=4, expected_dice=10)
    assert decided.verdict is Verdict.VALID and decided.on_kept == (on_kept,) and decided.alert is None
    assert sorted(decided.split.thrown_faces) == [1, 2, 3, 4, 5, 6]
    # ... but not a detection that may be no die at all, nor a finding about a rethrown die
    chip = Finding(Verdict.NO_DECISION, "object_unclear", (1,), "a chip?")
    assert decide_extra_roll(
        _extra_roll(KEPT + THROWN, chip), winner=5, kept=4, expected_dice=10
    ).verdict is (Verdict.NO_DECISION)
    thrown = Finding(Verdict.NO_DECISION, "face_uncertain", (5,), "a rethrown die unsure")
    assert decide_extra_roll(
        _extra_roll(KEPT + THROWN, thrown), winner=5, kept=4, expected_dice=10
    ).verdict is (Verdict.NO_DECISION)


def test_an_extra_roll_from_a_frame_unfit_to_read_is_left_to_a_person() -> None:
    # A washed-out frame with a die off the table found as well: by the usual precedence an invalid roll,
    # and an invalid finding on a kept die alone would even be set aside. The frame is judged by no rule.
    unfit = Finding(Verdict.NO_DECISION, "frame_exposure", (), "the frame is washed out: 70 % of it clipped")
    off = Finding(Verdict.INVALID, "die_off_table", (), "a die off the table")
    roll = replace(_extra_roll(KEPT + THROWN, unfit, off), verdict=Verdict.NO_DECISION)
    decided = decide_extra_roll(roll, winner=5, kept=4, expected_dice=10)
    assert decided.verdict is Verdict.NO_DECISION and decided.reasons == (unfit.detail,)
    assert decided.alert is None  # no dealer accused; the live loop's camera_exposure alert says why


@pytest.mark.parametrize(
    ("dice", "alert"),
    [
        ([*KEPT[:3], *THROWN, die(5)], "dealer_error"),  # a kept die back in the throw area: kept_changed
        ([*KEPT, die(None, x=300.0), *THROWN[1:]], "layout_unverified"),  # a rethrown die unread: doubt
    ],
)
def test_593_4_g_a_split_problem_stops_a_valid_extra_roll_with_the_right_alert(
    dice: list[DieReading], alert: str
) -> None:
    decided = decide_extra_roll(_extra_roll(dice), winner=5, kept=4, expected_dice=10)
    assert decided.verdict is Verdict.NO_DECISION and decided.alert == alert
    assert decided.reasons == tuple(p.message for p in decided.split.problems)


def test_593_4_g_a_short_count_of_kept_dice_missed_in_the_box_is_left_to_a_person_not_sent_back() -> None:
    """The reader missed a kept die in the winner's box: the frame holds 9 dice, the judge calls the roll
    invalid (die_off_table), but the throw area holds the 6 rethrown dice and the box is short by that one
    die: `no_decision` with `layout_unverified`, not a rethrow of what may be a right roll."""
    off = Finding(Verdict.INVALID, "die_off_table", (), "expected 10 dice, found 9")
    decided = decide_extra_roll(_extra_roll([*KEPT[:3], *THROWN], off), winner=5, kept=4, expected_dice=10)
    assert decided.verdict is Verdict.NO_DECISION and decided.alert == "layout_unverified"
    assert "not found in the Five box" in decided.reasons[0]
    # a rethrown die missing too (the throw area short): a die may have left the table, the rethrow stands
    too_few = [*KEPT[:3], *THROWN[:5]]
    off2 = Finding(Verdict.INVALID, "die_off_table", (), "expected 10 dice, found 8")
    assert decide_extra_roll(_extra_roll(too_few, off2), winner=5, kept=4, expected_dice=10).verdict is (
        Verdict.INVALID
    )
    # a die named off the table by its felt position: the rethrow stands
    named = Finding(Verdict.INVALID, "die_off_table", (5,), "die 5 beyond the wall")
    assert decide_extra_roll(
        _extra_roll([*KEPT[:3], *THROWN], named), winner=5, kept=4, expected_dice=10
    ).verdict is (Verdict.INVALID)


# Where the reader found the dice, as the Roll carries it (`Roll.layout_split`): the boxes and the throw area.
@pytest.mark.parametrize(
    ("boxes", "in_five", "outside_five", "throw_area"),
    [
        ([None, None], (), (), (0, 1)),  # uncalibrated: every die in the throw area
        (["Five", None, "Five", None], (0, 2), (), (1, 3)),  # kept dice in the winner's box
        (["Six", "Five", None, "Ace"], (1,), (0, 3), (2,)),  # dice in other boxes, in the dice's order
        ([], (), (), ()),  # no dice
    ],
    ids=["uncalibrated", "kept", "other-boxes", "none"],
)
def test_the_layout_split_places_each_die_once(
    boxes: list[str | None],
    in_five: tuple[int, ...],
    outside_five: tuple[int, ...],
    throw_area: tuple[int, ...],
) -> None:
    dice = [die(3, box, x=30.0 * i) for i, box in enumerate(boxes)]
    split = _extra_roll(dice).layout_split
    assert split == LayoutSplit.of(dice)
    assert (split.in_box("Five"), split.outside("Five"), split.throw_area) == (
        in_five,
        outside_five,
        throw_area,
    )
    placed = sorted([*split.throw_area, *(i for ids in split.boxes.values() for i in ids)])
    assert placed == list(range(len(dice)))
