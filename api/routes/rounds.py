"""Rounds: opened, bet on and closed by the dealer; read by dealer, surveillance and admin; corrected
only by a supervisor (a key with the supervisor capability, or an admin), as a new linked entry.

Each route parses, calls api/round_service.py once and answers; its errors become HTTP answers in
api/http_errors.py.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from api import round_service
from api.deps import DatabaseDep, Dealer, IdPath, MetricsDep, NotWorker, SettingsDep, TableIdQuery, Viewer
from api.schemas.errors import AUTH_RESPONSES, RULES_OR_VALIDATION, errors
from api.schemas.rounds import (
    CorrectionIn,
    CorrectionOut,
    DealerCallIn,
    DealerCallOut,
    PayoutIn,
    PayoutOut,
    RoundOut,
    WagersIn,
)

router = APIRouter(tags=["rounds"], responses=AUTH_RESPONSES)

REFUSED = errors(
    (422, "A malformed request, or refused by the rules engine: every problem names its clause."),
    unprocessable=RULES_OR_VALIDATION,
)


@router.post(
    "/v1/tables/{table_id}/rounds",
    status_code=status.HTTP_201_CREATED,
    response_model=RoundOut,
    responses={**errors(404, (409, "A round is already open at this table.")), **REFUSED},
)
def open_round(table_id: str, principal: Dealer, database: DatabaseDep, settings: SettingsDep) -> RoundOut:
    """Open a round for betting (dealer); one open round per table."""
    return round_service.open_round(
        database=database, table_id=table_id, actor=principal.actor, webhook_urls=settings.webhook_urls
    )


@router.get(
    "/v1/tables/{table_id}/rounds/current",
    response_model=RoundOut,
    responses={204: {"description": "No round is open at the table."}, **errors((404, "No such table."))},
)
def current_round(table_id: str, _: Viewer, database: DatabaseDep) -> RoundOut | Response:
    """The open round at a table (dealer, surveillance, admin); 204 (no body) when none is open.

    "No open round" is an answer about a table that exists, not a missing resource: it was a 404 until
    2026-12-06, which flooded the log of every client that polls between rounds; 404 now means only that
    there is no such table. The 200 body is unchanged, so clients that read the round keep working; one
    that tested for 404 must test for 204 (or for "not 200").
    """
    found = round_service.current_round(database=database, table_id=table_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT) if found is None else found


@router.get(
    "/v1/rounds", response_model=list[RoundOut], responses=errors((404, "`table_id` names no table."))
)
def list_rounds(
    _: Viewer,
    database: DatabaseDep,
    table_id: TableIdQuery = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[RoundOut]:
    """Rounds, newest first (dealer, surveillance, admin); of one table with `table_id`."""
    return round_service.list_rounds(database=database, table_id=table_id, limit=limit)


@router.get("/v1/rounds/{round_id}", response_model=RoundOut, responses=errors(404))
def get_round(round_id: IdPath, _: Viewer, database: DatabaseDep) -> RoundOut:
    """One round with its wagers, steps, settlement and corrections (dealer, surveillance, admin)."""
    return round_service.get_round(database=database, round_id=round_id)


@router.post(
    "/v1/rounds/{round_id}/wagers",
    status_code=status.HTTP_201_CREATED,
    response_model=RoundOut,
    responses={**errors(400, 404, (409, "The round is closed.")), **REFUSED},
)
def place_wagers(
    round_id: IdPath, body: WagersIn, principal: Dealer, database: DatabaseDep, settings: SettingsDep
) -> RoundOut:
    """Place wagers by seat (dealer): all or none, validated by the rules engine."""
    return round_service.place_wagers(
        database=database,
        round_id=round_id,
        body=body,
        actor=principal.actor,
        webhook_urls=settings.webhook_urls,
    )


@router.post(
    "/v1/rounds/{round_id}/no-more-bets",
    response_model=RoundOut,
    responses={**errors(404, (409, "The round is closed.")), **REFUSED},
)
def no_more_bets(
    round_id: IdPath, principal: Dealer, database: DatabaseDep, settings: SettingsDep
) -> RoundOut:
    """Close betting (dealer); Extra Roll stakes are collected now (593.4(a))."""
    return round_service.no_more_bets(
        database=database, round_id=round_id, actor=principal.actor, webhook_urls=settings.webhook_urls
    )


@router.post(
    "/v1/rounds/{round_id}/dealer-calls",
    response_model=DealerCallOut,
    responses=errors(400, 404, (409, "The round has no such roll yet.")),
)
def dealer_call(
    round_id: IdPath,
    body: DealerCallIn,
    principal: Dealer,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> DealerCallOut:
    """Record what the dealer called for a roll (dealer); a call the dice do not show raises an alert."""
    return round_service.dealer_call(
        database=database,
        round_id=round_id,
        body=body,
        actor=principal.actor,
        webhook_urls=settings.webhook_urls,
        metrics=metrics,
    )


@router.post(
    "/v1/rounds/{round_id}/payouts",
    response_model=PayoutOut,
    responses=errors(400, 404, (409, "The round is not settled: nothing is due yet.")),
)
def record_payout(
    round_id: IdPath,
    body: PayoutIn,
    principal: Dealer,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> PayoutOut:
    """Record what the dealer paid a seat (dealer); a payment the settlement does not show raises an alert.

    The settlement compared is the latest correction's, if the round was corrected, else the round's.
    """
    return round_service.record_payout(
        database=database,
        round_id=round_id,
        body=body,
        actor=principal.actor,
        webhook_urls=settings.webhook_urls,
        metrics=metrics,
    )


@router.post(
    "/v1/rounds/{round_id}/corrections",
    status_code=status.HTTP_201_CREATED,
    response_model=CorrectionOut,
    responses={
        **errors(
            400,
            (403, "Only a supervisor key or an admin may correct a round."),
            404,
            (409, "The round is not settled, or the corrected dice do not settle it."),
        ),
        **REFUSED,
    },
)
def correct(
    round_id: IdPath, body: CorrectionIn, principal: NotWorker, database: DatabaseDep, settings: SettingsDep
) -> CorrectionOut:
    """Correct a settled round (supervisor key or admin): the engine settles the wagers again on the
    corrected dice; the result is a new entry linked to the round, which itself never changes."""
    return round_service.correct(
        database=database,
        round_id=round_id,
        body=body,
        principal=principal,
        webhook_urls=settings.webhook_urls,
    )
