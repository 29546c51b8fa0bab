"""API keys and roles.

A key looks like `tbx_<prefix>_<secret>`. Only the prefix (to find the row) and the SHA-256 of the
whole key are stored. A plain SHA-256 rather than a slow password hash (bcrypt, argon2) is deliberate:
the secret is 256 random bits, not a password a person chose, so there is nothing to brute-force and
each request stays one cheap hash.

Roles (what each may do is written next to every route, and tested in tests/api/test_roles.py):

- `reader`: submits reads and rolls (the camera's reader).
- `dealer`: opens rounds, places wagers, calls "no more bets", submits hand-keyed rolls, dealer calls.
- `surveillance`: reads everything (rounds, rolls, audit, alerts, events, evidence), raises reviews;
  changes nothing.
- `admin`: tables, keys, acknowledging alerts; reads everything.
- `worker`: a table worker (`throwbox worker`, issue 50) and nothing more: takes and renews table leases,
  reads a table's live configuration, submits rolls, evidence frames, reads (`PUT /v1/reads/{id}`) and
  live alerts, and lists tables; it may not open rounds, settle, correct, watch or manage keys. A worker key
  may be bound to one worker id (`throwbox keys create --role worker --worker-id ID`): it may then take,
  renew and release leases and send rolls as that worker only (`Principal.acts_as`), so a leaked key
  cannot take over another worker's tables or release its leases. An unbound worker key may act as any id.

A key of any role may also carry the `supervisor` capability: it alone (with admin) may enter a
correction of a settled round.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.db.models import ApiKey
from api.errors import ForbiddenError

KEY_SCHEME = "tbx"


class Role(StrEnum):
    """What a key may do."""

    READER = "reader"
    DEALER = "dealer"
    SURVEILLANCE = "surveillance"
    ADMIN = "admin"
    WORKER = "worker"


ALL_ROLES: frozenset[Role] = frozenset(Role)
# Every role but the table worker's (the settle calculator, corrections): a worker does only its table's work.
ALL_BUT_WORKER: frozenset[Role] = ALL_ROLES - {Role.WORKER}


@dataclass(frozen=True)
class Principal:
    """The holder of a valid key, as the audit trail names them."""

    key_id: int
    name: str
    role: Role
    supervisor: bool
    # The one worker id a bound `worker` key may act as (None: unbound).
    worker_id: str | None = None

    @property
    def actor(self) -> str:
        """Who did it, for the audit trail: `role:name#key_id`."""
        return f"{self.role.value}:{self.name}#{self.key_id}"

    @property
    def may_correct(self) -> bool:
        """Admins and supervisor keys may correct a settled round."""
        return self.role is Role.ADMIN or self.supervisor

    def acts_as(self, worker_id: str | None) -> str | None:
        """The worker id a request of this key names: `worker_id` as sent, or the key's bound id when none
        is sent. `WorkerIdError` when the key is bound to another id."""
        if self.worker_id is None:
            return worker_id
        if worker_id is not None and worker_id != self.worker_id:
            raise WorkerIdError(
                f"key #{self.key_id} is bound to worker {self.worker_id!r}; "
                f"it may not act as worker {worker_id!r}"
            )
        return self.worker_id


class WorkerIdError(ForbiddenError):
    """A bound worker key naming another worker id (403 at the API)."""


@dataclass(frozen=True)
class NewKey:
    """A freshly created key: `secret` is shown once and never stored."""

    key_id: int
    name: str
    role: Role
    supervisor: bool
    secret: str
    worker_id: str | None = None


def hash_key(key: str) -> str:
    """SHA-256 hex of a key (see the module docstring for why SHA-256 suffices)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def _split(key: str) -> str | None:
    parts = key.split("_")
    if len(parts) != 3 or parts[0] != KEY_SCHEME or not parts[1] or not parts[2]:
        return None
    return parts[1]


def key_from_authorization(value: str | None) -> str | None:
    """The key an `Authorization` header carries: `Bearer KEY` (the scheme in any case) or the bare `KEY`.

    The bare form is accepted because many clients and hand-written scripts send it; any other scheme
    (`Basic ...`) carries no key. None when there is none.
    """
    parts = (value or "").split()
    if len(parts) == 2 and parts[0].lower() == "bearer":
        return parts[1]
    if len(parts) == 1 and parts[0].lower() != "bearer":
        return parts[0]
    return None


def create_key(
    session: Session, *, role: Role, name: str, supervisor: bool = False, worker_id: str | None = None
) -> NewKey:
    """Store a new key's hash and return the key itself (once). `worker_id` binds a `worker` key to that
    worker id; a ValueError for any other role."""
    if worker_id is not None and role is not Role.WORKER:
        raise ValueError(f"only a worker key can be bound to a worker id, not a {role.value} key")
    prefix = secrets.token_hex(6)
    secret = f"{KEY_SCHEME}_{prefix}_{secrets.token_urlsafe(32).replace('_', '-')}"
    row = ApiKey(
        name=name,
        role=role.value,
        supervisor=supervisor,
        key_prefix=prefix,
        key_hash=hash_key(secret),
        worker_id=worker_id,
    )
    session.add(row)
    session.flush()
    return NewKey(
        key_id=row.id, name=name, role=role, supervisor=supervisor, secret=secret, worker_id=worker_id
    )


def authenticate(session: Session, key: str) -> Principal | None:
    """The principal holding `key`, or None when the key is unknown, malformed or revoked."""
    prefix = _split(key)
    if prefix is None:
        return None
    row = session.scalars(select(ApiKey).where(ApiKey.key_prefix == prefix)).first()
    if row is None or row.revoked_at is not None:
        return None
    if not hmac.compare_digest(row.key_hash, hash_key(key)):
        return None
    return Principal(
        key_id=row.id, name=row.name, role=Role(row.role), supervisor=row.supervisor, worker_id=row.worker_id
    )


class LastAdminKeyError(Exception):
    """Raised by `revoke_key` when the key is the last active admin key (the service would lose its admin)."""


def revoke_key(session: Session, key_id: int) -> bool:
    """Revoke a key; False when there is no such key.

    Raises:
        LastAdminKeyError: the key is the only active admin key. Without one, nobody could create keys or
            tables again without shell access to the host, so the last one is kept (create another first).
    """
    row = session.get(ApiKey, key_id)
    if row is None:
        return False
    if row.revoked_at is None:
        if row.role == Role.ADMIN.value:
            # FOR UPDATE on PostgreSQL: two admins revoking each other at once are ordered, and the second
            # sees the first's revocation (SQLite writers are serialised by BEGIN IMMEDIATE already).
            active_admins = session.scalars(
                select(ApiKey.id)
                .where(ApiKey.role == Role.ADMIN.value, ApiKey.revoked_at.is_(None))
                .with_for_update()
            ).all()
            if set(active_admins) <= {key_id}:
                raise LastAdminKeyError(
                    f"key {key_id} is the last active admin key: revoking it would leave no one able to "
                    "administer the service; create another admin key first"
                )
        row.revoked_at = datetime.now(UTC)
    return True


def count_keys(session: Session) -> int:
    """How many keys exist (revoked ones included)."""
    return len(session.scalars(select(ApiKey.id)).all())
