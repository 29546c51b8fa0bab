"""The key routes' service: create and revoke API keys, each in one audited transaction.

Its routes (api/routes/keys.py) only parse and answer; the errors raised here (api/errors.py) become HTTP
answers in api/http_errors.py. The service always keeps one active admin key (`auth.LastAdminKeyError`).
"""

from __future__ import annotations

from api import audit
from api.auth import LastAdminKeyError, Role, create_key, revoke_key
from api.db.models import ApiKey
from api.db.session import Database
from api.errors import NotFoundError, StateConflictError
from api.schemas.admin import KeyIn, KeyOut, NewKeyOut


def create(*, database: Database, body: KeyIn, actor: str) -> NewKeyOut:
    """Create a key and audit it; the answer is the only place the key ever appears."""
    with database.session() as session:
        new = create_key(
            session,
            role=Role(body.role),
            name=body.name,
            supervisor=body.supervisor,
            worker_id=body.worker_id,
        )
        payload: dict[str, object] = {"name": new.name, "role": new.role.value, "supervisor": new.supervisor}
        if new.worker_id is not None:
            payload["worker_id"] = new.worker_id
        audit.append(session, actor=actor, action="key.create", subject=f"key:{new.key_id}", payload=payload)
    return NewKeyOut(
        id=new.key_id,
        name=new.name,
        role=body.role,
        supervisor=new.supervisor,
        worker_id=new.worker_id,
        key=new.secret,
    )


def revoke(*, database: Database, key_id: int, actor: str) -> KeyOut:
    """Revoke a key and audit it; it stops working at once.

    Raises:
        NotFoundError: no such key.
        StateConflictError: it is the last active admin key.
    """
    with database.session() as session:
        try:
            found = revoke_key(session, key_id)
        except LastAdminKeyError as exc:
            raise StateConflictError(str(exc)) from exc
        if not found:
            raise NotFoundError(f"no key {key_id}")
        audit.append(session, actor=actor, action="key.revoke", subject=f"key:{key_id}", payload={})
        row = session.get(ApiKey, key_id)
        return KeyOut.model_validate(row, from_attributes=True)
