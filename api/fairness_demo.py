"""Loaded dice for the demo and the tests (issue 49): rounds played over REST with weighted faces.

`play_rounds` plays whole rounds at a table as its dealer would key them (open, no more bets, the first
roll), with faces drawn from `weights` (dice, 6) by `rules.fairness.simulate_rolls`: a fair set, or one
with a die loaded on a face. Every roll goes through `POST /v1/tables/{id}/rolls`, the path the reader's
rolls take, so the fairness watch sees exactly what it sees in play. `throwbox serve --demo` with
`THROWBOX_DEMO_LOADED_DIE` set runs it beside the demo table (see docs/fairness.md).
"""

from __future__ import annotations

import httpx
import numpy as np
import numpy.typing as npt

from rules.fairness import loaded_weights, simulate_rolls

DEMO_DICE_TABLE = "demo-dice"


class FeedError(RuntimeError):
    """The service refused a step of a round (the answer's status and body are in the message)."""


def _check(response: httpx.Response) -> httpx.Response:
    if response.status_code >= 400:
        raise FeedError(
            f"{response.request.method} {response.request.url.path}: {response.status_code} {response.text}"
        )
    return response


def parse_loaded_die(text: str, *, dice: int) -> npt.NDArray[np.float64]:
    """'DIE:FACE:BIAS' (e.g. '1:6:0.05', die 1-based, or 'all:6:0.02') -> face weights (dice, 6)."""
    parts = text.split(":")
    if len(parts) != 3:
        raise ValueError(f"a loaded die is DIE:FACE:BIAS, e.g. 1:6:0.05; got {text!r}")
    die = None if parts[0] == "all" else int(parts[0]) - 1
    if die is not None and not 0 <= die < dice:
        raise ValueError(f"die {parts[0]} is not one of 1..{dice}")
    return loaded_weights(dice=dice, loaded_die=die, face=int(parts[1]), bias=float(parts[2]))


def play_rounds(
    client: httpx.Client,
    *,
    table_id: str,
    weights: npt.NDArray[np.float64],
    rounds: int,
    rng: np.random.Generator,
    prefix: str,
) -> int:
    """Play `rounds` rounds with dice of `weights`, through the REST API as the table's dealer; the
    rolls applied."""
    applied = 0
    for faces in simulate_rolls(rng, weights, (rounds,)):
        round_id = _check(client.post(f"/v1/tables/{table_id}/rounds")).json()["id"]
        _check(client.post(f"/v1/rounds/{round_id}/no-more-bets"))
        body = {
            "roll_id": f"{prefix}-{round_id}",
            "source": "dealer",
            "verdict": "valid",
            "faces": [int(f) for f in faces],
            "round_id": round_id,
        }
        answer = _check(client.post(f"/v1/tables/{table_id}/rolls", json=body)).json()
        applied += int(answer["applied"])
        if not answer["settled"]:  # an Extra Roll is pending only with an Extra Roll wager: none here
            raise FeedError(f"round {round_id} did not settle on roll one: {answer['message']}")
    return applied
