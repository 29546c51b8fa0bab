"""API keys over HTTP (admin): create (the key is shown once), list, revoke.

The service always keeps one active admin key: revoking the last one is a 409 (api/key_service.py).
"""

from __future__ import annotations

from fastapi import APIRouter, status
from sqlalchemy import select

from api import key_service
from api.db.models import ApiKey
from api.deps import Admin, DatabaseDep, IdPath
from api.schemas.admin import KeyIn, KeyOut, NewKeyOut
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/keys", tags=["keys"], responses=AUTH_RESPONSES)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=NewKeyOut, responses=errors(400))
def create(body: KeyIn, principal: Admin, database: DatabaseDep) -> NewKeyOut:
    """Create a key (admin). The response is the only place the key ever appears."""
    return key_service.create(database=database, body=body, actor=principal.actor)


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
    return key_service.revoke(database=database, key_id=key_id, actor=principal.actor)
