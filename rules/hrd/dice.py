"""Die ranking and roll classification (593.2(d), 593.2(e)(1)-(2), 675a.6(d)).

A roll is a tuple of faces 1..6 (1 is the ace). The Pip Street winner is the face that occurs most often;
a tie goes to the higher rank, ace > 6 > 5 > 4 > 3 > 2 (593.2(d)). The match count is how many dice show
the winning face. On six dice, a roll whose faces all differ is "no match" (675a.6(d)(2)); who wins Pip
Street then is a setting (`settings.NoMatchPipStreet`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import IntEnum

from rules.hrd.settings import NoMatchPipStreet

FACES: tuple[int, ...] = (1, 2, 3, 4, 5, 6)

# Highest rank first (593.2(d)): ace, then 6, 5, 4, 3, 2.
RANK_ORDER: tuple[int, ...] = (1, 6, 5, 4, 3, 2)

# The Like Kind circle "no match" of the 6-dice game is the match count 1: every face occurs at most once.
NO_MATCH = 1


class DiceCount(IntEnum):
    """How many dice a game throws: ten (593.3(a)) or six (675a.6(e))."""

    TEN = 10
    SIX = 6


def rank(face: int) -> int:
    """Rank of a face for High Roll Dice: 6 for the ace (highest) down to 1 for the two (593.2(d))."""
    if face not in FACES:
        raise ValueError(f"a die face is 1..6, got {face!r}")
    return 6 - RANK_ORDER.index(face)


def face_counts(faces: Sequence[int]) -> tuple[int, int, int, int, int, int]:
    """How many dice show each face: index 0 is the ace, index 5 the six."""
    counts = [0] * 6
    for face in faces:
        if isinstance(face, bool) or face not in FACES:
            raise ValueError(f"a die face is an integer 1..6, got {face!r}")
        counts[face - 1] += 1
    return (counts[0], counts[1], counts[2], counts[3], counts[4], counts[5])


def winner_of_counts(counts: Sequence[int]) -> int:
    """The face with the greatest count, ties to the higher rank (593.2(e)(1)(i)-(ii)).

    Raises:
        ValueError: no die was counted.
    """
    if len(counts) != 6 or sum(counts) <= 0:
        raise ValueError("need six face counts with at least one die")
    return max(FACES, key=lambda face: (counts[face - 1], rank(face)))


@dataclass(frozen=True)
class RollClass:
    """A first roll, classified.

    Attributes:
        faces: the faces as thrown.
        counts: dice per face, index 0 = ace .. index 5 = six.
        winner: the Pip Street winning face; None only on a 6-dice no-match roll under the setting "none".
        match_count: dice showing the most frequent face (the Like Kind count); `NO_MATCH` (1) when every
            face differs on six dice.
    """

    faces: tuple[int, ...]
    counts: tuple[int, int, int, int, int, int]
    winner: int | None
    match_count: int

    @property
    def no_match(self) -> bool:
        """True when every face differs (possible only with six dice)."""
        return self.match_count == NO_MATCH


def classify(
    faces: Sequence[int],
    *,
    dice: DiceCount,
    no_match_pip_street: NoMatchPipStreet = NoMatchPipStreet.ACE,
) -> RollClass:
    """Classify a complete first roll of `dice` dice.

    Raises:
        ValueError: wrong number of dice or a face outside 1..6.
    """
    if len(faces) != int(dice):
        raise ValueError(f"a roll of this game has {int(dice)} dice, got {len(faces)}")
    counts = face_counts(faces)
    match_count = max(counts)
    winner: int | None = winner_of_counts(counts)
    if match_count == NO_MATCH and no_match_pip_street is NoMatchPipStreet.NONE:
        winner = None
    return RollClass(faces=tuple(faces), counts=counts, winner=winner, match_count=match_count)


def new_matches(*, winner: int, rethrown: Sequence[int]) -> int:
    """How many rethrown dice match the winning face (593.4(h))."""
    face_counts(rethrown)  # validates the faces
    return sum(1 for face in rethrown if face == winner)
