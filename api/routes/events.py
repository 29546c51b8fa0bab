"""The server-sent event stream (dealer, surveillance, admin)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Annotated

import anyio
from fastapi import APIRouter, Header, HTTPException, Query, Request, status
from fastapi.responses import StreamingResponse

from api.deps import DatabaseDep, SettingsDep, Viewer
from api.events import EVENT_TYPES, events_after, sse_message
from api.schemas import DB_INT_MAX

router = APIRouter(prefix="/v1/events", tags=["events"])

KEEPALIVE_S = 15.0
BATCH = 500


@router.get(
    "",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}, "description": "A text/event-stream."}},
)
async def stream(
    request: Request,
    _: Viewer,
    database: DatabaseDep,
    settings: SettingsDep,
    after: Annotated[int, Query(ge=0, le=DB_INT_MAX, description="Send events with an id above this.")] = 0,
    follow: Annotated[bool, Query(description="Keep the stream open for new events.")] = True,
    types: Annotated[str | None, Query(max_length=500, description="Comma-separated event types.")] = None,
    table_id: Annotated[str | None, Query(max_length=64)] = None,
    last_event_id: Annotated[str | None, Header(max_length=10)] = None,
) -> StreamingResponse:
    """Rolls, settlements, invalid rolls, alerts and round steps as server-sent events with ids.

    A client that reconnects with `Last-Event-ID` (or `?after=`) gets everything after that id.
    `follow=false` sends what is there and ends.
    """
    start = after
    if last_event_id is not None:
        if not last_event_id.isdigit() or int(last_event_id) > DB_INT_MAX:
            raise HTTPException(status.HTTP_400_BAD_REQUEST, detail="Last-Event-ID must be an event id")
        start = max(start, int(last_event_id))
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
