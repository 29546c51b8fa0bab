"""Loaded dice for the demo and the tests (issue 49): rounds played over REST with weighted faces.

`play_rounds` plays whole rounds at a table as its dealer would key them (open, no more bets, the first
roll), with faces drawn from `weights` (dice, 6) by `rules.fairness.simulate_rolls`: a fair set, or one
with a die loaded on a face. Every roll goes through `POST /v1/tables/{id}/rolls`, the path the reader's
rolls take, so the fairness watch sees exactly what it sees in play. `throwbox serve --demo` with
`THROWBOX_DEMO_LOADED_DIE` set runs it beside the demo table (see docs/fairness.md).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import httpx
import numpy as np
import numpy.typing as npt

from rules.fairness import loaded_weights, simulate_rolls

if TYPE_CHECKING:
    from api.db.session import Database
    from api.settings import Settings

log = logging.getLogger(__name__)

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


class DiceFeeder:
    """The demo's loaded-dice table (`THROWBOX_DEMO_LOADED_DIE`): one round keyed over REST every
    `interval_s`, from a thread, until stopped, so the dashboard shows the fairness watch rise."""

    def __init__(
        self,
        *,
        base_url: str,
        dealer_key: str,
        table_id: str,
        weights: npt.NDArray[np.float64],
        interval_s: float,
        seed: int = 49,
    ) -> None:
        self.table_id = table_id
        self.weights = weights
        self.interval_s = interval_s
        self.rounds = 0
        self.error: str | None = None
        self._rng = np.random.default_rng(seed)
        self._client = httpx.Client(
            base_url=base_url.rstrip("/"), headers={"Authorization": f"Bearer {dealer_key}"}, timeout=30.0
        )
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"demo-dice-{table_id}", daemon=True)

    def start(self) -> None:
        """Begin playing rounds (once the service answers)."""
        self._thread.start()

    def stop(self) -> None:
        """Stop after the round in hand."""
        self._stopping.set()
        self._thread.join(30)
        self._client.close()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                if self._client.get("/healthz").status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            self._stopping.wait(0.2)
        while not self._stopping.is_set():
            try:
                play_rounds(
                    self._client,
                    table_id=self.table_id,
                    weights=self.weights,
                    rounds=1,
                    rng=self._rng,
                    prefix=f"demo-dice-{int(time.time())}-{self.rounds}",
                )
            except (FeedError, httpx.HTTPError) as exc:  # said once, in the log and on `error`; then stop
                self.error = str(exc)
                log.error("demo dice: %s; the loaded-dice table stops", exc)
                return
            self.rounds += 1
            self._stopping.wait(self.interval_s)


def start_demo_dice(*, settings: Settings, database: Database, dealer_key: str) -> DiceFeeder | None:
    """With `THROWBOX_DEMO_LOADED_DIE` set: table `demo-dice` (hrd10), a dice set watched by position
    named after the loading, and its feeder started; None when the setting is not given."""
    from api import audit
    from api.db.models import GameTable
    from api.fairness import current_set, register_set

    spec = settings.demo_loaded_die
    if not spec:
        return None
    weights = parse_loaded_die(spec, dice=10)
    with database.session() as session:
        table = session.get(GameTable, DEMO_DICE_TABLE)
        if table is None:
            table = GameTable(id=DEMO_DICE_TABLE, game="hrd10", settings={})
            session.add(table)
            session.flush()
            audit.append(
                session,
                actor="system:demo",
                action="table.create",
                subject=f"table:{DEMO_DICE_TABLE}",
                payload={"id": DEMO_DICE_TABLE, "game": "hrd10", "demo": True, "loaded_die": spec},
            )
        name = f"demo dice, loaded {spec}"
        in_play = current_set(session, DEMO_DICE_TABLE)
        if in_play is None or in_play.name != name:
            register_set(session, table=table, name=name, per_position=True, actor="system:demo")
    feeder = DiceFeeder(
        base_url=settings.self_url,
        dealer_key=dealer_key,
        table_id=DEMO_DICE_TABLE,
        weights=weights,
        interval_s=settings.demo_dice_interval_s,
    )
    feeder.start()
    return feeder
