"""FastAPI dependencies: settings, database, metrics and the role check, as `Annotated` aliases."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, HTTPException, Path, Query, Request, status
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection

from api.auth import ALL_BUT_WORKER, ALL_ROLES, Principal, Role, authenticate, key_from_authorization
from api.db.session import Database
from api.metrics import Metrics
from api.schemas import DB_INT_MAX
from api.settings import Settings


class _KeyBearer(HTTPBearer):
    """The Bearer scheme (as OpenAPI documents it) that also takes a bare key, `Authorization: tbx_...`."""

    async def __call__(self, request: HTTPConnection) -> HTTPAuthorizationCredentials | None:
        key = key_from_authorization(request.headers.get("Authorization"))
        return None if key is None else HTTPAuthorizationCredentials(scheme="Bearer", credentials=key)


_bearer = _KeyBearer(
    auto_error=False, description="An API key: `Authorization: Bearer tbx_...` (or the bare key)."
)


def get_settings(request: Request) -> Settings:
    """The settings the app was built with."""
    settings: Settings = request.app.state.settings
    return settings


def get_database(request: Request) -> Database:
    """The app's database."""
    database: Database = request.app.state.database
    return database


def get_metrics(request: Request) -> Metrics:
    """The app's metrics."""
    metrics: Metrics = request.app.state.metrics
    return metrics


SettingsDep = Annotated[Settings, Depends(get_settings)]
DatabaseDep = Annotated[Database, Depends(get_database)]
MetricsDep = Annotated[Metrics, Depends(get_metrics)]
BearerDep = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


def require(*roles: Role) -> Callable[[BearerDep, DatabaseDep], Principal]:
    """A dependency admitting keys of `roles` only: 401 without a valid key, 403 for another role."""
    allowed = frozenset(roles)
    names = ", ".join(sorted(role.value for role in allowed))

    def check(credentials: BearerDep, database: DatabaseDep) -> Principal:
        if credentials is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                detail="missing API key: send Authorization: Bearer KEY",
                headers={"WWW-Authenticate": "Bearer"},
            )
        with database.read_session() as session:
            principal = authenticate(session, credentials.credentials)
        if principal is None:
            raise HTTPException(
                status.HTTP_401_UNAUTHORIZED,
                detail="unknown or revoked API key",
                headers={"WWW-Authenticate": "Bearer"},
            )
        if principal.role not in allowed:
            raise HTTPException(
                status.HTTP_403_FORBIDDEN,
                detail=f"role {principal.role.value!r} may not do this; allowed: {names}",
            )
        return principal

    return check


# Who may do what (the matrix in api/auth.py's docstring and docs/service.md, Roles).
AnyRole = Annotated[Principal, Depends(require(*ALL_ROLES))]
NotWorker = Annotated[Principal, Depends(require(*ALL_BUT_WORKER))]
Viewer = Annotated[Principal, Depends(require(Role.DEALER, Role.SURVEILLANCE, Role.ADMIN))]
Watcher = Annotated[Principal, Depends(require(Role.SURVEILLANCE, Role.ADMIN))]
Dealer = Annotated[Principal, Depends(require(Role.DEALER))]
RollSubmitter = Annotated[Principal, Depends(require(Role.READER, Role.DEALER, Role.WORKER))]
ReaderRole = Annotated[Principal, Depends(require(Role.READER))]
Admin = Annotated[Principal, Depends(require(Role.ADMIN))]
Reviewer = Annotated[Principal, Depends(require(Role.SURVEILLANCE, Role.ADMIN))]
# The table worker's routes (issue 50): its own, and the live alerts it raises beside surveillance's reviews.
WorkerRole = Annotated[Principal, Depends(require(Role.WORKER))]
WorkerOrAdmin = Annotated[Principal, Depends(require(Role.WORKER, Role.ADMIN))]
AlertRaiser = Annotated[Principal, Depends(require(Role.SURVEILLANCE, Role.ADMIN, Role.WORKER))]

# A database id in a path: refused (422) beyond the 32-bit range PostgreSQL's INTEGER holds.
IdPath = Annotated[int, Path(ge=1, le=DB_INT_MAX)]

# A table id as a list's filter: the lists answer 404 for a table that does not exist, not an empty list.
TableIdQuery = Annotated[
    str | None, Query(max_length=64, description="Only this table's; 404 when there is no such table.")
]
