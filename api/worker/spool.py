"""The worker's local ordered spool (stdlib sqlite3): requests waiting for the service, and dead letters."""

from __future__ import annotations

import fcntl
import json
import logging
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from api.worker.errors import SpoolBusyError
from api.worker.protocol import now_iso

log = logging.getLogger("throwbox.worker")


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
