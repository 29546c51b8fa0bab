"""API keys over HTTP (admin): create (the key is shown once), list, revoke.

The service always keeps one active admin key: revoking the last one is a 409 (`auth.LastAdminKeyError`).
"""

from __future__ import annotations

from fastapi import APIRouter, HTTPException, status
from sqlalchemy import select

from api import audit
from api.auth import LastAdminKeyError, Role, create_key, revoke_key
from api.db.models import ApiKey
from api.deps import Admin, DatabaseDep, IdPath
from api.schemas.admin import KeyIn, KeyOut, NewKeyOut
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/keys", tags=["keys"], responses=AUTH_RESPONSES)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=NewKeyOut, responses=errors(400))
def create(body: KeyIn, principal: Admin, database: DatabaseDep) -> NewKeyOut:
    """Create a key (admin). The response is the only place the key ever appears."""
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
        audit.append(
            session, actor=principal.actor, action="key.create", subject=f"key:{new.key_id}", payload=payload
        )
    return NewKeyOut(
        id=new.key_id,
        name=new.name,
        role=body.role,
        supervisor=new.supervisor,
        worker_id=new.worker_id,
        key=new.secret,
    )


@router.get("", response_model=list[KeyOut])
def list_keys(_: Admin, database: DatabaseDep) -> list[KeyOut]:
    """Every key's record, never the key (admin)."""
    with database.read_session() as session:
        rows = session.scalars(select(ApiKey).order_by(ApiKey.id)).all()
        return [KeyOut.model_validate(row, from_attributes=True) for row in rows]


@router.delete(
    "/{key_id}",
    response_model=KeyOut,
    responses=errors(404, (409, "The last active admin key: the service must keep one.")),
)
def revoke(key_id: IdPath, principal: Admin, database: DatabaseDep) -> KeyOut:
    """Revoke a key (admin); it stops working at once. The last active admin key cannot be revoked (409)."""
    with database.session() as session:
        try:
            found = revoke_key(session, key_id)
        except LastAdminKeyError as exc:
            raise HTTPException(status.HTTP_409_CONFLICT, detail=str(exc)) from exc
        if not found:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no key {key_id}")
        audit.append(session, actor=principal.actor, action="key.revoke", subject=f"key:{key_id}", payload={})
        row = session.get(ApiKey, key_id)
        return KeyOut.model_validate(row, from_attributes=True)
