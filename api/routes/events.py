"""The server-sent event stream (dealer, surveillance, admin)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, HTTPException, Query, Request, status
from fastapi.responses import StreamingResponse
from pydantic import WithJsonSchema

from api.deps import DatabaseDep, SettingsDep, Viewer
from api.event_wakeup import EventWakeup
from api.events import EVENT_TYPES, events_after, head_event_id, latest_events, sse_message
from api.lookup import check_table
from api.schemas import DB_INT_MAX
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(prefix="/v1/events", tags=["events"], responses=AUTH_RESPONSES)

KEEPALIVE_S = 15.0
# What `types` may hold, as the handler reads it: names separated by commas, blanks around them ignored.
_NAME = "(?:" + "|".join(EVENT_TYPES) + ")"
TYPES_PATTERN = rf"^\s*(?:{_NAME}\s*)?(?:,\s*(?:{_NAME}\s*)?)*$"
TYPES_HELP = f"Comma-separated event types: {', '.join(EVENT_TYPES)}."
# One server-sent event (OpenAPI before 3.2 describes each event with the media type's schema).
SSE_EVENT_SCHEMA: dict[str, object] = {
    "type": "object",
    "required": ["id", "event", "data"],
    "properties": {
        "id": {"type": "string", "pattern": "^[0-9]+$", "description": "The event id: resume after it."},
        "event": {"enum": list(EVENT_TYPES)},
        "data": {
            "type": "string",
            "contentMediaType": "application/json",
            "description": "The event document: id, type, table_id, created_at (UTC), data.",
        },
    },
}
BATCH = 500
LAST_MAX = 1000
HEAD_HEADER = "X-Throwbox-Head-Id"


@dataclass(frozen=True)
class Batch:
    """Events read in one go, the newest event id when they were read, and whether they are all up to it."""

    documents: list[dict[str, Any]]
    head: int
    complete: bool


@router.get(
    "",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
            "description": "A text/event-stream.",
        },
        **errors((400, "`types` names an unknown event type."), (404, "`table_id` names no table.")),
    },
)
async def stream(
    request: Request,
    _: Viewer,
    database: DatabaseDep,
    settings: SettingsDep,
    after: Annotated[int, Query(ge=0, le=DB_INT_MAX, description="Send events with an id above this.")] = 0,
    follow: Annotated[bool, Query(description="Keep the stream open for new events.")] = True,
    types: Annotated[
        str | None,
        Query(max_length=500),
        WithJsonSchema(
            {"type": "string", "maxLength": 500, "pattern": TYPES_PATTERN, "description": TYPES_HELP}
        ),
    ] = None,
    table_id: Annotated[
        str | None, Query(max_length=64), WithJsonSchema({"type": "string", "maxLength": 64})
    ] = None,
    last_event_id: Annotated[
        int | None,
        Header(ge=0, le=DB_INT_MAX),
        WithJsonSchema(
            {"type": "integer", "minimum": 0, "maximum": DB_INT_MAX, "description": "Resume after it."}
        ),
    ] = None,
    last: Annotated[
        int | None,
        Query(
            ge=0,
            le=LAST_MAX,
            description="Begin with only the newest `last` matching events above `after`, then follow; "
            "`last=0` sends only events from now on.",
        ),
    ] = None,
) -> StreamingResponse:
    """Rolls, settlements, invalid rolls, alerts and round steps as server-sent events with ids.

    A client that reconnects with `Last-Event-ID` (or `?after=`) gets everything after that id.
    `follow=false` sends what is there and ends. `last=N` begins with the recent past instead of all of
    it: the newest N matching events (above `after` or `Last-Event-ID`), then whatever comes next; a
    dashboard opens with `?last=100` and never replays a table's whole history. The response header
    `X-Throwbox-Head-Id` is the newest event id (of any table) when the stream began: events up to it
    are the past, events above it are new.
    """
    await anyio.to_thread.run_sync(check_table, database, table_id)
    start = after
    if last_event_id is not None:
        start = max(start, last_event_id)
    wanted: set[str] | None = None
    if types:
        wanted = {name.strip() for name in types.split(",") if name.strip()}
        unknown = wanted - set(EVENT_TYPES)
        if unknown:
            raise HTTPException(
                status.HTTP_400_BAD_REQUEST,
                detail=f"unknown event types: {', '.join(sorted(unknown))}; known: {', '.join(EVENT_TYPES)}",
            )

    def fetch(after_id: int, newest: int | None = None) -> Batch:
        # The head is read first: on PostgreSQL each statement has its own snapshot, and every event up
        # to a visible id is visible too (ids become visible in order, see api.events.publish), so a
        # batch that is not full holds every matching event up to the head.
        with database.read_session() as session:
            head = head_event_id(session)
            if newest is not None:
                documents = latest_events(
                    session, after_id=after_id, up_to_id=head, limit=newest, types=wanted, table_id=table_id
                )
                return Batch(documents=documents, head=head, complete=True)
            documents = events_after(session, after_id=after_id, limit=BATCH, types=wanted, table_id=table_id)
            return Batch(documents=documents, head=head, complete=len(documents) < BATCH)

    # On PostgreSQL a NOTIFY from any replica's commit wakes the stream at once (api/event_wakeup.py);
    # it still polls, every sse_notify_poll_s, and every sse_poll_s while the listener is down (SQLite).
    wakeup: EventWakeup | None = getattr(request.app.state, "event_wakeup", None)
    generation = wakeup.generation if wakeup is not None else 0
    first = await anyio.to_thread.run_sync(fetch, start, last)

    async def body() -> AsyncIterator[str]:
        nonlocal generation
        batch, cursor = first, start
        quiet_since = time.monotonic()
        while True:
            if batch.documents:
                # One write per batch, not per event: each write is a chance to find the client gone, and
                # writes with no await between them never let the server hear of it, so a client that
                # dropped the stream mid-batch drew asyncio's "socket.send() raised exception." for every
                # event left in it (hundreds of lines; issue 57).
                yield "".join(sse_message(document) for document in batch.documents)
                cursor = int(str(batch.documents[-1]["id"]))
            if batch.complete:
                # Nothing else matches up to the head: later polls start there, not at an old event of
                # this table (a filtered stream would otherwise rescan every other table's events).
                cursor = max(cursor, batch.head)
            if batch.documents:
                quiet_since = time.monotonic()
                if not batch.complete:
                    generation = wakeup.generation if wakeup is not None else 0
                    batch = await anyio.to_thread.run_sync(fetch, cursor)
                    continue
            if not follow:
                return
            if await request.is_disconnected():
                return
            if time.monotonic() - quiet_since > KEEPALIVE_S:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            if wakeup is not None and wakeup.listening:
                await wakeup.wait(generation, settings.sse_notify_poll_s)
                generation = wakeup.generation
            else:
                await anyio.sleep(settings.sse_poll_s)
            batch = await anyio.to_thread.run_sync(fetch, cursor)

    return StreamingResponse(
        body(),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", HEAD_HEADER: str(first.head)},
    )
