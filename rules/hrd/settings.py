"""Interpretations the regulation texts leave open, as explicit settings with stated defaults.

Each setting names the clause that leaves it open. A settle document may carry them in an optional
"settings" object; `throwbox math` takes them as `--setting KEY=VALUE`.

- `extra_roll_reach` (593.2(e)(3), 593.4(f)(2)(ii), 593.4(h), 675a.4(h)): how many of the player's Like Kind
  circles one Extra Roll wager keeps alive for the second roll. "all_circles" (default, the literal reading:
  593.4(f)(2)(ii) leaves "the player's" losing-for-now Like Kind wagers on the layout when the player "also
  placed an Extra Roll Wager", with no limit to one circle) or "one_circle" (each Extra Roll wager covers the
  one circle named by its "count"; a player may buy one per circle).
- `no_match_pip_street` (593.2(e)(1), 675a.6(d)): who wins Pip Street on a 6-dice roll with every face
  different. "ace" (default: every face occurs once, and the tie goes to the higher rank, 593.2(d)) or
  "none" (no face "occurred the greatest number of times"; every Pip Street wager loses).
- `millionaire_row_alone` (593.2(e)(1) against 593.2(e)(4)): may a seat place a Millionaire Row wager
  without a Pip Street wager? "allowed" (default: 593.2(e)(4) says "A player may place a Millionaire Row
  Wager" without the "After placing a Pip Street Wager" that (e)(2) puts before Like Kind, the layout calls
  it a "First Roll Side Bet" (593.1(b)(2)(ii)), and the issue's own settle example has a seat with only a
  Millionaire Row wager) or "refused" (593.2(e)(1) read strictly: "To participate in a round of play, each
  player shall place a Pip Street Wager").
- `millionaire_row_circles` (593.2(e)(4), 593.4(f)(3), 593.5(c)): what a Millionaire Row wager is.
  "separate" (default: each of the two circles is its own wager of at most $1, priced and paid on its own
  count: 593.2(e)(4) "on either or both of the numbered nine or ten circles", and 593.4(f)(3) collects
  "all Millionaire Row Wagers that were not placed on the nine-of-a-kind" when nine are thrown) or
  "one_stake" (one stake of at most $1, naming no circle, that wins on either count at that count's
  593.5(c) price: 593.2(e)(4) "the player is wagering that all nine or ten dice will match", one wager
  covering both).
- `payout_rounding` (593.5 is silent on fractions of a cent): "down" (default: a payout that is not a whole
  cent is rounded down to the cent, the house keeps the fraction, as no chip smaller than a cent exists)
  or "half_up" (to the nearest cent, half a cent up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_DOWN, ROUND_HALF_UP
from enum import StrEnum
from typing import Any

from rules.games import Problem


class ExtraRollReach(StrEnum):
    """How far one Extra Roll wager reaches (see the module docstring)."""

    ALL_CIRCLES = "all_circles"
    ONE_CIRCLE = "one_circle"


class NoMatchPipStreet(StrEnum):
    """Who wins Pip Street on a 6-dice no-match roll (see the module docstring)."""

    ACE = "ace"
    NONE = "none"


class MillionaireRowAlone(StrEnum):
    """Whether a Millionaire Row wager needs a Pip Street wager at its seat (see the module docstring)."""

    ALLOWED = "allowed"
    REFUSED = "refused"


class MillionaireRowCircles(StrEnum):
    """Whether Millionaire Row's two circles are two wagers or one stake (see the module docstring)."""

    SEPARATE = "separate"
    ONE_STAKE = "one_stake"


class PayoutRounding(StrEnum):
    """How a payout that is not a whole cent is rounded (see the module docstring)."""

    DOWN = "down"
    HALF_UP = "half_up"

    @property
    def decimal_mode(self) -> str:
        """The `decimal` rounding mode."""
        return ROUND_DOWN if self is PayoutRounding.DOWN else ROUND_HALF_UP


@dataclass(frozen=True)
class Settings:
    """The interpretation settings of one round or one math report; defaults are the literal readings."""

    extra_roll_reach: ExtraRollReach = ExtraRollReach.ALL_CIRCLES
    no_match_pip_street: NoMatchPipStreet = NoMatchPipStreet.ACE
    payout_rounding: PayoutRounding = PayoutRounding.DOWN
    millionaire_row_alone: MillionaireRowAlone = MillionaireRowAlone.ALLOWED
    millionaire_row_circles: MillionaireRowCircles = MillionaireRowCircles.SEPARATE

    def as_dict(self) -> dict[str, str]:
        """JSON-ready form."""
        return {
            "extra_roll_reach": self.extra_roll_reach.value,
            "no_match_pip_street": self.no_match_pip_street.value,
            "payout_rounding": self.payout_rounding.value,
            "millionaire_row_alone": self.millionaire_row_alone.value,
            "millionaire_row_circles": self.millionaire_row_circles.value,
        }


DEFAULT_SETTINGS = Settings()

_CHOICES: dict[str, type[StrEnum]] = {
    "extra_roll_reach": ExtraRollReach,
    "no_match_pip_street": NoMatchPipStreet,
    "payout_rounding": PayoutRounding,
    "millionaire_row_alone": MillionaireRowAlone,
    "millionaire_row_circles": MillionaireRowCircles,
}

# The clauses each setting reads, for `throwbox math` and the map (docs/regulations.md).
SETTING_CLAUSES: dict[str, str] = {
    "extra_roll_reach": "593.2(e)(3), 593.4(f)(2)(ii)",
    "no_match_pip_street": "593.2(e)(1), 675a.6(d)(2)",
    "payout_rounding": "593.5",
    "millionaire_row_alone": "593.2(e)(1), 593.2(e)(4)",
    "millionaire_row_circles": "593.2(e)(4), 593.4(f)(3)",
}


def parse_settings(raw: object, *, field: str = "settings") -> tuple[Settings, list[Problem]]:
    """Read a settings object; unknown keys and values are problems (clause "settings"), never ignored."""
    if raw is None:
        return DEFAULT_SETTINGS, []
    if not isinstance(raw, Mapping):
        return DEFAULT_SETTINGS, [Problem("settings", "settings must be an object", field)]
    problems: list[Problem] = []
    values: dict[str, Any] = {}
    for key, value in raw.items():
        enum = _CHOICES.get(str(key))
        if enum is None:
            known = ", ".join(_CHOICES)
            problems.append(Problem("settings", f"unknown setting {key!r}; known: {known}", f"{field}.{key}"))
            continue
        allowed = [member.value for member in enum]
        if value not in allowed:
            problems.append(
                Problem(
                    "settings",
                    f"{key} must be one of {', '.join(allowed)}; got {value!r}",
                    f"{field}.{key}",
                )
            )
            continue
        values[str(key)] = enum(value)
    if problems:
        return DEFAULT_SETTINGS, problems
    return Settings(**values), []
