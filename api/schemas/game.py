"""JSON Schemas of the game's documents as the rules engine checks them: a paytable, the settings.

Built from the engine's own tables (rules.hrd.paytable.SHAPES, the settings' enums), so the OpenAPI document
states what the engine refuses wherever JSON Schema can: every section and key a game's paytable must have
and nothing else, odds written "A to B", each setting's choices. What JSON Schema cannot state (odds that
pay nothing or too much; a paytable for another game than a stored table's) the engine still refuses, by
clause; docs/service.md lists those rules.
"""

from __future__ import annotations

from typing import Any

from rules.hrd.paytable import FORMAT, SHAPES
from rules.hrd.settings import (
    ExtraRollReach,
    MillionaireRowAlone,
    MillionaireRowCircles,
    NoMatchPipStreet,
    PayoutRounding,
)

# rules.hrd.paytable's "A to B" (thousands commas only in threes); the engine bounds the values too.
_NUMBER = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"
ODDS_PATTERN = rf"^\s*{_NUMBER}\s+to\s+{_NUMBER}\s*$"

SETTINGS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Interpretations of the rules engine (rules.hrd.settings); left out: literal readings.",
    "additionalProperties": False,
    "properties": {
        "extra_roll_reach": {"enum": [m.value for m in ExtraRollReach]},
        "no_match_pip_street": {"enum": [m.value for m in NoMatchPipStreet]},
        "payout_rounding": {"enum": [m.value for m in PayoutRounding]},
        "millionaire_row_alone": {"enum": [m.value for m in MillionaireRowAlone]},
        "millionaire_row_circles": {"enum": [m.value for m in MillionaireRowCircles]},
    },
}


def paytable_schema(game: str) -> dict[str, Any]:
    """The paytable document of `game` (throwbox-hrd-paytable/1): its sections, each with every key."""
    shape = SHAPES[game]
    sections = {
        section: {
            "type": "object",
            "required": list(keys),
            "additionalProperties": False,
            "properties": {key: {"type": "string", "pattern": ODDS_PATTERN} for key in keys},
            "description": f"Odds by circle, replacing {shape.clauses[section]}.",
        }
        for section, keys in shape.sections.items()
    }
    return {
        "type": "object",
        "required": ["format", "game", *sections],
        "additionalProperties": False,
        "properties": {
            "format": {"const": FORMAT},
            "game": {"const": game},
            "name": {"type": "string"},
            **sections,
        },
    }


GAMES = tuple(SHAPES)
# A paytable of either game, or null (the regulation's table).
ANY_PAYTABLE_SCHEMA: dict[str, Any] = {
    "anyOf": [*(paytable_schema(game) for game in GAMES), {"type": "null"}],
    "description": "A paytable document (throwbox-hrd-paytable/1) for the table's game; null: the "
    "regulation's table.",
}


def paytable_follows_game(*, game_field: str = "game", paytable_field: str = "paytable") -> dict[str, Any]:
    """A document-level rule: the paytable, when given, is the document's own game's (JSON Schema if/then)."""
    return {
        "allOf": [
            {
                "if": {"required": [game_field], "properties": {game_field: {"const": game}}},
                "then": {
                    "properties": {paytable_field: {"anyOf": [paytable_schema(game), {"type": "null"}]}}
                },
            }
            for game in GAMES
        ]
    }
