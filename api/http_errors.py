"""The one place the service's domain errors (api/errors.py) become HTTP answers.

Routes no longer catch and translate: a `ServiceError` raised anywhere under a route reaches the handler
installed here, which answers its status with the body every route documents (`{"detail": "..."}`; the
rules engine's refusal as its message and problems).
"""

from __future__ import annotations

from fastapi import FastAPI, Request, status
from fastapi.responses import JSONResponse

from api.errors import (
    ForbiddenError,
    NotFoundError,
    RulesRefusedError,
    ServiceError,
    StateConflictError,
    UnprocessableError,
    UnsupportedMediaError,
)

# Most specific first: the first class the error is an instance of decides.
STATUS_OF: tuple[tuple[type[ServiceError], int], ...] = (
    (RulesRefusedError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (UnprocessableError, status.HTTP_422_UNPROCESSABLE_CONTENT),
    (NotFoundError, status.HTTP_404_NOT_FOUND),
    (ForbiddenError, status.HTTP_403_FORBIDDEN),
    (UnsupportedMediaError, status.HTTP_415_UNSUPPORTED_MEDIA_TYPE),
    (StateConflictError, status.HTTP_409_CONFLICT),
)


def status_of(exc: ServiceError) -> int:
    """The HTTP status of a domain error (409 for a plain ServiceError: a request that does not fit)."""
    for kind, code in STATUS_OF:
        if isinstance(exc, kind):
            return code
    return status.HTTP_409_CONFLICT


async def service_error_handler(request: Request, exc: Exception) -> JSONResponse:
    """The answer to a domain error: its status, and its words (or the engine's problems) as `detail`."""
    if not isinstance(exc, ServiceError):  # registered for ServiceError only
        raise exc
    detail = exc.detail() if isinstance(exc, RulesRefusedError) else str(exc)
    return JSONResponse({"detail": detail}, status_code=status_of(exc))


def install(app: FastAPI) -> None:
    """Answer every `ServiceError` raised under a route through `service_error_handler`."""
    app.add_exception_handler(ServiceError, service_error_handler)
