"""The Extra Roll and the layout boxes (58 Pa. Code 593.4(e), (g), (h)): pure checks on read dice.

After the first roll the dealer moves the dice showing the winning face into that face's labelled layout
box (593.4(e)); the rest are rethrown for the Extra Roll (593.4(g)) and only the additional matches of the
rethrown dice count (593.4(h)). Two checks, on the dice the reader found in a frame (each `DieReading`
carries `layout_box`, the label of the box it lies in, set from the table's calibration):

- `check_layout_move`: the frame after the dealer's move. The winner's box must hold all the matching dice
  of the first roll and only them: exactly `match_count` dice, each showing the winning face; no die in any
  other layout box; no die showing the winning face left in the throw area. Anything else is a problem
  (a `dealer_error` alert upstream, with this frame as evidence), except where the reader cannot vouch for
  what it saw: a die in the box it cannot read (`unreadable`), or a box short by no more dice than it did
  not find of the table's (`count_unsure`: the move keeps every die on the layout, so they may lie in the
  box unseen). Those do not accuse the dealer (`LayoutProblem.accuses_dealer`): a person looks.
- `split_extra_roll`: the frame at rest after the Extra Roll. Dice in the winner's box are the kept dice
  and are not read as thrown dice; the dice outside the layout boxes are the rethrown ones (the Roll's
  `layout_split`). How many of them are additional matches is the rules engine's count
  (`rules.hrd.dice.new_matches`, applied in `api/live.py`: vision knows nothing of the game). A kept count
  that differs from the first roll's, a die in another box, or a rethrown die that could not be read is a
  problem.

No I/O and no images here: the reader has already placed every die.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from calibration.layout import LAYOUT_LABELS
from vision.judge.decide import verdict_of
from vision.judge.exposure import exposure_failure
from vision.types import DieReading, Finding, FindingReason, LayoutSplit, Roll, Verdict

# Problems that are the reader's doubt, not the dealer's error: a die in the box it cannot read, a box short
# by no more dice than it did not find of the table's (the move keeps them all on the layout), a box over-full
# by no more unread detections than it found beyond the table's dice. The check cannot tell a die the dealer
# took off the table from one it missed: that shows as `count_unsure` too.
DOUBT_CODES = ("unreadable", "count_unsure", "extra_unsure")


@dataclass(frozen=True)
class LayoutProblem:
    """One thing wrong with the dice in the layout boxes; `die_ids` index the frame's dice."""

    reason: str  # a short code, e.g. "wrong_box", "missing_match", "wrong_face", "match_left_behind"
    message: str
    die_ids: tuple[int, ...]
    # False for the reader's doubt (`DOUBT_CODES`), which asks a person to look; True for the dealer's error.
    accuses_dealer: bool = True

    def as_dict(self) -> dict[str, object]:
        """JSON form (alert data)."""
        return {
            "reason": self.reason,
            "message": self.message,
            "die_ids": list(self.die_ids),
            "accuses_dealer": self.accuses_dealer,
        }


@dataclass(frozen=True)
class LayoutCheck:
    """The dealer's move checked against the first roll: right box, all the matching dice, only them."""

    winner: int
    expected_count: int
    in_winner_box: int
    problems: tuple[LayoutProblem, ...]

    @property
    def ok(self) -> bool:
        """True when the move is right."""
        return not self.problems

    @property
    def dealer_error(self) -> bool:
        """True when a problem accuses the dealer (not only the reader's doubt)."""
        return any(p.accuses_dealer for p in self.problems)

    def as_dict(self) -> dict[str, object]:
        """JSON form (alert data, events)."""
        return {
            "ok": self.ok,
            "dealer_error": self.dealer_error,
            "winner": self.winner,
            "box": LAYOUT_LABELS[self.winner],
            "expected_count": self.expected_count,
            "in_winner_box": self.in_winner_box,
            "problems": [p.as_dict() for p in self.problems],
        }


@dataclass(frozen=True)
class ExtraRollRead:
    """The Extra Roll frame split into kept dice (winner's box) and rethrown dice (the throw area)."""

    winner: int
    kept: int
    thrown_faces: tuple[int, ...]  # of the rethrown dice read (the rules engine counts their new matches)
    problems: tuple[LayoutProblem, ...]

    @property
    def ok(self) -> bool:
        """True when the kept and rethrown dice are what the first roll says they must be."""
        return not self.problems

    @property
    def dealer_error(self) -> bool:
        """True when a problem accuses the dealer (a rethrown die the reader cannot read does not)."""
        return any(p.accuses_dealer for p in self.problems)


def _check_winner(winner: int) -> str:
    if winner not in LAYOUT_LABELS:
        raise ValueError(f"winner must be a face 1..6, got {winner!r}")
    return LAYOUT_LABELS[winner]


def _other_boxes(dice: Sequence[DieReading], box: str) -> LayoutProblem | None:
    other = LayoutSplit.of(dice).outside(box)
    if not other:
        return None
    boxes = sorted({str(dice[i].layout_box) for i in other})
    return LayoutProblem(
        "wrong_box",
        f"{len(other)} dice in the {', '.join(boxes)} box(es); only the {box} box may hold dice",
        other,
    )


def check_layout_move(
    *, dice: Sequence[DieReading], winner: int, match_count: int, dice_on_table: int | None = None
) -> LayoutCheck:
    """Check the dealer's move of the winning dice into their layout box (593.4(e)).

    Args:
        dice: every die the reader found in the frame after the move.
        winner: the first roll's winning face (1..6).
        match_count: how many dice showed it on the first roll.
        dice_on_table: the table's dice (10 or 6), all still on the layout after the move; where the
            winner's box is short by no more dice than the reader did not find, it is `count_unsure` (a
            person looks) instead of `missing_match`; over-full by no more unread detections than it found
            beyond N, `extra_unsure` instead of `extra_dice`.

    Raises:
        ValueError: `winner` is not a face or `match_count` is not positive.
    """
    box = _check_winner(winner)
    if match_count < 1:
        raise ValueError(f"match_count must be positive, got {match_count}")
    problems: list[LayoutProblem] = []
    split = LayoutSplit.of(dice)
    in_box = split.in_box(box)
    if (wrong := _other_boxes(dice, box)) is not None:
        problems.append(wrong)
    unread = tuple(i for i in in_box if dice[i].face is None)
    if unread:
        problems.append(
            LayoutProblem(
                "unreadable",
                f"{len(unread)} dice in the {box} box cannot be read",
                unread,
                accuses_dealer=False,
            )
        )
    wrong_face = tuple(i for i in in_box if dice[i].face is not None and dice[i].face != winner)
    if wrong_face:
        faces = ", ".join(str(dice[i].face) for i in wrong_face)
        problems.append(
            LayoutProblem(
                "wrong_face", f"the {box} box holds dice showing {faces}, not only {winner}s", wrong_face
            )
        )
    # Dice the reader did not find may be in the box: a shortfall they could fill is not the dealer's.
    unseen = 0 if dice_on_table is None else max(0, dice_on_table - len(dice))
    phantoms = 0 if dice_on_table is None else max(0, len(dice) - dice_on_table)
    if 0 < match_count - len(in_box) <= unseen:
        problems.append(
            LayoutProblem(
                "count_unsure",
                f"the {box} box holds {len(in_box)} dice (the first roll had {match_count} {winner}s), but "
                f"only {len(dice)} of the table's {dice_on_table} dice were found: they may lie there unseen",
                in_box,
                accuses_dealer=False,
            )
        )
    elif len(in_box) < match_count:
        problems.append(
            LayoutProblem(
                "missing_match",
                f"the {box} box holds {len(in_box)} dice; the first roll had {match_count} {winner}s",
                in_box,
            )
        )
    elif 0 < len(in_box) - match_count <= min(phantoms, len(unread)):
        # More detections than the table has dice: at least that many are no die (a chip, a printed letter,
        # a die boxed twice). A surplus in the box no larger than that and its unread detections may be those.
        problems.append(
            LayoutProblem(
                "extra_unsure",
                f"the {box} box holds {len(in_box)} dice (the first roll had {match_count} {winner}s), but "
                f"{len(dice)} were found of the table's {dice_on_table} and {len(unread)} there are unread: "
                "they may be no dice",
                in_box,
                accuses_dealer=False,
            )
        )
    elif len(in_box) > match_count:
        problems.append(
            LayoutProblem(
                "extra_dice",
                f"the {box} box holds {len(in_box)} dice; the first roll had only {match_count} {winner}s",
                in_box,
            )
        )
    left = tuple(i for i in split.throw_area if dice[i].face == winner)
    if left:
        problems.append(
            LayoutProblem(
                "match_left_behind", f"{len(left)} dice showing {winner} were left in the throw area", left
            )
        )
    return LayoutCheck(
        winner=winner, expected_count=match_count, in_winner_box=len(in_box), problems=tuple(problems)
    )


def split_extra_roll(
    *, dice: Sequence[DieReading], winner: int, kept: int, expected_dice: int
) -> ExtraRollRead:
    """Read the Extra Roll: only the rethrown dice (outside the layout boxes) count (593.4(g), (h)).

    Args:
        dice: every die the reader found in the frame at rest after the Extra Roll.
        winner: the first roll's winning face, whose box holds the kept dice.
        kept: how many dice were kept (the first roll's match count).
        expected_dice: dice in play (10 or 6): the rethrown dice are `expected_dice - kept`.

    Raises:
        ValueError: bad `winner`, or `kept` not in 1..expected_dice.
    """
    box = _check_winner(winner)
    if not 1 <= kept <= expected_dice:
        raise ValueError(f"kept must be in 1..{expected_dice}, got {kept}")
    problems: list[LayoutProblem] = []
    split = LayoutSplit.of(dice)
    in_box, thrown = split.in_box(box), split.throw_area
    if (wrong := _other_boxes(dice, box)) is not None:
        problems.append(wrong)
    if len(in_box) != kept:
        problems.append(
            LayoutProblem(
                "kept_changed",
                f"the {box} box holds {len(in_box)} dice during the Extra Roll; {kept} were kept",
                in_box,
            )
        )
    if len(thrown) != expected_dice - kept:
        problems.append(
            LayoutProblem(
                "thrown_count",
                f"{len(thrown)} dice in the throw area; {expected_dice - kept} were to be rethrown",
                thrown,
            )
        )
    unread = tuple(i for i in thrown if dice[i].face is None)
    if unread:
        problems.append(
            LayoutProblem(
                "unreadable", f"{len(unread)} rethrown dice cannot be read", unread, accuses_dealer=False
            )
        )
    faces = tuple(int(f) for f in (dice[i].face for i in thrown) if f is not None)
    return ExtraRollRead(winner=winner, kept=len(in_box), thrown_faces=faces, problems=tuple(problems))


@dataclass(frozen=True)
class ExtraRollDecision:
    """What an Extra Roll frame counts as for the rules engine (the live loop posts it)."""

    verdict: Verdict
    reasons: tuple[str, ...]
    split: ExtraRollRead
    on_kept: tuple[Finding, ...]  # the judge's findings about kept dice alone, set aside
    alert: str | None  # "dealer_error" or "layout_unverified" when the split's problems stopped the roll


def decide_extra_roll(roll: Roll, *, winner: int, kept: int, expected_dice: int) -> ExtraRollDecision:
    """The Extra Roll as posted: only the rethrown dice count (593.4(g), (h)).

    The kept dice were set down in the winner's box by the dealer, not thrown: what the judge found about them
    alone (two boxed dice side by side taken for one on the other, an unsure face of a kept die) says nothing
    of the Extra Roll. A finding that concerns a rethrown die, or no die in particular, still counts; so does
    `object_unclear` (a detection that may be no die at all, e.g. a chip in the box counted as a kept die).
    A problem of the split (`split_extra_roll`) turns a valid read into `no_decision`, with an alert: a
    `dealer_error`, or `layout_unverified` where the reader only doubts what it saw.
    """
    split = split_extra_roll(dice=roll.dice, winner=winner, kept=kept, expected_dice=expected_dice)
    unfit = exposure_failure(roll.findings)
    if unfit is not None:
        # A frame washed out or too dark (vision/judge/exposure.py) is judged by no rule, and the kept dice
        # cannot be told from the rethrown ones on it either: a person decides, and the live loop's
        # `camera_exposure` alert says why.
        return ExtraRollDecision(
            verdict=Verdict.NO_DECISION, reasons=(unfit.detail,), split=split, on_kept=(), alert=None
        )
    box = LAYOUT_LABELS[winner]
    on_kept = tuple(
        f
        for f in roll.findings
        if f.die_ids
        and f.reason != FindingReason.OBJECT_UNCLEAR
        and all(roll.dice[i - 1].layout_box == box for i in f.die_ids)
    )
    verdict, reasons = roll.verdict, tuple(roll.reasons)
    counted = [f for f in roll.findings if f not in on_kept]
    if on_kept:
        verdict, reasons = verdict_of(counted), tuple(f.detail for f in counted)
    alert = None
    deciding = [f for f in counted if f.verdict is Verdict.INVALID]
    short = expected_dice - len(roll.dice)
    if (
        verdict is Verdict.INVALID
        and deciding
        and all(f.reason == FindingReason.DIE_OFF_TABLE and not f.die_ids for f in deciding)
        and sum(1 for d in roll.dice if d.layout_box is None) == expected_dice - kept
        and short > 0
        and kept - split.kept == short
    ):
        # The count is short by exactly the kept dice missing from the winner's box, and the throw area holds
        # the dice to be rethrown: the dice the reader missed lie in the box (the dealer set them there), not
        # off the table. A person looks instead of a rethrow of what may be a right roll.
        verdict = Verdict.NO_DECISION
        reasons = (
            f"{short} of the {kept} kept dice not found in the {box} box (the throw area holds the "
            f"{expected_dice - kept} rethrown dice): a person looks",
        )
        return ExtraRollDecision(
            verdict=verdict, reasons=reasons, split=split, on_kept=on_kept, alert="layout_unverified"
        )
    if not split.ok and verdict is Verdict.VALID:
        verdict, reasons = Verdict.NO_DECISION, tuple(p.message for p in split.problems)
        alert = "dealer_error" if split.dealer_error else "layout_unverified"
    return ExtraRollDecision(verdict=verdict, reasons=reasons, split=split, on_kept=on_kept, alert=alert)
