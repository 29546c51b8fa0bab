"""POST /v1/settle: the settle calculator (the same document and answer as `throwbox settle`).

Generic over `rules.games`: the body's "game" picks the game module. The body is read raw (the document
shapes differ per game) and parsed with exact decimals; the High Roll Dice shape is documented in OpenAPI
with an example. A document that breaks a rule gets 422 with every problem: `{"detail": [{"clause",
"message", "field"}, ...]}`. The endpoint stores nothing and changes nothing; `api.main` includes it
behind an API key of any role, like every service route (401 without one).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from api.schemas.errors import ProblemOut
from api.schemas.game import SETTINGS_SCHEMA, paytable_follows_game
from rules.games import DocumentRefusedError, Problem, game_ids, settle

router = APIRouter(prefix="/v1", tags=["rules"])

HRD10_EXAMPLE: dict[str, Any] = {
    "game": "hrd10",
    "wagers": [
        {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
        {"seat": 1, "kind": "like_kind", "count": 4, "amount": "5.00"},
        {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
        {"seat": 2, "kind": "millionaire_row", "count": 9, "amount": "1.00"},
    ],
    "rolls": [[5, 5, 5, 5, 6, 6, 6, 1, 1, 4], [5, 5, 2, 3, 4, 6]],
}

HRD6_EXAMPLE: dict[str, Any] = {
    "game": "hrd6",
    "wagers": [
        {"seat": 1, "kind": "pip_street", "face": 1, "amount": "10.00"},
        {"seat": 1, "kind": "like_kind", "count": "no_match", "amount": "10.00"},
    ],
    "rolls": [[1, 2, 3, 4, 5, 6]],
    "settings": {"no_match_pip_street": "ace"},
}

_HRD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["game", "wagers", "rolls"],
    "description": "A round to settle. Other games registered in rules.games take their own shapes.",
    "properties": {
        "game": {
            "type": "string",
            "enum": list(game_ids()),
            "description": "hrd10 (ten dice) or hrd6 (six dice); or another game the engine knows",
        },
        "wagers": {
            "type": "array",
            "items": {
                "type": "object",
                "required": ["seat", "kind", "amount"],
                "properties": {
                    "seat": {"type": "integer", "minimum": 1, "maximum": 5},
                    "kind": {"enum": ["pip_street", "like_kind", "extra_roll", "millionaire_row"]},
                    "amount": {"type": "string", "example": "5.00", "description": "money, whole cents"},
                    "face": {"type": "integer", "minimum": 1, "maximum": 6, "description": "Pip Street face"},
                    "count": {
                        "description": 'Like Kind circle 2..8 (hrd10), 2..6 or "no_match" (hrd6); '
                        "Millionaire Row 9 or 10 (none with millionaire_row_circles one_stake); "
                        "an Extra Roll's circle with extra_roll_reach one_circle",
                        "oneOf": [{"type": "integer"}, {"const": "no_match"}],
                    },
                },
            },
        },
        "rolls": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "array", "items": {"type": "integer", "minimum": 1, "maximum": 6}},
            "description": "the first roll; then only the rethrown dice, when an Extra Roll was bought",
        },
        "settings": {**SETTINGS_SCHEMA, "type": ["object", "null"]},
        "paytable": {"type": "object", "description": "a paytable document (throwbox-hrd-paytable/1)"},
    },
    **paytable_follows_game(),
}


class Refused(BaseModel):
    """Every problem of a refused document."""

    detail: list[ProblemOut]


def _refuse(problems: tuple[Problem, ...] | list[Problem]) -> JSONResponse:
    return JSONResponse(status_code=422, content={"detail": [p.as_dict() for p in problems]})


@router.post(
    "/settle",
    summary="Settle one round (the settle calculator)",
    response_model=dict[str, Any],
    responses={
        422: {"model": Refused, "description": "the document breaks one or more rules; each names its clause"}
    },
    openapi_extra={
        "requestBody": {
            "required": True,
            "content": {
                "application/json": {
                    "schema": _HRD_SCHEMA,
                    "examples": {
                        "hrd10": {"summary": "ten dice with an Extra Roll", "value": HRD10_EXAMPLE},
                        "hrd6": {"summary": "six dice, no match", "value": HRD6_EXAMPLE},
                    },
                }
            },
        }
    },
)
async def settle_round(request: Request) -> Any:
    """Settle the round in the body by the rules of its game; the answer of `throwbox settle --json`."""
    body = await request.body()
    try:
        doc = json.loads(body, parse_float=Decimal)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        return _refuse([Problem("document", f"the body is not JSON: {exc}", None)])
    try:
        return settle(doc)
    except DocumentRefusedError as exc:
        return _refuse(exc.problems)
