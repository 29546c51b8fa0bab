"""Dealer calls at a table (`POST /v1/tables/{id}/calls`, issue 8): the face the dealer announced, the
match count, or a full roll keyed at a dealer terminal, compared at once with the roll the camera read
(as the rules engine recorded it for the table's latest round with that roll). A call that disagrees
raises a `dealer_call_mismatch` alert naming what differs, with the camera's evidence frame; the answer
and the alert come in the same request, so well within a second of the call.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from fastapi import APIRouter, HTTPException, status
from sqlalchemy import select

from api import audit
from api.alerts import raise_alert
from api.db.models import GameTable, Roll, Round
from api.deps import DatabaseDep, Dealer, MetricsDep, SettingsDep
from api.schemas.calls import TableCallIn, TableCallOut
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(tags=["rounds"], responses=AUTH_RESPONSES)


def _camera_shows(row: Round, roll: int) -> dict[str, Any] | None:
    summary = row.state.get("summary", {})
    if roll == 1:
        first = summary.get("first_roll")
        if first is None:
            return None
        return {"winner": first["winner"], "match_count": first["match_count"], "faces": first["faces"]}
    extra = summary.get("extra_roll")
    if extra is None:
        return None
    return {"winner": extra["winner"], "match_count": extra["final_count"], "faces": extra["faces"]}


@router.post(
    "/v1/tables/{table_id}/calls",
    response_model=TableCallOut,
    responses=errors(400, 404, (409, "No recent round at this table has that roll yet.")),
)
def table_call(
    table_id: str,
    body: TableCallIn,
    principal: Dealer,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> TableCallOut:
    """Record a dealer's call for the table's latest roll (dealer); a mismatch with the camera alerts."""
    with database.session() as session:
        if session.get(GameTable, table_id) is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no table {table_id!r}")
        shows = None
        row = None
        for candidate in session.scalars(
            select(Round).where(Round.table_id == table_id).order_by(Round.id.desc()).limit(5)
        ):
            shows = _camera_shows(candidate, body.roll)
            if shows is not None:
                row = candidate
                break
        if row is None or shows is None:
            raise HTTPException(
                status.HTTP_409_CONFLICT,
                detail=f"no recent round at table {table_id!r} has roll {body.roll} yet",
            )
        applied = session.scalars(
            select(Roll).where(Roll.round_id == row.id, Roll.applied.is_(True)).order_by(Roll.created_at)
        ).all()
        evidence = applied[body.roll - 1].evidence_sha256 if len(applied) >= body.roll else None
        called: dict[str, Any] = {}
        mismatched: list[str] = []
        if body.winner is not None:
            called["winner"] = body.winner
            if body.winner != shows["winner"]:
                mismatched.append("winner")
        if body.match_count is not None:
            called["match_count"] = body.match_count
            if body.match_count != shows["match_count"]:
                mismatched.append("match_count")
        if body.faces is not None:
            called["faces"] = body.faces
            if Counter(body.faces) != Counter(shows["faces"]):
                mismatched.append("faces")
        matches = not mismatched
        audit.append(
            session,
            actor=principal.actor,
            action="table.dealer_call",
            subject=f"round:{row.id}",
            payload={"roll": body.roll, "called": called, "camera_shows": shows, "matches": matches},
        )
        alert_id = None
        if not matches:
            alert = raise_alert(
                session,
                kind="dealer_call_mismatch",
                message=f"roll {body.roll}: the dealer called {called}, the camera read {shows} "
                f"({', '.join(mismatched)} differ)",
                actor=principal.actor,
                table_id=table_id,
                round_id=row.id,
                data={
                    "roll": body.roll,
                    "called": called,
                    "dice_show": shows,
                    "mismatched": mismatched,
                    "evidence_sha256": evidence,
                },
                webhook_urls=settings.webhook_urls,
                metrics=metrics,
            )
            alert_id = alert.id
        return TableCallOut(
            round_id=row.id,
            roll=body.roll,
            matches=matches,
            called=called,
            camera_shows=shows,
            mismatched=mismatched,
            evidence_sha256=evidence,
            alert_id=alert_id,
        )
