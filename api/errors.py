"""The service's domain errors: what its modules raise when they refuse a request, each said in words.

Service modules (api/rounds.py, api/round_service.py, ...) raise these and know nothing of HTTP; one
FastAPI exception handler (api/http_errors.py) turns each into its status and `{"detail": ...}` body, so a
route is its parsing, one service call and the answer::

    ServiceError
    ├── RulesRefusedError       the rules engine refused a wager or roll: every problem, by clause (422)
    ├── StateConflictError      the request does not fit the round or table: wrong phase, no round, a roll
    │                           id used for another roll or at the same time at another table (409)
    ├── NotFoundError           no such table, round, read, key or evidence frame (404)
    ├── ForbiddenError          the key may not do this, e.g. claim a roll's source its role cannot back (403)
    ├── UnprocessableError      well formed, but what it holds is refused (a corrupt image, a mismatch
    │                           between two fields JSON Schema cannot state) (422)
    └── UnsupportedMediaError   the bytes are no type the route takes, or not the type declared (415)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rules.games import Problem


class ServiceError(Exception):
    """Base of the errors the service modules raise."""


class RulesRefusedError(ServiceError):
    """The rules engine refused the request; `problems` name the clauses."""

    def __init__(self, problems: Sequence[Problem]) -> None:
        self.problems = tuple(problems)
        super().__init__("; ".join(f"{p.clause}: {p.message}" for p in self.problems))

    def detail(self) -> dict[str, Any]:
        """The HTTP error body: a message and every problem with its clause."""
        return {"message": "refused by the rules engine", "problems": [p.as_dict() for p in self.problems]}


class StateConflictError(ServiceError):
    """The request does not fit the state of the round or table."""


class NotFoundError(ServiceError):
    """No such table, round, read, key or evidence frame."""


class ForbiddenError(ServiceError):
    """The key is valid, but may not do this."""


class UnprocessableError(ServiceError):
    """The request is well formed, but what it holds is refused (said in the message)."""


class UnsupportedMediaError(ServiceError):
    """The body's bytes are no type the route takes, or not the type they were declared as."""
