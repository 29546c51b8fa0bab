"""Table leases (issue 50): which table worker watches a table, safe across every service replica.

One `table_leases` row per table. `take_lease` grants, renews (the worker's heartbeat) or takes over a lease
under the row's lock (`SELECT ... FOR UPDATE` on PostgreSQL; on SQLite every writer holds the database's
write lock, `BEGIN IMMEDIATE`), so two workers asking at once, through one replica or two, are ordered and
exactly one gets it. A first insert races on the primary key instead: the loser's transaction fails and is
tried once more, when it finds the winner's row.

- free, expired or released, or already this worker's: granted, `expires_at` = now + the TTL. The `epoch`
  grows by one when another worker takes the table over; the holder renewing or re-taking its own lease
  (nobody took it in between) keeps it.
- held by another worker, unexpired: refused (`LeaseHeldError`).

Fencing: a worker sends its epoch with each roll; `fence_refusal` (called by `api.rounds.submit_roll`, in
the roll's transaction, with the lease row share-locked so a takeover waits for the roll or the roll for the
takeover) refuses a roll whose epoch is below the table's when the lease is now another worker's.

`worker_lost`: a lease that expires without a release raises one alert, whichever replica sees it first:
the alert and the mark (`lost_at`) are written in one transaction, by a conditional UPDATE that only one
transaction can win. `WorkerMonitor` (a thread in every `throwbox serve`) looks every
`THROWBOX_WORKER_CHECK_S`; a takeover or a re-take of a lost lease the monitor has not seen yet raises it
itself, so no lost lease goes unsaid.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api import audit
from api.alerts import raise_alert
from api.db.models import GameTable, TableLease
from api.db.session import Database
from api.metrics import Metrics

log = logging.getLogger("throwbox.leases")

WORKER_ID_PATTERN = r"^[A-Za-z0-9._:-]{1,100}$"
LOST_ALERT_KIND = "worker_lost"
MONITOR_ACTOR = "system:worker-monitor"


class LeaseError(Exception):
    """Base class of the lease errors."""


class UnknownTableError(LeaseError):
    """No such table."""


class LeaseHeldError(LeaseError):
    """Another worker holds the table's lease, unexpired."""

    def __init__(self, table_id: str, holder: str, expires_at: datetime) -> None:
        self.holder = holder
        self.expires_at = expires_at
        super().__init__(
            f"table {table_id!r} is leased to worker {holder!r} until {expires_at.isoformat()}; "
            "try again after it expires"
        )


@dataclass(frozen=True)
class Lease:
    """A granted lease."""

    table_id: str
    worker_id: str
    epoch: int
    expires_at: datetime
    ttl_s: float


def utcnow() -> datetime:
    """Now, in UTC."""
    return datetime.now(UTC)


def _locked(session: Session, table_id: str, *, share: bool = False) -> TableLease | None:
    return session.scalars(
        select(TableLease)
        .where(TableLease.table_id == table_id)
        .with_for_update(read=share)
        .execution_options(populate_existing=True)
    ).first()


def _held(row: TableLease, now: datetime) -> bool:
    return row.released_at is None and row.expires_at > now


def _raise_lost(
    session: Session, row: TableLease, *, now: datetime, webhook_urls: list[str], metrics: Metrics
) -> None:
    """Mark the lease lost and raise its `worker_lost` alert, in `session` (its row already locked)."""
    row.lost_at = now
    raise_alert(
        session,
        kind=LOST_ALERT_KIND,
        message=(
            f"table worker {row.worker_id!r} stopped renewing its lease of table {row.table_id!r} "
            f"(epoch {row.epoch}); last heartbeat {row.heartbeat_at.isoformat()}"
        ),
        actor=MONITOR_ACTOR,
        table_id=row.table_id,
        round_id=None,
        data={
            "table_id": row.table_id,
            "worker_id": row.worker_id,
            "epoch": row.epoch,
            "last_heartbeat": row.heartbeat_at.isoformat(),
            "expired_at": row.expires_at.isoformat(),
        },
        webhook_urls=webhook_urls,
        metrics=metrics,
    )


def take_lease(
    database: Database,
    *,
    table_id: str,
    worker_id: str,
    ttl_s: float,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> Lease:
    """Grant, renew or take over the table's lease for `worker_id` (see the module docstring).

    Raises:
        UnknownTableError: no such table.
        LeaseHeldError: another worker holds it, unexpired.
    """
    for attempt in (1, 2):
        try:
            return _take(
                database,
                table_id=table_id,
                worker_id=worker_id,
                ttl_s=ttl_s,
                actor=actor,
                webhook_urls=webhook_urls,
                metrics=metrics,
            )
        except IntegrityError:  # two first takes at once (PostgreSQL): the other inserted the row
            if attempt == 2:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def _take(
    database: Database,
    *,
    table_id: str,
    worker_id: str,
    ttl_s: float,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> Lease:
    with database.session() as session:
        # The table row first (FOR KEY SHARE on PostgreSQL), as opening a round locks it before the audit
        # head: a takeover of a lost lease writes the audit (its alert) and then the lease row, whose foreign
        # key check share-locks the table row; taken in the other order, the two deadlocked under load
        # (`throwbox lab loadtest --replicas 2 --workers 4`; tests/api/test_lease_lock_order.py).
        if session.get(GameTable, table_id, with_for_update={"key_share": True}) is None:
            raise UnknownTableError(f"no table {table_id!r}")
        row = _locked(session, table_id)
        now = utcnow()
        expires = now + timedelta(seconds=ttl_s)
        previous: dict[str, Any] | None = None
        if row is None:
            row = TableLease(
                table_id=table_id,
                worker_id=worker_id,
                epoch=1,
                acquired_at=now,
                heartbeat_at=now,
                expires_at=expires,
            )
            session.add(row)
            session.flush()  # a concurrent first take fails here (primary key), and is tried again
            taken = True
        else:
            if row.worker_id != worker_id and _held(row, now):
                raise LeaseHeldError(table_id, row.worker_id, row.expires_at)
            if row.released_at is None and row.expires_at <= now and row.lost_at is None:
                # Lost, and no monitor has said so yet: say it now, before the lease changes hands.
                _raise_lost(session, row, now=now, webhook_urls=webhook_urls, metrics=metrics)
            taken = row.worker_id != worker_id or not _held(row, now)
            if row.worker_id != worker_id:
                previous = {"worker_id": row.worker_id, "epoch": row.epoch}
                row.worker_id = worker_id
                row.epoch += 1
            if taken:
                row.acquired_at = now
                row.lost_at = None
            row.released_at = None
            row.heartbeat_at = now
            row.expires_at = expires
        if taken:  # a grant or a takeover is audited; a renewal (the heartbeat) is not
            audit.append(
                session,
                actor=actor,
                action="lease.take",
                subject=f"table:{table_id}",
                payload={"worker_id": worker_id, "epoch": row.epoch, "ttl_s": ttl_s, "previous": previous},
            )
        return Lease(table_id=table_id, worker_id=worker_id, epoch=row.epoch, expires_at=expires, ttl_s=ttl_s)


def release_lease(database: Database, *, table_id: str, worker_id: str, actor: str) -> bool:
    """Release the table's lease if `worker_id` holds it (a clean stop: no `worker_lost`); False when it
    held none there (nothing to release: another worker's lease is never touched).

    Raises:
        UnknownTableError: no such table.
    """
    with database.session() as session:
        if session.get(GameTable, table_id) is None:
            raise UnknownTableError(f"no table {table_id!r}")
        row = _locked(session, table_id)
        if row is None or row.worker_id != worker_id or row.released_at is not None:
            return False
        now = utcnow()
        row.released_at = now
        audit.append(
            session,
            actor=actor,
            action="lease.release",
            subject=f"table:{table_id}",
            payload={"worker_id": worker_id, "epoch": row.epoch},
        )
        return True


def fence_refusal(session: Session, *, table_id: str, epoch: int, worker_id: str | None) -> str | None:
    """Why a worker's roll sent under lease `epoch` must be refused, or None when it may be applied.

    Refused when the table's lease has a higher epoch and is held by another worker (or the roll names no
    worker): that worker was superseded. The lease row is share-locked (PostgreSQL) until the roll's
    transaction ends, so a takeover cannot slip between this look and the roll's commit.
    """
    row = _locked(session, table_id, share=True)
    if row is None or epoch >= row.epoch or (worker_id is not None and worker_id == row.worker_id):
        return None
    return (
        f"lease_superseded: table {table_id!r} is now leased to worker {row.worker_id!r} at epoch "
        f"{row.epoch}; this roll was sent under epoch {epoch}"
    )


def raise_lost_workers(database: Database, *, webhook_urls: list[str], metrics: Metrics) -> int:
    """Raise `worker_lost` for every lease that expired without a release and was not yet said lost.

    Each is marked by a conditional UPDATE in the alert's own transaction: of several replicas looking at
    once, exactly one marks it and raises the alert. Returns how many this call raised.
    """
    now = utcnow()
    with database.read_session() as session:
        candidates = session.execute(
            select(TableLease.table_id, TableLease.worker_id, TableLease.epoch).where(
                TableLease.released_at.is_(None), TableLease.lost_at.is_(None), TableLease.expires_at <= now
            )
        ).all()
    raised = 0
    for table_id, worker_id, epoch in candidates:
        with database.session() as session:
            marked = session.execute(
                update(TableLease)
                .where(
                    TableLease.table_id == table_id,
                    TableLease.worker_id == worker_id,
                    TableLease.epoch == epoch,
                    TableLease.released_at.is_(None),
                    TableLease.lost_at.is_(None),
                    TableLease.expires_at <= now,
                )
                .values(lost_at=now)
                .execution_options(synchronize_session=False)
            )
            if getattr(marked, "rowcount", 0) != 1:
                continue  # another replica said it, or the worker came back
            row = session.get(TableLease, table_id, populate_existing=True)
            if row is None:  # pragma: no cover - the UPDATE above just found it
                continue
            _raise_lost(session, row, now=now, webhook_urls=webhook_urls, metrics=metrics)
            raised += 1
    return raised


class WorkerMonitor:
    """A thread raising `worker_lost` for expired leases, every `interval_s` (see the module docstring)."""

    def __init__(
        self, *, database: Database, webhook_urls: list[str], metrics: Metrics, interval_s: float
    ) -> None:
        self.database = database
        self.webhook_urls = webhook_urls
        self.metrics = metrics
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="throwbox-worker-monitor", daemon=True)

    def start(self) -> None:
        """Start looking."""
        self._thread.start()

    def stop(self) -> None:
        """Stop, waiting for the look in progress."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                raise_lost_workers(self.database, webhook_urls=self.webhook_urls, metrics=self.metrics)
            except Exception:  # a database hiccup: say so, look again next time
                log.exception("worker monitor: could not look for lost leases")
