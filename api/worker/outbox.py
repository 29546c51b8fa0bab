"""Everything a worker's loops send: at once while the service answers, else spooled and replayed in order."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from api.worker.errors import UNREACHABLE, ServiceDownError
from api.worker.protocol import SUPERSEDED, now_iso
from api.worker.spool import Outgoing, Spool

log = logging.getLogger("throwbox.worker")


REPLAY_RETRY_S = 0.5  # how often the courier tries the spool's head while the service does not answer


def response_detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:500]
    return detail if isinstance(detail, str) else json.dumps(detail)[:500]


def is_superseded(response: httpx.Response) -> bool:
    """A roll refused because another worker holds the table's lease now (contract: 409 lease_superseded)."""
    return response.status_code == 409 and SUPERSEDED in response.text


class Outbox:
    """Every request of a worker's loops, in order per table (see the package docstring).

    `submit` sends at once while the service answers and nothing of that table waits in the spool, and
    returns the answer; else it spools the request and returns None. Each table has a courier thread (its
    lane) that replays the table's spooled requests from the oldest, strictly in the order they were
    made: one the service does not answer stays first and is tried again every `retry_s`; a 2xx answer
    removes it; a refusal (4xx) makes it a dead letter (a refused roll also raises a `roll_not_posted`
    alert, as the in-process loop does, unless it was `lease_superseded`). While anything of a table is
    spooled, its new requests queue behind it, so the service sees each table's requests in the order
    made. Tables are independent of each other (no request of one depends on another's), so their lanes
    replay side by side: a floor of tables catches up after an outage as fast as the service answers.
    """

    def __init__(
        self,
        client: httpx.Client,
        spool: Spool,
        *,
        retry_s: float = REPLAY_RETRY_S,
        holds: Callable[[str, int | None], bool] | None = None,
        on_superseded: Callable[[str, int | None], None] | None = None,
    ) -> None:
        self.client = client
        self.spool = spool
        self.retry_s = retry_s
        self.holds = holds or (lambda table_id, epoch: True)
        self.on_superseded = on_superseded or (lambda table_id, epoch: None)
        self.croupiers: dict[str, Callable[[str], bool | None]] = {}
        self.last_roll: dict[str, dict[str, Any]] = {}
        self.replayed = 0
        self.last_outage: dict[str, Any] | None = None  # the last outage a table's lane replayed
        self._outages: dict[str, tuple[float, int]] = {}  # table -> (monotonic start, requests spooled)
        self._lock = threading.Lock()
        self._lanes: dict[str, threading.Event] = {}  # table -> its courier's wake-up
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._started = False

    @property
    def down(self) -> bool:
        """A request of some table got no answer, and that table's spool is not replayed yet."""
        return bool(self._outages)

    def start(self) -> None:
        """Start the couriers: first of the tables a previous run left requests of in the spool."""
        with self._lock:
            self._started = True
            for table_id in self.spool.tables():
                self._outages.setdefault(table_id, (time.monotonic(), self.spool.depth(table_id)))
                self._lane(table_id)

    def _lane(self, table_id: str) -> threading.Event:
        # Under self._lock.
        wake = self._lanes.get(table_id)
        if wake is None:
            wake = self._lanes[table_id] = threading.Event()
            if self._started:
                thread = threading.Thread(
                    target=self._courier, args=(table_id, wake), name=f"courier-{table_id}", daemon=True
                )
                self._threads.append(thread)
                thread.start()
        return wake

    def stop(self, drain_s: float = 0.0) -> None:
        """Stop the couriers, after up to `drain_s` seconds of trying to empty the spool."""
        deadline = time.monotonic() + drain_s
        while self.spool.depth() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._stop.set()
        with self._lock:
            for wake in self._lanes.values():
                wake.set()
        for thread in self._threads:
            thread.join(30)

    def _spool(self, item: Outgoing, why: str) -> None:
        # Under self._lock.
        if item.table_id not in self._outages:
            self._outages[item.table_id] = (time.monotonic(), 0)
            log.warning(
                "table %s: service not answering (%s): spooling from %s on",
                item.table_id,
                why,
                item.describe(),
            )
        started, count = self._outages[item.table_id]
        self._outages[item.table_id] = (started, count + 1)
        self.spool.push(item)
        self._lane(item.table_id).set()

    def _must_wait(self, table_id: str) -> bool:
        # Under self._lock.
        return table_id in self._outages or self.spool.depth(table_id) > 0

    def submit(self, item: Outgoing) -> httpx.Response | None:
        """Send `item` now if nothing of its table waits before it, else spool it; the answer (None:
        spooled)."""
        with self._lock:
            if self._must_wait(item.table_id):
                self._spool(item, "requests wait in the spool")
                return None
        try:
            response = self._send(item)
        except UNREACHABLE as exc:
            with self._lock:
                self._spool(item, f"{type(exc).__name__}: {exc}")
            return None
        return response

    def run_croupier(self, table_id: str, clip: str, epoch: int | None) -> bool:
        """The demo croupier's step before `clip`, in order with the table's requests: run now, or spooled
        (and run on replay) while the service does not answer. True: it ended the waiting round."""
        item = Outgoing("croupier", table_id, "CROUPIER", clip, epoch=epoch)
        with self._lock:
            if self._must_wait(table_id):
                self._spool(item, "requests wait in the spool")
                return False
        try:
            return bool(self.croupiers[table_id](clip))
        except UNREACHABLE as exc:
            with self._lock:
                self._spool(item, f"{type(exc).__name__}: {exc}")
            return False

    def _send(self, item: Outgoing) -> httpx.Response:
        response = self.client.request(
            item.method,
            item.path,
            content=item.body,
            headers={**item.headers, "Content-Type": item.content_type},
        )
        if response.status_code >= 500:
            raise ServiceDownError(f"{item.describe()}: HTTP {response.status_code}: {response.text[:200]}")
        return response

    def note_roll(self, item: Outgoing, response: httpx.Response, *, replayed: bool) -> None:
        """Keep the table's last roll the service took (for /healthz)."""
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        self.last_roll[item.table_id] = {
            "roll_id": json.loads(item.body).get("roll_id"),
            "status": response.status_code,
            "duplicate": bool(answer.get("duplicate")),
            "phase": answer.get("phase"),
            "replayed": replayed,
            "at": now_iso(),
        }

    def refused(self, item: Outgoing, response: httpx.Response) -> None:
        """A refused request: a dead letter, logged; a refused roll's owner told when it was superseded."""
        detail = response_detail(response)
        self.spool.bury(item, response.status_code, detail)
        log.error(
            "service refused %s (%d): %s; kept as a dead letter",
            item.describe(),
            response.status_code,
            detail,
        )
        if item.kind == "roll" and is_superseded(response):
            self.on_superseded(item.table_id, item.epoch)

    def _courier(self, table_id: str, wake: threading.Event) -> None:
        while not self._stop.is_set():
            item = self.spool.head(table_id)
            if item is None:
                with self._lock:
                    if table_id in self._outages and not self.spool.depth(table_id):
                        self._end_outage(table_id)
                wake.wait(1.0)
                wake.clear()
                continue
            try:
                self._replay(item)
            except UNREACHABLE as exc:
                log.debug("replay of %s: no answer (%s)", item.describe(), exc)
                self._stop.wait(self.retry_s)
            except Exception:  # a bug must not stop the courier: keep the entry, say so, try later
                log.exception("replay of %s failed", item.describe())
                self._stop.wait(self.retry_s)

    def _end_outage(self, table_id: str) -> None:
        # Under self._lock: the table's spool is empty and was replayed.
        started, count = self._outages.pop(table_id)
        self.last_outage = {
            "table_id": table_id,
            "spooled": count,
            "seconds": round(time.monotonic() - started, 2),
            "ended_at": now_iso(),
        }
        log.warning("table %s: service answers again: %d spooled requests replayed in order", table_id, count)

    def _replay(self, item: Outgoing) -> None:
        assert item.seq is not None
        if item.kind == "croupier":
            if not self.holds(item.table_id, item.epoch) or item.table_id not in self.croupiers:
                self.spool.bury(item, 0, "the table's lease was lost before the croupier's step was replayed")
                return
            try:
                self.croupiers[item.table_id](item.path)
            except UNREACHABLE:
                raise
            except Exception as exc:  # what the live loop does with a croupier that failed: an alert
                self.spool.remove(item.seq)
                self.replayed += 1
                self.submit(alert_request(item.table_id, "round_not_ready", f"no round ready: {exc}", {}))
                return
            self.spool.remove(item.seq)
            self.replayed += 1
            return
        response = self._send(item)
        self.replayed += 1
        if response.status_code < 400:
            self.spool.remove(item.seq)
            if item.kind == "roll":
                self.note_roll(item, response, replayed=True)
            return
        self.refused(item, response)
        if item.kind == "roll" and not is_superseded(response):
            roll_id = json.loads(item.body).get("roll_id")
            self.submit(
                alert_request(
                    item.table_id,
                    "roll_not_posted",
                    f"roll {roll_id} (spooled while the service did not answer) was refused on replay "
                    f"({response.status_code}): {response_detail(response)}",
                    {"roll_id": roll_id},
                )
            )


def alert_request(table_id: str, kind: str, message: str, data: dict[str, Any]) -> Outgoing:
    """POST /v1/alerts for a live alert."""
    # Its own key, kept in the spool with the body: a replay after a lost answer is the same alert.
    body = {
        "kind": kind,
        "message": message[:2000],
        "table_id": table_id,
        "data": data,
        "alert_key": uuid.uuid4().hex,
    }
    return Outgoing.json("alert", table_id, "POST", "/v1/alerts", body)
