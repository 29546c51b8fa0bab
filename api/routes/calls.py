"""Dealer calls at a table (`POST /v1/tables/{id}/calls`, issue 8): the face the dealer announced, the
match count, or a full roll keyed at a dealer terminal, compared at once with the roll the camera read
(as the rules engine recorded it for the table's latest round with that roll). A call that disagrees
raises a `dealer_call_mismatch` alert naming what differs, with the camera's evidence frame; the answer
and the alert come in the same request, so well within a second of the call. The comparison is
api/round_service.py's `table_call`.
"""

from __future__ import annotations

from fastapi import APIRouter

from api import round_service
from api.deps import DatabaseDep, Dealer, MetricsDep, SettingsDep
from api.schemas.calls import TableCallIn, TableCallOut
from api.schemas.errors import AUTH_RESPONSES, errors

router = APIRouter(tags=["rounds"], responses=AUTH_RESPONSES)


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
    return round_service.table_call(
        database=database,
        table_id=table_id,
        body=body,
        actor=principal.actor,
        webhook_urls=settings.webhook_urls,
        metrics=metrics,
    )
