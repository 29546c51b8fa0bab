"""The table worker (`throwbox worker`, issue 50): live loops on their own machine, against a remote service.

One worker process runs `api.live.LiveLoop` for the tables it is given, each only while it holds that
table's lease at the service (docs/floor.md, WORKER_CONTRACT.md):

    per table (`TableRunner`, a thread): take the lease (about once a second until it is free) -> fetch the
    table's live-config (game, camera, calibration, enrollment, lease TTL) -> run the loop -> renew the
    lease every TTL/3 -> stop the loop at once when a renewal is refused (409: another worker holds it)

Everything the loops send (evidence frames, reads, rolls, alerts, and the demo croupier's steps) goes
through one `Outbox`: sent at once while the service answers and nothing of that table waits in the spool;
otherwise kept in the `Spool` (a stdlib sqlite3 file, in order) and replayed strictly in that order (each
table's requests in the order made, by a courier thread per table) once the service answers again.
Rolls carry the lease epoch (`X-Throwbox-Lease-Epoch`), so the service refuses (409 `lease_superseded`) a
spooled roll of a table another worker has taken over since; such a refusal is kept in the spool's dead
letters, logged, and shown on /healthz, never retried.

Several `--service` URLs (replicas of one service) are tried in turn (`FailoverTransport`): a replica that
refuses the connection is skipped for the next one.

Errors::

    WorkerError               base class
    +-- ServiceDownError      the service answered 5xx (treated as no answer: spooled, retried)
    +-- SpoolBusyError        another worker process holds this spool (the same --worker-id / --spool)
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx

from api.live import LiveConfig, LiveLoop, LiveRead, RollRejectedError, StoredRead
from api.live_service import (
    DEMO_CLIPS,
    DEMO_SOURCE,
    DemoCroupier,
    camera_loop,
    demo_loop,
    evidence_jpeg,
    live_read_document,
)
from api.schemas.rolls import RollSubmission
from vision.capture import CapturedFrame, CaptureEvent

log = logging.getLogger("throwbox.worker")

EPOCH_HEADER = "X-Throwbox-Lease-Epoch"
WORKER_HEADER = "X-Throwbox-Worker-Id"
WORKER_ID = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")
LEASE_RETRY_S = 1.0  # how often a worker asks for a table it does not hold
REPLAY_RETRY_S = 0.5  # how often the courier tries the spool's head while the service does not answer
LOOP_RESTART_S = 5.0  # after a table's loop ended or could not start, before the worker tries it again
# After the service refuses a lease outright (401, 403, 404: a revoked key, a key bound to another worker id,
# a table not made yet), before the worker asks again: an admin can mend it, but it will not mend in a second.
LEASE_REFUSED_RETRY_S = 30.0
# A worker takes a free table at once while it holds none, and only after wanting it this much longer for
# each table it holds already: workers started together spread the tables between them (no worker knows
# of the others), while an orphaned table, wanted all along, is taken as soon as its lease expires.
TAKE_STAGGER_S = 2.0
SUPERSEDED = "lease_superseded"


class WorkerError(Exception):
    """Base class of the table worker's errors."""


class ServiceDownError(WorkerError):
    """The service answered 5xx: as good as no answer (the request is spooled and retried)."""


class SpoolBusyError(WorkerError):
    """Another worker process holds this spool."""


# Everything that means "the service did not answer": the request may be spooled and replayed.
UNREACHABLE = (httpx.TransportError, ServiceDownError)


def now_iso() -> str:
    """The UTC time now, ISO 8601."""
    return datetime.now(UTC).isoformat()


# ------------------------------------------------------------------------------------------- fail-over
class FailoverTransport(httpx.BaseTransport):
    """An httpx transport over several replicas of one service: each request goes to the replica that
    answered last; one that refuses the connection (or does not accept it in time) is skipped for the next.

    Only connection failures move on: a request that reached a replica and then lost its answer is not
    sent again here (the caller spools it; rolls, evidence and reads are idempotent on replay).
    """

    def __init__(self, urls: Sequence[str]) -> None:
        if not urls:
            raise ValueError("at least one service URL is needed")
        parsed = [httpx.URL(u.rstrip("/")) for u in urls]
        for url, text in zip(parsed, urls, strict=True):
            if url.scheme not in ("http", "https") or not url.host:
                raise ValueError(f"a service URL must be http:// or https://host[:port]: {text!r}")
        if len({u.path for u in parsed}) > 1:
            raise ValueError("every --service URL must have the same path (replicas of one service)")
        self.urls = parsed
        self._inner = [httpx.HTTPTransport() for _ in parsed]
        self._current = 0
        self._lock = threading.Lock()

    @property
    def current(self) -> str:
        """The replica requests go to now."""
        return str(self.urls[self._current])

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            start = self._current
        last: Exception | None = None
        for step in range(len(self.urls)):
            k = (start + step) % len(self.urls)
            target = self.urls[k]
            request.url = request.url.copy_with(scheme=target.scheme, host=target.host, port=target.port)
            request.headers["Host"] = target.netloc.decode("ascii")
            try:
                response = self._inner[k].handle_request(request)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last = exc
                continue
            if k != start:
                with self._lock:
                    self._current = k
                log.warning("service %s did not answer; now using %s", self.urls[start], target)
            return response
        assert last is not None
        raise last

    def close(self) -> None:
        for inner in self._inner:
            inner.close()


def service_client(
    transport: FailoverTransport, key: str, *, timeout_s: float = 10.0, raise_5xx: bool = False
) -> httpx.Client:
    """An HTTP client for the service (through the fail-over `transport`) with `key`. With `raise_5xx`, a
    5xx answer raises `ServiceDownError` (for code that would take it for a refusal: the demo croupier)."""

    def check(response: httpx.Response) -> None:
        if response.status_code >= 500:
            raise ServiceDownError(f"{response.request.url}: HTTP {response.status_code}")

    return httpx.Client(
        base_url=str(transport.urls[0]),
        transport=transport,
        headers={"Authorization": f"Bearer {key}"},
        timeout=httpx.Timeout(timeout_s, connect=min(2.0, timeout_s)),
        event_hooks={"response": [check]} if raise_5xx else None,
    )


# ----------------------------------------------------------------------------------------------- spool
@dataclass(frozen=True)
class Outgoing:
    """One request a table worker sends (or one step of the demo croupier: kind `croupier`, path = clip)."""

    kind: str  # evidence, read, roll, alert, croupier
    table_id: str
    method: str
    path: str
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    epoch: int | None = None  # the lease epoch it was made under
    seq: int | None = None  # its place in the spool (None: not spooled)

    @classmethod
    def json(cls, kind: str, table_id: str, method: str, path: str, body: Any, **kw: Any) -> Outgoing:
        """A JSON request."""
        return cls(kind, table_id, method, path, json.dumps(body, separators=(",", ":")).encode(), **kw)

    def describe(self) -> str:
        """A short name for logs."""
        return f"{self.kind} {self.method} {self.path}"


_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT NOT NULL, table_id TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL,
    body BLOB NOT NULL, content_type TEXT NOT NULL, headers TEXT NOT NULL, epoch INTEGER,
    spooled_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS outbox_by_table ON outbox (table_id, seq);
CREATE TABLE IF NOT EXISTS dead_letters (
    seq INTEGER PRIMARY KEY,
    kind TEXT NOT NULL, table_id TEXT NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL,
    body BLOB NOT NULL, content_type TEXT NOT NULL, headers TEXT NOT NULL, epoch INTEGER,
    status INTEGER NOT NULL, detail TEXT NOT NULL, refused_at TEXT NOT NULL
);
"""
_COLUMNS = "kind, table_id, method, path, body, content_type, headers, epoch"


class Spool:
    """A worker's local ordered spool: a stdlib sqlite3 file (`<folder>/spool.sqlite3`, WAL, synchronous
    FULL: what was spooled survives a crash of the worker) with the requests waiting for the service, in
    order, and the dead letters (requests the service refused on replay, kept for a person).

    One process at a time: the folder's `worker.lock` is held (flock) while the spool is open.
    """

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self._lock_file = (folder / "worker.lock").open("w")
        try:
            fcntl.flock(self._lock_file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            self._lock_file.close()
            raise SpoolBusyError(
                f"{folder}: another worker uses this spool (give each worker its own --worker-id/--spool)"
            ) from exc
        self.path = folder / "spool.sqlite3"
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        self._db.executescript(_SCHEMA)
        self._lock = threading.Lock()

    def close(self) -> None:
        """Close the file and let go of the lock."""
        with self._lock:
            self._db.close()
        fcntl.flock(self._lock_file, fcntl.LOCK_UN)
        self._lock_file.close()

    @staticmethod
    def _values(item: Outgoing) -> tuple[Any, ...]:
        return (
            item.kind,
            item.table_id,
            item.method,
            item.path,
            item.body,
            item.content_type,
            json.dumps(item.headers),
            item.epoch,
        )

    def push(self, item: Outgoing) -> int:
        """Append `item`; its place."""
        with self._lock:
            cursor = self._db.execute(
                f"INSERT INTO outbox ({_COLUMNS}, spooled_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (*self._values(item), now_iso()),
            )
            seq = cursor.lastrowid
        assert seq is not None
        return seq

    def head(self, table_id: str | None = None) -> Outgoing | None:
        """The oldest waiting request (of `table_id`; None: nothing waits)."""
        where, args = ("", ()) if table_id is None else (" WHERE table_id = ?", (table_id,))
        with self._lock:
            row = self._db.execute(
                f"SELECT seq, {_COLUMNS} FROM outbox{where} ORDER BY seq LIMIT 1", args
            ).fetchone()
        if row is None:
            return None
        seq, kind, table_id, method, path, body, content_type, headers, epoch = row
        return Outgoing(
            kind, table_id, method, path, bytes(body), content_type, json.loads(headers), epoch, seq
        )

    def remove(self, seq: int) -> None:
        """Drop a delivered request."""
        with self._lock:
            self._db.execute("DELETE FROM outbox WHERE seq = ?", (seq,))

    def bury(self, item: Outgoing, status: int, detail: str) -> None:
        """Keep a refused request as a dead letter (out of the spool if it was there), in one transaction."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                if item.seq is not None:
                    self._db.execute("DELETE FROM outbox WHERE seq = ?", (item.seq,))
                self._db.execute(
                    f"INSERT INTO dead_letters ({_COLUMNS}, status, detail, refused_at) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*self._values(item), status, detail[:2000], now_iso()),
                )
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def depth(self, table_id: str | None = None) -> int:
        """How many requests wait (of `table_id`)."""
        where, args = ("", ()) if table_id is None else (" WHERE table_id = ?", (table_id,))
        with self._lock:
            (n,) = self._db.execute(f"SELECT count(*) FROM outbox{where}", args).fetchone()
        return int(n)

    def tables(self) -> list[str]:
        """The tables with requests waiting."""
        with self._lock:
            return [t for (t,) in self._db.execute("SELECT DISTINCT table_id FROM outbox ORDER BY table_id")]

    def dead_letters(self, limit: int = 20) -> tuple[int, list[dict[str, Any]]]:
        """How many dead letters there are, and the last `limit` of them (newest first)."""
        with self._lock:
            (n,) = self._db.execute("SELECT count(*) FROM dead_letters").fetchone()
            rows = self._db.execute(
                "SELECT kind, table_id, method, path, body, epoch, status, detail, refused_at "
                "FROM dead_letters ORDER BY seq DESC LIMIT ?",
                (limit,),
            ).fetchall()
        out = []
        for kind, table_id, method, path, body, epoch, status, detail, refused_at in rows:
            letter: dict[str, Any] = {
                "kind": kind,
                "table_id": table_id,
                "request": f"{method} {path}",
                "epoch": epoch,
                "status": status,
                "detail": detail,
                "refused_at": refused_at,
            }
            if kind == "roll":
                letter["roll_id"] = json.loads(bytes(body)).get("roll_id")
            out.append(letter)
        return int(n), out


# ---------------------------------------------------------------------------------------------- outbox
def _detail(response: httpx.Response) -> str:
    try:
        detail = response.json().get("detail")
    except (ValueError, AttributeError):
        return response.text[:500]
    return detail if isinstance(detail, str) else json.dumps(detail)[:500]


def is_superseded(response: httpx.Response) -> bool:
    """A roll refused because another worker holds the table's lease now (contract: 409 lease_superseded)."""
    return response.status_code == 409 and SUPERSEDED in response.text


class Outbox:
    """Every request of a worker's loops, in order per table (see the module docstring).

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
        detail = _detail(response)
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
                    f"({response.status_code}): {_detail(response)}",
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


# ------------------------------------------------------------------------------ the loop's remote doors
@dataclass
class WorkerRules:
    """The rules engine's door for a worker's loop (`api.live.RulesDoor`): through the outbox, each roll
    with the table's lease epoch. A spooled roll answers `{"spooled": true}` (the loop follows no round
    from it)."""

    outbox: Outbox
    lease: TableLease

    def upload_evidence(self, data: bytes, *, media_type: str = "image/jpeg") -> str:
        """Upload an evidence frame (now or spooled); its SHA-256."""
        item = Outgoing("evidence", self.lease.table_id, "POST", "/v1/evidence", data, media_type)
        response = self.outbox.submit(item)
        if response is not None and response.status_code >= 400:
            raise RollRejectedError(response.status_code, _detail(response))
        return hashlib.sha256(data).hexdigest()

    def post_roll(self, table_id: str, submission: RollSubmission) -> dict[str, Any]:
        """Post a roll (now or spooled)."""
        epoch = self.lease.epoch
        item = Outgoing.json(
            "roll",
            table_id,
            "POST",
            f"/v1/tables/{table_id}/rolls",
            submission.wire(),
            headers={EPOCH_HEADER: str(epoch), WORKER_HEADER: self.lease.worker_id},
            epoch=epoch,
        )
        response = self.outbox.submit(item)
        if response is None:
            return {"spooled": True, "roll_id": submission.roll_id}
        if response.status_code >= 400:
            if is_superseded(response):
                self.outbox.refused(item, response)
            raise RollRejectedError(response.status_code, _detail(response))
        self.outbox.note_roll(item, response, replayed=False)
        answer: dict[str, Any] = response.json()
        return answer

    def close(self) -> None:
        """Nothing to close: the worker owns the connections."""


@dataclass
class RemoteRecorder:
    """Where a worker's loop keeps reads, evidence and alerts (`api.live.LiveRecorder`): the service's
    POST /v1/evidence, PUT /v1/reads/{id} and POST /v1/alerts, through the outbox. The read id is made
    here, and the evidence frame's SHA-256 computed here, so nothing waits for an answer."""

    outbox: Outbox

    def _send(self, item: Outgoing) -> bool:
        response = self.outbox.submit(item)
        if response is not None and response.status_code >= 400:
            self.outbox.refused(item, response)
            return False
        return True

    def store_read(
        self, *, table_id: str, frame: CapturedFrame, roll: Any, extra: dict[str, Any]
    ) -> StoredRead:
        """Upload the annotated frame and the read (now or spooled)."""
        jpeg = evidence_jpeg(frame, roll)
        sha256 = None
        if jpeg is not None:
            evidence = Outgoing("evidence", table_id, "POST", "/v1/evidence", jpeg, "image/jpeg")
            if self._send(evidence):
                sha256 = hashlib.sha256(jpeg).hexdigest()
        read_id = uuid.uuid4().hex
        body = {
            "table_id": table_id,
            "document": live_read_document(frame, roll, extra),
            "evidence_sha256": sha256,
        }
        self._send(Outgoing.json("read", table_id, "PUT", f"/v1/reads/{read_id}", body))
        return StoredRead(read_id=read_id, evidence_sha256=sha256, evidence_jpeg=jpeg)

    def alert(self, *, table_id: str, kind: str, message: str, data: dict[str, Any]) -> None:
        """Raise an alert at the service (now or spooled)."""
        self._send(alert_request(table_id, kind, message, data))


# --------------------------------------------------------------------------------------------- a table
@dataclass
class TableLease:
    """What a worker knows of one table's lease."""

    table_id: str
    worker_id: str
    state: str = "waiting"  # waiting (not held), leased, lost (held, then refused: tried again), released
    epoch: int | None = None
    expires_at: str | None = None
    ttl_s: float = 5.0
    holder: str | None = None  # who holds it, when this worker waits for it
    renewed_at: float | None = None  # monotonic time of the last renewal the service answered
    acquired: int = 0  # how many times this worker took it

    @property
    def held(self) -> bool:
        """This worker holds the lease (as far as it knows)."""
        return self.state == "leased"


class _Stamped:
    """A capture that notes when each frame came (for /healthz); stops like the capture it wraps."""

    def __init__(self, inner: Iterable[CapturedFrame | CaptureEvent], note: Callable[[], None]) -> None:
        self.inner = inner
        self.note = note

    def __iter__(self) -> Iterator[CapturedFrame | CaptureEvent]:
        for item in self.inner:
            if isinstance(item, CapturedFrame):
                self.note()
            yield item

    def stop(self) -> None:
        stopper = getattr(self.inner, "stop", None)
        if callable(stopper):
            stopper()


class TableRunner:
    """One table of a worker: lease, live-config, loop, renewal (a thread; see the module docstring)."""

    def __init__(self, worker: Worker, table_id: str) -> None:
        self.worker = worker
        self.lease = TableLease(table_id=table_id, worker_id=worker.worker_id)
        self.loop: LiveLoop | None = None
        self.last_frame_at: str | None = None
        self.throws_read = 0
        self.lease_taken_at: str | None = None
        self.wanted_since = time.monotonic()  # since when this worker has wanted the table (not holding it)
        self.retry_at = 0.0  # after a loop that could not start: not before then
        self._draining = False  # the worker is stopping: no new lease, no loop
        self._unanswered = 0  # renewals in a row that got no answer
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"worker-{table_id}", daemon=True)

    @property
    def table_id(self) -> str:
        return self.lease.table_id

    def start(self) -> None:
        self._thread.start()

    def pause(self) -> None:
        """Stop the loop and take no lease any more; a lease held is still renewed (while the spool is
        replayed on the way out, so its rolls are not refused as another worker's)."""
        with self.worker.taking:  # not while a take is under way: that loop would start after this
            self._draining = True
        self._stop_loop()

    def stop(self) -> None:
        """Stop the loop and the lease thread (the lease is released by `Worker.stop`)."""
        self._draining = True
        self._stop.set()
        self._thread.join(15)
        self._stop_loop()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                if self.loop is not None and not self.lease.held:  # lost: stop it (if not stopped yet)
                    self._stop_loop()
                if self.lease.held and (self.loop is not None or self._draining):
                    if self._stop.wait(max(0.2, self.lease.ttl_s / 3.0)):
                        break
                    if not self._draining and not self._loop_alive():
                        log.error("table %s: the live loop ended; its lease is released", self.table_id)
                        self._stop_loop()
                        self.release()
                        self._not_holding("waiting")
                        self._stop.wait(LOOP_RESTART_S)
                        continue
                    self._renew()
                elif self._draining or not self._take():
                    self._stop.wait(LEASE_RETRY_S)
            except Exception:  # the table's thread must not die: log, wait, go on
                log.exception("table %s: lease thread error", self.table_id)
                self._stop.wait(LEASE_RETRY_S)

    def _loop_alive(self) -> bool:
        loop = self.loop
        thread = getattr(loop, "_thread", None)
        return loop is not None and thread is not None and thread.is_alive()

    def _lease_call(self) -> httpx.Response | None:
        try:
            return self.worker.control.post(
                f"/v1/tables/{self.table_id}/lease", json={"worker_id": self.worker.worker_id}
            )
        except httpx.TransportError as exc:
            log.debug("table %s: lease request not answered (%s)", self.table_id, exc)
            return None

    def _note_lease(self, doc: dict[str, Any]) -> None:
        self.lease.epoch = int(doc["epoch"])
        self.lease.expires_at = str(doc.get("expires_at"))
        self.lease.ttl_s = float(doc.get("ttl_s") or self.lease.ttl_s)
        self.lease.renewed_at = time.monotonic()
        self.lease.holder = self.worker.worker_id

    def _take(self) -> bool:
        with self.worker.taking:  # one table at a time, so each sees how many this worker holds
            held = sum(r.lease.held for r in self.worker.runners.values())
            now = time.monotonic()
            if self._draining or now < self.retry_at or now - self.wanted_since < held * TAKE_STAGGER_S:
                return False
            return self._take_now()

    def _take_now(self) -> bool:
        response = self._lease_call()
        if response is None or response.status_code >= 500:
            return False
        if response.status_code == 409:
            try:
                self.lease.holder = response.json().get("holder")
            except ValueError:
                self.lease.holder = None
            return False
        if response.status_code != 200:
            log.error(
                "table %s: lease refused (%d): %s; asking again in %.0f s",
                self.table_id,
                response.status_code,
                _detail(response),
                LEASE_REFUSED_RETRY_S,
            )
            self.retry_at = time.monotonic() + LEASE_REFUSED_RETRY_S
            return False
        with self._lock:
            self._note_lease(response.json())
            self.lease.state = "leased"
            self.lease.acquired += 1
            self.lease_taken_at = now_iso()
        log.info("table %s: lease taken (epoch %s)", self.table_id, self.lease.epoch)
        try:
            loop = self.worker.build_loop(self)
        except Exception as exc:
            log.exception("table %s: the live loop could not start", self.table_id)
            self.worker.recorder.alert(
                table_id=self.table_id,
                kind="live_loop_stopped",
                message=f"the live loop could not start at worker {self.worker.worker_id}: {exc}",
                data={"error": str(exc), "worker_id": self.worker.worker_id},
            )
            self.release()
            self._not_holding("waiting")
            self.retry_at = time.monotonic() + LOOP_RESTART_S
            return False
        loop.items = _Stamped(loop.items, self._frame_seen)
        self.loop = loop
        loop.start()
        return True

    def _frame_seen(self) -> None:
        self.last_frame_at = now_iso()

    def _renew(self) -> None:
        response = self._lease_call()
        if response is None or response.status_code >= 500:
            age = 0.0 if self.lease.renewed_at is None else time.monotonic() - self.lease.renewed_at
            self._unanswered += 1
            if self._unanswered == 1 or self._unanswered % 10 == 0:  # not a line every TTL/3
                log.warning(
                    "table %s: lease not renewed (no answer for %.1f s); the loop goes on, spooling",
                    self.table_id,
                    age,
                )
            return
        if response.status_code == 200:
            doc = response.json()
            if self._unanswered:
                log.warning(
                    "table %s: lease renewed after %d renewals got no answer", self.table_id, self._unanswered
                )
                self._unanswered = 0
            with self._lock:
                if int(doc["epoch"]) != self.lease.epoch:
                    log.warning(
                        "table %s: lease renewed under epoch %s (was %s)",
                        self.table_id,
                        doc["epoch"],
                        self.lease.epoch,
                    )
                self._note_lease(doc)
            return
        self.lost(f"renewal refused ({response.status_code}): {_detail(response)}")

    def lost(self, why: str, epoch: int | None = None) -> None:
        """Another worker holds the table: stop its loop at once (from any thread)."""
        with self._lock:
            if epoch is not None and epoch != self.lease.epoch:
                return  # a roll of an older lease was refused: the loop running now is not concerned
            if self.lease.state != "leased":
                return
            self._not_holding("lost")
        log.error("table %s: lease lost (%s); its loop is stopped", self.table_id, why)
        threading.Thread(target=self._stop_loop, name=f"stop-{self.table_id}", daemon=True).start()

    def _not_holding(self, state: str) -> None:
        self.lease.state = state
        self.wanted_since = time.monotonic()

    def _stop_loop(self) -> None:
        with self._lock:
            loop, self.loop = self.loop, None
        if loop is not None:
            loop.stop()

    def release(self) -> None:
        """Give the lease back (DELETE): the service raises no `worker_lost` for it."""
        try:
            response = self.worker.control.delete(
                f"/v1/tables/{self.table_id}/lease", params={"worker_id": self.worker.worker_id}
            )
        except httpx.TransportError as exc:
            log.warning("table %s: lease not released (%s); it expires by itself", self.table_id, exc)
            return
        if response.status_code >= 400:
            log.warning("table %s: lease release answered %d", self.table_id, response.status_code)
        else:
            log.info("table %s: lease released", self.table_id)

    def health(self) -> dict[str, Any]:
        loop = self.loop
        return {
            "state": self.lease.state,
            "epoch": self.lease.epoch,
            "lease_expires_at": self.lease.expires_at,
            "lease_taken_at": self.lease_taken_at,
            "times_taken": self.lease.acquired,
            "holder": self.lease.holder,
            "running": self._loop_alive(),
            "last_frame_at": self.last_frame_at,
            "frames": None if loop is None else loop.frames,
            "throws_read": self.throws_read,
            "last_roll": self.worker.outbox.last_roll.get(self.table_id),
        }


# ---------------------------------------------------------------------------------------------- worker
class Worker:
    """A table worker: its tables, its outbox and spool, its reader (see the module docstring).

    Args:
        services: the service's URL (several: replicas, tried in turn).
        key: a worker-role key.
        tables: the tables to watch (each while this worker holds its lease).
        worker_id: this worker's name at the service (leases, fencing headers).
        spool_dir: the spool's folder.
        croupier_key: a dealer key: demo-clip tables also play the demo croupier.
        reader: the loaded reader (default: `vision.reader.Reader`, loaded at `start`).
        demo_clips_dir: the throw clips `<demo clips>` tables play.
    """

    def __init__(
        self,
        *,
        services: Sequence[str],
        key: str,
        tables: Sequence[str],
        worker_id: str,
        spool_dir: Path,
        croupier_key: str | None = None,
        reader: Any = None,
        demo_clips_dir: Path = DEMO_CLIPS,
    ) -> None:
        if not WORKER_ID.match(worker_id):
            raise ValueError(f"worker id must be 1-100 of [A-Za-z0-9._:-]: {worker_id!r}")
        if not tables:
            raise ValueError("at least one --table is needed")
        self.worker_id = worker_id
        self.services = list(services)
        self.transport = FailoverTransport(services)  # one for all: a fail-over is learned once
        self.control = service_client(self.transport, key, timeout_s=5.0)
        self.spool = Spool(spool_dir)
        self.outbox = Outbox(
            service_client(self.transport, key, timeout_s=10.0),
            self.spool,
            holds=self._holds,
            on_superseded=self._superseded,
        )
        self.recorder = RemoteRecorder(self.outbox)
        self.croupier_client = (
            None if croupier_key is None else service_client(self.transport, croupier_key, raise_5xx=True)
        )
        self.reader = reader
        self.demo_clips_dir = demo_clips_dir
        self.started_at = now_iso()
        self.taking = threading.Lock()
        self.runners = {t: TableRunner(self, t) for t in dict.fromkeys(tables)}

    def _holds(self, table_id: str, epoch: int | None) -> bool:
        runner = self.runners.get(table_id)
        return runner is not None and runner.lease.held and runner.lease.epoch == epoch

    def _superseded(self, table_id: str, epoch: int | None) -> None:
        runner = self.runners.get(table_id)
        if runner is not None:
            runner.lost("a roll was refused: lease_superseded", epoch)

    def start(self) -> None:
        """Load the reader, start the courier (replaying a spool left by an earlier run) and the tables."""
        if self.reader is None:
            from vision.reader import Reader

            self.reader = Reader(threads=1)
        self.outbox.start()
        for runner in self.runners.values():
            runner.start()

    def stop(self, *, drain_s: float = 10.0) -> None:
        """Stop every loop, try `drain_s` seconds to empty the spool (the leases still renewed), release
        the leases, close."""
        for runner in self.runners.values():
            runner.pause()
        self.outbox.stop(drain_s=drain_s)
        for runner in self.runners.values():
            runner.stop()
        for runner in self.runners.values():
            if runner.lease.held:
                runner.release()
                runner.lease.state = "released"
        self.control.close()
        self.outbox.client.close()
        if self.croupier_client is not None:
            self.croupier_client.close()
        self.spool.close()

    def build_loop(self, runner: TableRunner) -> LiveLoop:
        """The table's live loop from its live-config (the lease is held)."""
        table_id = runner.table_id
        response = self.control.get(f"/v1/tables/{table_id}/live-config")
        if response.status_code != 200:
            raise WorkerError(f"live-config of table {table_id}: {response.status_code} {_detail(response)}")
        cfg = response.json()
        if cfg.get("lease_ttl_s"):
            runner.lease.ttl_s = float(cfg["lease_ttl_s"])
        expected = int(cfg.get("dice") or (10 if cfg.get("game") == "hrd10" else 6))
        source = cfg.get("camera_source")
        if not source:
            raise WorkerError(f"table {table_id} has no camera_source")
        rules = WorkerRules(self.outbox, runner.lease)
        reader = self._reader_for(table_id, cfg.get("enrollment"))

        def on_read(read: LiveRead) -> None:
            runner.throws_read += 1
            log.info(
                "table %s: %s %s %s faces=%s%s",
                table_id,
                read.roll_id,
                read.kind,
                read.verdict,
                list(read.faces),
                f" ({read.error})"
                if read.error
                else (" (spooled)" if (read.answer or {}).get("spooled") else ""),
            )

        if source == DEMO_SOURCE:
            on_clip: Callable[[str], bool | None] | None = None
            if self.croupier_client is not None:
                self.outbox.croupiers[table_id] = DemoCroupier(
                    self.croupier_client, table_id=table_id
                ).prepare

                def on_clip(clip: str) -> bool:
                    return self.outbox.run_croupier(table_id, clip, runner.lease.epoch)

            else:
                log.warning(
                    "table %s plays the demo clips with no croupier (no --croupier-key-file)", table_id
                )
            return demo_loop(
                config=LiveConfig(table_id=table_id, expected_dice=expected),
                clips_dir=self.demo_clips_dir,
                reader=reader,
                rules=rules,
                recorder=self.recorder,
                on_clip=on_clip or (lambda clip: None),
                on_read=on_read,
            )
        geometry, calibration_id = self._geometry(table_id, cfg.get("calibration"), reader)
        return camera_loop(
            config=LiveConfig(table_id=table_id, expected_dice=expected, calibration_id=calibration_id),
            source=str(source),
            geometry=geometry,
            reader=reader,
            rules=rules,
            recorder=self.recorder,
            on_read=on_read,
        )

    def _reader_for(self, table_id: str, enrollment: Any) -> Any:
        """The reader, through the table's enrollment when it has one (written to the spool folder and
        loaded, checksum checked, as the service loads its own)."""
        if not enrollment:
            return self.reader
        from vision.pips.enrolled import enrollment_path, load_enrollment

        folder = self.spool.folder / "tables"
        path = enrollment_path(folder, table_id)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(enrollment), encoding="utf-8")
        loaded = load_enrollment(folder, table_id)
        return self.reader if loaded is None else self.reader.enrolled(loaded)

    def _geometry(self, table_id: str, calibration: Any, reader: Any) -> tuple[Any, str | None]:
        """The table's geometry and calibration id from its calibration document (None: uncalibrated)."""
        if not calibration:
            return None, None
        from calibration.store import load_table_file, table_path
        from calibration.table import TableCalibration, stale_marks_message
        from vision.table.geometry import TableGeometry

        if "body" in calibration:  # the stored file itself: checked against its checksum
            path = table_path(self.spool.folder / "tables", table_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(calibration), encoding="utf-8")
            cal = load_table_file(path, table_id=table_id)
        else:
            cal = TableCalibration.from_dict(calibration)
        if stale := stale_marks_message(cal, getattr(reader, "models", {}).get("detector")):
            self.recorder.alert(
                table_id=table_id,
                kind="calibration_stale",
                message=stale,
                data={"calibration_id": cal.calibration_id},
            )
        return TableGeometry.from_calibration(cal), cal.calibration_id

    def health(self) -> dict[str, Any]:
        """What /healthz answers."""
        dead, letters = self.spool.dead_letters()
        return {
            "worker_id": self.worker_id,
            "started_at": self.started_at,
            "service": self.transport.current,
            "services": self.services,
            "service_answering": not self.outbox.down,
            "tables": {t: r.health() for t, r in self.runners.items()},
            "spool": {
                "path": str(self.spool.path),
                "depth": self.spool.depth(),
                "replayed": self.outbox.replayed,
                "last_outage": self.outbox.last_outage,
            },
            "dead_letters": dead,
            "last_dead_letters": letters,
        }


# ----------------------------------------------------------------------------------------------- healthz
def serve_health(worker: Worker, host: str, port: int) -> ThreadingHTTPServer:
    """`GET /healthz` (the worker's `health()` as JSON) on `host:port`, in a daemon thread.

    The stdlib's http.server, not uvicorn: one read-only JSON route needs no ASGI app nor event loop, and
    uvicorn would take over SIGTERM, which the worker handles itself to release its leases cleanly.
    """

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.split("?")[0] != "/healthz":
                self.send_error(404)
                return
            body = json.dumps(worker.health()).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("healthz: " + format, *args)

    server = ThreadingHTTPServer((host, port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="worker-healthz", daemon=True).start()
    return server
