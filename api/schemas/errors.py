"""Error bodies, and the OpenAPI `responses` each route names, so the document says every status a route
can answer and what its body is.

Every error is `{"detail": ...}`: a sentence (`ErrorOut`) for most; FastAPI's list of field errors when a
request does not fit its schema (`ValidationErrorOut`); the rules engine's refusal, a message and every
problem with its clause (`RulesRefusedOut`). `AUTH_RESPONSES` (401, 403) goes on every router behind a key;
`errors(404, 409, ...)` on each route for what else it may answer.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorOut(BaseModel):
    """An error, said in words."""

    detail: str = Field(description="What went wrong, and what to do about it where there is something.")


class FieldErrorOut(BaseModel):
    """One part of a request that does not fit its schema (FastAPI's own form)."""

    loc: list[str | int] = Field(description="Where: body, query, path, header, then the field names.")
    msg: str
    type: str


class ValidationErrorOut(BaseModel):
    """The request does not fit its schema: every field that does not, and why."""

    detail: list[FieldErrorOut]


class ProblemOut(BaseModel):
    """One rule a request breaks, with the clause that makes it a rule."""

    clause: str = Field(description="The regulation clause or the document part, e.g. `593.4(a)`.")
    message: str
    field: str | None


class RulesRefusalOut(BaseModel):
    """The rules engine's refusal."""

    message: str
    problems: list[ProblemOut] = Field(min_length=1)


class RulesRefusedOut(BaseModel):
    """Refused by the rules engine: the request is well formed, but breaks the rules of the game."""

    detail: RulesRefusalOut


Responses = dict[int | str, dict[str, Any]]

# What each status means wherever it is not said better by the route.
_ERRORS: dict[int, tuple[Any, str]] = {
    400: (ErrorOut, "The body cannot be parsed (bytes that are not JSON text, or a broken form)."),
    401: (ErrorOut, "No API key, or an unknown or revoked one: send `Authorization: Bearer KEY`."),
    403: (ErrorOut, "This key's role may not do this."),
    404: (ErrorOut, "No such resource."),
    409: (ErrorOut, "The request conflicts with the state of what it names."),
    413: (ErrorOut, "The body is larger than the service accepts."),
    415: (ErrorOut, "The body is not of a media type this route accepts."),
    422: (ValidationErrorOut, "The request does not fit its schema."),
    503: (ErrorOut, "The service cannot do this now; try again later."),
}

_WWW_AUTHENTICATE = {
    "WWW-Authenticate": {
        "description": "`Bearer`: the scheme to authenticate with.",
        "schema": {"type": "string"},
    }
}


def errors(*codes: int | tuple[int, str], unprocessable: Any = None) -> Responses:
    """OpenAPI `responses` for these error statuses; `(code, description)` says it in the route's words.

    `unprocessable` replaces the 422 body model where a route refuses more than a malformed request
    (e.g. `RULES_OR_VALIDATION`); without it, 422 is FastAPI's field errors.
    """
    out: Responses = {}
    for item in codes:
        code, description = item if isinstance(item, tuple) else (item, _ERRORS[item][1])
        model = unprocessable if code == 422 and unprocessable is not None else _ERRORS[code][0]
        out[code] = {"model": model, "description": description}
        if code == 401:
            out[code]["headers"] = _WWW_AUTHENTICATE
    return out


# Every route behind a key (api.deps.require) may answer these.
AUTH_RESPONSES: Responses = errors(401, 403)

# A 422 that is either a malformed request or the rules engine's refusal (each with its own body).
RULES_OR_VALIDATION = RulesRefusedOut | ValidationErrorOut
# A 422 that is either a malformed request or a refusal said in words.
MESSAGE_OR_VALIDATION = ErrorOut | ValidationErrorOut
# All three, where a route refuses in each way.
ANY_UNPROCESSABLE = RulesRefusedOut | ErrorOut | ValidationErrorOut
