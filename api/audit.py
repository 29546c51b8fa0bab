"""The append-only, hash-chained audit trail, and evidence frames stored by SHA-256.

Each entry's hash covers its own fields and the hash of the entry before it, so changing, removing or
re-ordering any committed entry breaks every hash after it; `verify_chain` (and `throwbox audit
verify`) finds the first broken entry. The database refuses UPDATE and DELETE on `audit_log` with
triggers (see the migration), so a change needs someone who can drop a trigger, and it still shows.

Appenders serialise on the single `audit_head` row: it is locked first (`FOR UPDATE` on PostgreSQL,
`BEGIN IMMEDIATE` on SQLite), then read, so two transactions never chain onto the same entry.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api.db.models import (
    Alert,
    ApiKey,
    AuditEntry,
    AuditHead,
    Event,
    Evidence,
    GameTable,
    Read,
    Roll,
    Round,
)
from api.db.session import Database

GENESIS_HASH = "0" * 64


class EvidenceError(Exception):
    """An evidence frame is empty, too large, missing on disk, or does not match its SHA-256."""


def _json_default(value: object) -> str:
    if isinstance(value, Decimal | datetime):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no spaces: the exact text that is hashed and stored."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=_json_default, ensure_ascii=False)


def entry_hash(
    *, seq: int, at: str, actor: str, action: str, subject: str, payload: str, prev_hash: str
) -> str:
    """SHA-256 of one entry's fields and the previous entry's hash."""
    material = canonical_json(
        {
            "seq": seq,
            "at": at,
            "actor": actor,
            "action": action,
            "subject": subject,
            "payload": payload,
            "prev_hash": prev_hash,
        }
    )
    return hashlib.sha256(material.encode("utf-8")).hexdigest()


def append_alone(*, database: Database, actor: str, action: str, subject: str, payload: Any) -> None:
    """Add one entry at the end of the chain in a transaction of its own (a change that touches no row)."""
    with database.session() as session:
        append(session, actor=actor, action=action, subject=subject, payload=payload)


def append(session: Session, *, actor: str, action: str, subject: str, payload: Any) -> AuditEntry:
    """Add one entry at the end of the chain, inside the caller's transaction."""
    # The lock is the database's (FOR UPDATE), so it serialises appenders of every process on one
    # PostgreSQL; populate_existing makes the ORM take the row as read under the lock, not a copy this
    # session may have loaded before it.
    head = session.scalars(
        select(AuditHead).where(AuditHead.id == 1).with_for_update().execution_options(populate_existing=True)
    ).one()
    seq = head.seq + 1
    at = datetime.now(UTC).isoformat()
    text = canonical_json(payload)
    digest = entry_hash(
        seq=seq, at=at, actor=actor, action=action, subject=subject, payload=text, prev_hash=head.hash
    )
    entry = AuditEntry(
        seq=seq,
        at=at,
        actor=actor,
        action=action,
        subject=subject,
        payload=text,
        prev_hash=head.hash,
        hash=digest,
    )
    session.add(entry)
    head.seq = seq
    head.hash = digest
    session.flush()
    return entry


@dataclass(frozen=True)
class ChainReport:
    """What `verify_chain` found: `ok`, how many entries, and the first problem if any."""

    ok: bool
    entries: int
    first_bad_seq: int | None = None
    problem: str | None = None


def verify_chain(session: Session, *, batch_size: int = 1000) -> ChainReport:
    """Recompute every hash from the first entry; report the first entry that does not match."""
    prev_hash = GENESIS_HASH
    expected_seq = 1
    count = 0
    last_seq = 0
    while True:
        rows = session.scalars(
            select(AuditEntry).where(AuditEntry.seq > last_seq).order_by(AuditEntry.seq).limit(batch_size)
        ).all()
        if not rows:
            break
        for row in rows:
            if row.seq != expected_seq:
                return ChainReport(False, count, expected_seq, f"entry {expected_seq} is missing")
            if row.prev_hash != prev_hash:
                return ChainReport(False, count, row.seq, "prev_hash does not match the entry before")
            digest = entry_hash(
                seq=row.seq,
                at=row.at,
                actor=row.actor,
                action=row.action,
                subject=row.subject,
                payload=row.payload,
                prev_hash=row.prev_hash,
            )
            if digest != row.hash:
                return ChainReport(False, count, row.seq, "hash does not match the entry's contents")
            prev_hash = row.hash
            expected_seq += 1
            count += 1
            last_seq = row.seq
    head = session.get(AuditHead, 1)
    if head is None:
        return ChainReport(False, count, None, "the audit head row is missing")
    if head.seq != count or head.hash != prev_hash:
        return ChainReport(False, count, count + 1, "entries after the last one were removed")
    return ChainReport(True, count)


# What a service leaves behind, each with audit entries of its own: a chain with no entry beside any of them
# was emptied, not never written.
_SERVED = (
    ("keys", ApiKey),
    ("tables", GameTable),
    ("rounds", Round),
    ("rolls", Roll),
    ("alerts", Alert),
    ("reads", Read),
    ("events", Event),
)


def served_traces(session: Session) -> dict[str, int]:
    """How many keys, tables, rounds, rolls, alerts, reads and events the database holds (those it has)."""
    counts = {name: session.scalar(select(func.count()).select_from(model)) or 0 for name, model in _SERVED}
    return {name: count for name, count in counts.items() if count}


# --- evidence frames ---------------------------------------------------------------------------------


def evidence_path(evidence_dir: Path, sha256: str) -> Path:
    """Where a frame with this SHA-256 lives: `<dir>/ab/abcdef...`."""
    return evidence_dir / sha256[:2] / sha256


def store_evidence(
    session: Session, *, evidence_dir: Path, data: bytes, media_type: str, max_bytes: int
) -> str:
    """Write a frame (atomically, fsynced) and record its SHA-256; return the SHA-256.

    Raises:
        EvidenceError: the frame is empty or larger than `max_bytes`.
    """
    if not data:
        raise EvidenceError("the evidence frame is empty")
    if len(data) > max_bytes:
        raise EvidenceError(f"the evidence frame has {len(data)} bytes; the limit is {max_bytes}")
    sha256 = hashlib.sha256(data).hexdigest()
    path = evidence_path(evidence_dir, sha256)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        # A name of its own per write: the same frame may be stored by two threads, or two replicas on
        # shared storage, at once (a name from the pid alone made the second rename fail).
        tmp = path.with_suffix(f".tmp{os.getpid()}-{secrets.token_hex(8)}")
        with tmp.open("wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        tmp.replace(path)
    if session.get(Evidence, sha256) is None:
        try:
            with session.begin_nested():  # another transaction may record the same frame first
                session.add(Evidence(sha256=sha256, size_bytes=len(data), media_type=media_type))
        except IntegrityError:
            pass  # recorded by the other writer: the same bytes, the same row
    return sha256


def load_evidence(session: Session, *, evidence_dir: Path, sha256: str) -> tuple[bytes, str]:
    """The frame's bytes and media type, checked against its SHA-256.

    Raises:
        EvidenceError: unknown, missing on disk, or the bytes no longer match their SHA-256.
    """
    row = session.get(Evidence, sha256)
    if row is None:
        raise EvidenceError(f"no evidence frame {sha256}")
    path = evidence_path(evidence_dir, sha256)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise EvidenceError(f"evidence frame {sha256} is missing on disk") from exc
    if hashlib.sha256(data).hexdigest() != sha256:
        raise EvidenceError(f"evidence frame {sha256} does not match its SHA-256 (tampered or damaged)")
    return data, row.media_type
