"""The rules engine's door for a live loop: the round logic in this process, or the rules engine over REST.

A live loop hands each roll to a `RulesDoor`:

- `LocalRules`: the loop runs inside the service (`api.live_service`), so the roll goes to the round logic
  in-process (`api.rounds.submit_roll`, what `POST /v1/tables/{id}/rolls` calls), with no round trip over
  HTTP to the service itself;
- `RulesClient`: the loop is a table worker on another machine (`throwbox worker`, which wraps it in its
  spool), or its rules engine is another service (`THROWBOX_RULES_URL`): the roll goes over REST.

Either way the roll id makes it apply once, and a refusal is the same error with the status the endpoint
answers (404, 409, 422).

Errors::

    LiveError                 base class
    +-- RollRejectedError     the rules engine refused the roll (4xx): not retried, alerted
    +-- RulesUnreachableError no answer (connection error, 5xx, the database away) after every retry: alerted
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from pydantic import ValidationError

from api.schemas.rolls import RollSubmission

if TYPE_CHECKING:
    from api.db.session import Database
    from api.metrics import Metrics

log = logging.getLogger("throwbox.live")


class LiveError(Exception):
    """Base class of the live loop's errors."""


class RollRejectedError(LiveError):
    """The rules engine answered 4xx: the roll does not fit (no open round, wrong phase, refused)."""

    def __init__(self, status_code: int, detail: object) -> None:
        self.status_code = status_code
        self.detail = detail
        super().__init__(f"the rules engine refused the roll ({status_code}): {detail}")


class RulesUnreachableError(LiveError):
    """No answer from the rules engine after every retry."""


class RulesDoor(Protocol):
    """What the loop needs of the rules engine: `LocalRules`, `RulesClient`, or a table worker's spooling
    client (api.worker)."""

    def upload_evidence(self, data: bytes, *, media_type: str = "image/jpeg") -> str:
        """Store an evidence frame; its SHA-256."""
        ...

    def post_roll(self, table_id: str, submission: RollSubmission) -> dict[str, Any]:
        """Submit a roll; the engine's answer."""
        ...

    def close(self) -> None:
        """Let go of connections."""
        ...


@dataclass
class RulesClient:
    """The rules engine's REST door (`POST /v1/tables/{id}/rolls`, `POST /v1/evidence`) with retries.

    Connection errors, time-outs and 5xx answers are retried with doubling back-off (`attempts` in all);
    the same roll id makes a retry harmless. A 4xx is the engine's answer and is not retried.
    """

    base_url: str
    key: str
    attempts: int = 5
    backoff_s: float = 0.1
    timeout_s: float = 5.0
    transport: httpx.BaseTransport | None = None
    sleep: Callable[[float], None] = time.sleep
    _client: httpx.Client | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be >= 1, got {self.attempts}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"the rules engine URL must start with http:// or https://: {self.base_url!r}")

    @property
    def client(self) -> httpx.Client:
        """The HTTP client (made on first use, kept for its connection pool)."""
        if self._client is None:
            self._client = httpx.Client(
                base_url=self.base_url.rstrip("/"),
                headers={"Authorization": f"Bearer {self.key}"},
                timeout=self.timeout_s,
                transport=self.transport,
            )
        return self._client

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()
            self._client = None

    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        delay = self.backoff_s
        last = ""
        for attempt in range(1, self.attempts + 1):
            try:
                response = self.client.request(method, path, **kwargs)
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if response.status_code < 500:
                    return response
                last = f"HTTP {response.status_code}: {response.text[:200]}"
            if attempt < self.attempts:
                log.warning(
                    "rules engine %s %s failed (%s); retry %d in %.2f s", method, path, last, attempt, delay
                )
                self.sleep(delay)
                delay *= 2
        raise RulesUnreachableError(
            f"{method} {self.base_url}{path}: no answer after {self.attempts} tries ({last})"
        )

    def upload_evidence(self, data: bytes, *, media_type: str = "image/jpeg") -> str:
        """Store an evidence frame at the rules engine; its SHA-256."""
        response = self._send("POST", "/v1/evidence", content=data, headers={"Content-Type": media_type})
        if response.status_code >= 400:
            raise RollRejectedError(response.status_code, _detail(response))
        return str(response.json()["sha256"])

    def post_roll(self, table_id: str, submission: RollSubmission) -> dict[str, Any]:
        """Submit a roll; the engine's answer as it came (a `RollAnswer`; a repeat of the first answer for a
        roll id already applied)."""
        response = self._send("POST", f"/v1/tables/{table_id}/rolls", json=submission.wire())
        if response.status_code >= 400:
            raise RollRejectedError(response.status_code, _detail(response))
        answer: dict[str, Any] = response.json()
        return answer


def checked_submission(fields: dict[str, Any]) -> RollSubmission:
    """The roll to post; one the engine's door would refuse (422) is refused here the same way."""
    try:
        return RollSubmission.model_validate(fields)
    except ValidationError as exc:
        raise RollRejectedError(422, exc.errors(include_url=False, include_context=False)) from exc


def _detail(response: httpx.Response) -> object:
    try:
        return response.json().get("detail")
    except ValueError:
        return response.text[:200]


@dataclass
class LocalRules:
    """The round logic in this process: the door of a live loop that runs inside the service.

    `post_roll` applies the roll as `POST /v1/tables/{id}/rolls` does (`api.rounds.submit_roll`, as `actor`),
    and answers its `RollAnswer` as the endpoint's JSON. A refusal is a `RollRejectedError` with the status
    the endpoint would answer; a database error is retried as `RulesClient` retries a 5xx (the roll id makes
    a retry harmless), then `RulesUnreachableError`.
    """

    database: Database
    metrics: Metrics
    actor: str
    webhook_urls: list[str] = field(default_factory=list)
    attempts: int = 5
    backoff_s: float = 0.1
    sleep: Callable[[float], None] = time.sleep

    def upload_evidence(self, data: bytes, *, media_type: str = "image/jpeg") -> str:
        """The frame's SHA-256: the service's recorder has stored it where the round logic looks (a frame
        it has not is refused, 404, as a roll naming it would be)."""
        from api.db.models import Evidence

        sha256 = hashlib.sha256(data).hexdigest()
        with self.database.read_session() as session:
            if session.get(Evidence, sha256) is None:
                raise RollRejectedError(404, f"no evidence frame {sha256}; the service's recorder stores it")
        return sha256

    def post_roll(self, table_id: str, submission: RollSubmission) -> dict[str, Any]:
        """Apply the roll to the table's open round; the answer as `POST /v1/tables/{id}/rolls` gives it."""
        from sqlalchemy.exc import SQLAlchemyError

        from api import rounds

        delay = self.backoff_s
        last = ""
        for attempt in range(1, self.attempts + 1):
            try:
                submitted = rounds.submit_roll(
                    database=self.database,
                    table_id=table_id,
                    body=submission,
                    actor=self.actor,
                    webhook_urls=self.webhook_urls,
                    metrics=self.metrics,
                )
            except rounds.RulesRefusedError as exc:
                self.metrics.errors.labels(kind="refused_by_rules").inc()
                raise RollRejectedError(422, exc.detail()) from exc
            except rounds.NotFoundError as exc:
                raise RollRejectedError(404, str(exc)) from exc
            except rounds.StateConflictError as exc:
                raise RollRejectedError(409, str(exc)) from exc
            except SQLAlchemyError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                return submitted.answer.model_dump(mode="json", by_alias=True)
            if attempt < self.attempts:
                log.warning("the round logic failed (%s); retry %d in %.2f s", last, attempt, delay)
                self.sleep(delay)
                delay *= 2
        raise RulesUnreachableError(f"the round logic: no answer after {self.attempts} tries ({last})")

    def close(self) -> None:
        """Nothing to let go: the service owns its database."""
