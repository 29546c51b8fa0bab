"""POST /v1/settle with the side-wager games, through a real uvicorn server on a free port."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rules import games
from rules.side_wagers import common

EXAMPLES = Path(common.__file__).parent / "examples"
GAMES = ("lightning_roulette", "majestic_match", "buster_blackjack", "upcard_luck")


def test_v1_settle_side_wagers(service_factory: Any) -> None:
    with service_factory() as svc:
        for game in GAMES:
            doc = json.loads((EXAMPLES / f"{game}.json").read_text())
            answer = svc.ok("POST", "/v1/settle", "dealer", json=doc)
            assert answer == games.settle(doc), game

        bad = json.loads((EXAMPLES / "upcard_luck.json").read_text())
        bad["decks"] = 2
        bad["wagers"][0]["amount"] = "50.00"  # more than the 10.00 Blackjack wager
        response = svc.call("POST", "/v1/settle", "dealer", json=bad)
        assert response.status_code == 422
        assert [(p["clause"], p["field"]) for p in response.json()["detail"]] == [
            ("633b.15(b)", "decks"),
            ("633b.15(d)", "wagers[0].amount"),
        ]
