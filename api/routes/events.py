"""The server-sent event stream (dealer, surveillance, admin)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, HTTPException, Query, Request, status
from fastapi.responses import StreamingResponse
from pydantic import WithJsonSchema

from api.deps import DatabaseDep, SettingsDep, Viewer
from api.events import EVENT_TYPES, events_after, sse_message
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


@router.get(
    "",
    response_class=StreamingResponse,
    responses={
        200: {
            "content": {"text/event-stream": {"schema": SSE_EVENT_SCHEMA}},
            "description": "A text/event-stream.",
        },
        **errors((400, "`types` names an unknown event type.")),
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
) -> StreamingResponse:
    """Rolls, settlements, invalid rolls, alerts and round steps as server-sent events with ids.

    A client that reconnects with `Last-Event-ID` (or `?after=`) gets everything after that id.
    `follow=false` sends what is there and ends.
    """
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

    def fetch(after_id: int) -> list[dict[str, object]]:
        with database.read_session() as session:
            return events_after(session, after_id=after_id, limit=BATCH, types=wanted, table_id=table_id)

    async def body() -> AsyncIterator[str]:
        last = start
        quiet_since = time.monotonic()
        while True:
            batch = await anyio.to_thread.run_sync(fetch, last)
            for document in batch:
                yield sse_message(document)
                last = int(str(document["id"]))
            if batch:
                quiet_since = time.monotonic()
                if len(batch) == BATCH:
                    continue
            if not follow:
                return
            if await request.is_disconnected():
                return
            if time.monotonic() - quiet_since > KEEPALIVE_S:
                yield ": keep-alive\n\n"
                quiet_since = time.monotonic()
            await anyio.sleep(settings.sse_poll_s)

    return StreamingResponse(body(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})
