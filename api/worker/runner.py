"""One table of a worker: lease, live-config, loop, renewal, in a thread."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

from api.live import LiveLoop
from api.worker.outbox import response_detail
from api.worker.protocol import now_iso
from vision.capture import CapturedFrame, CaptureEvent

if TYPE_CHECKING:  # the worker owns its runners; a runner only reads its worker's parts
    from api.worker.worker import Worker

log = logging.getLogger("throwbox.worker")


LEASE_RETRY_S = 1.0  # how often a worker asks for a table it does not hold
LOOP_RESTART_S = 5.0  # after a table's loop ended or could not start, before the worker tries it again
# After the service refuses a lease outright (401, 403, 404: a revoked key, a key bound to another worker id,
# a table not made yet), before the worker asks again: an admin can mend it, but it will not mend in a second.
LEASE_REFUSED_RETRY_S = 30.0
# A worker takes a free table at once while it holds none, and only after wanting it this much longer for
# each table it holds already: workers started together spread the tables between them (no worker knows
# of the others), while an orphaned table, wanted all along, is taken as soon as its lease expires.
TAKE_STAGGER_S = 2.0


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
    """One table of a worker: lease, live-config, loop, renewal (a thread; see the package docstring)."""

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
                    if self.lease.held and not self._draining:
                        self.worker.refresh_enrollment(self.table_id)  # a refit stored at the service
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
                response_detail(response),
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
        self.lost(f"renewal refused ({response.status_code}): {response_detail(response)}")

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
