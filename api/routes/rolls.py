"""Rolls: the rules engine's door. The reader (or a dealer terminal, keyed by hand) submits a throw; the
engine advances the round and settles; everything is committed before the answer.

- A `roll_id` sent again with the same body returns the first answer (`duplicate: true`), applied once;
  with a different body it is refused (409).
- "invalid" and "void" throws advance nothing: the answer says `rethrow: true`.
- "no_decision" (the reader cannot tell) advances nothing and raises an alert: a person must look and the
  dealer keys the roll.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from api import audit, fairness
from api.audit import canonical_json
from api.db.models import Evidence, GameTable, Read, Roll, Round
from api.deps import DatabaseDep, MetricsDep, RollSubmitter, SettingsDep, Viewer
from api.events import publish
from api.rounds import NotFoundError, RulesRefusedError, StateConflictError, advance, now_utc
from api.routes.alerts import raise_alert
from api.routes.rounds import http_error, steps_of, wager_documents
from api.schemas import DB_INT_MAX
from api.schemas.rounds import RollIn, RollOut

router = APIRouter(tags=["rolls"])


def _roll_out(row: Roll, *, duplicate: bool) -> RollOut:
    return RollOut.model_validate({**row.outcome, "duplicate": duplicate, "created_at": row.created_at})


@router.post(
    "/v1/tables/{table_id}/rolls",
    status_code=status.HTTP_201_CREATED,
    response_model=RollOut,
    responses={
        200: {
            "description": "This roll id was already applied; the first answer is repeated.",
            "model": RollOut,
        },
        404: {},
        409: {"description": "No open round, wrong round, wrong phase, or a roll id reused with other data."},
        422: {"description": "Refused by the rules engine (e.g. the wrong number of dice), by clause."},
    },
)
def submit_roll(
    table_id: str,
    body: RollIn,
    response: Response,
    principal: RollSubmitter,
    database: DatabaseDep,
    settings: SettingsDep,
    metrics: MetricsDep,
) -> RollOut:
    """Submit a throw (reader, dealer)."""
    request_sha256 = hashlib.sha256(canonical_json(body.model_dump()).encode()).hexdigest()
    try:
        with database.session() as session:

            def earlier() -> RollOut | None:
                """The first answer to this roll id, when it was already applied."""
                existing = session.scalars(
                    select(Roll).where(Roll.id == body.roll_id).execution_options(populate_existing=True)
                ).first()
                if existing is None:
                    return None
                if existing.request_sha256 != request_sha256 or existing.table_id != table_id:
                    raise StateConflictError(f"roll id {body.roll_id!r} was already used for another roll")
                response.status_code = status.HTTP_200_OK
                return _roll_out(existing, duplicate=True)

            if (answer := earlier()) is not None:
                return answer
            if session.get(GameTable, table_id) is None:
                raise NotFoundError(f"no table {table_id!r}")
            if body.evidence_sha256 is not None and session.get(Evidence, body.evidence_sha256) is None:
                raise NotFoundError(f"no evidence frame {body.evidence_sha256}; upload it first")
            if body.read_id is not None and session.get(Read, body.read_id) is None:
                raise NotFoundError(f"no read {body.read_id!r}")
            row = session.scalars(
                select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None)).with_for_update()
            ).first()
            # Look again under the round's lock: the same roll sent twice at once (PostgreSQL lets both
            # transactions pass the first look) is applied by the first and answered from it for the second.
            if (answer := earlier()) is not None:
                return answer
            if row is None:
                raise StateConflictError(f"no open round at table {table_id!r}")
            if body.round_id is not None and body.round_id != row.id:
                raise StateConflictError(f"round {body.round_id} is not the open round ({row.id})")

            steps = steps_of(row)
            applied = False
            settled = False
            new_decisions: list[dict[str, Any]] = []
            if body.verdict == "no_decision":
                message = "the reader could not decide: a person must look, and the dealer keys the roll"
                summary = row.state.get("summary", {})
            else:
                step = {
                    "op": "roll",
                    "faces": body.faces,
                    "verdict": body.verdict,
                    "reason": "; ".join(body.reasons),
                    "roll_id": body.roll_id,
                }
                before = len(row.state.get("summary", {}).get("settlements", []))
                result = advance(
                    config=row.config, wagers=wager_documents(session, row.id), steps=steps, new_step=step
                )
                summary = result.summary
                row.state = {"steps": [*steps, step], "summary": summary}
                row.phase = result.round.phase.value
                applied = body.verdict == "valid"
                new_decisions = summary["settlements"][before:] if applied else []
                if applied and result.complete:
                    settled = True
                    row.settlement = result.answer()
                    row.settled_at = now_utc()
                    row.closed_at = row.settled_at
                if applied:
                    message = "round settled" if settled else f"roll applied; round now {row.phase}"
                else:
                    message = f"{body.verdict} throw: nothing advances; rethrow the dice"

            outcome: dict[str, Any] = {
                "roll_id": body.roll_id,
                "table_id": table_id,
                "round_id": row.id,
                "applied": applied,
                "rethrow": body.verdict in ("invalid", "void"),
                "needs_review": body.verdict == "no_decision",
                "verdict": body.verdict,
                "source": body.source,
                "faces": body.faces,
                "message": message,
                "phase": row.phase,
                "settled": settled,
                "round": summary,
            }
            roll = Roll(
                id=body.roll_id,
                table_id=table_id,
                round_id=row.id,
                request_sha256=request_sha256,
                source=body.source,
                verdict=body.verdict,
                faces=body.faces,
                evidence_sha256=body.evidence_sha256,
                applied=applied,
                outcome=outcome,
                submitted_by=principal.actor,
            )
            session.add(roll)
            if applied:  # the dice fairness watch counts the dice of valid rolls (issue 49)
                fairness.record_roll(
                    session,
                    roll=roll,
                    actor=principal.actor,
                    webhook_urls=settings.webhook_urls,
                    metrics=metrics,
                )
            audit.append(
                session,
                actor=principal.actor,
                action="roll.submit",
                subject=f"round:{row.id}",
                payload={
                    "roll": body.model_dump(),
                    "applied": applied,
                    "phase": row.phase,
                    "decisions": new_decisions,
                },
            )
            event_data = {
                k: outcome[k] for k in ("roll_id", "round_id", "verdict", "source", "faces", "phase")
            }
            event_data["evidence_sha256"] = body.evidence_sha256
            if applied:
                publish(
                    session,
                    event_type="roll",
                    table_id=table_id,
                    data=event_data,
                    webhook_urls=settings.webhook_urls,
                )
            else:
                publish(
                    session,
                    event_type="invalid_roll",
                    table_id=table_id,
                    data={**event_data, "reasons": body.reasons, "rethrow": outcome["rethrow"]},
                    webhook_urls=settings.webhook_urls,
                )
            if new_decisions:
                publish(
                    session,
                    event_type="settlement",
                    table_id=table_id,
                    data={
                        "round_id": row.id,
                        "final": settled,
                        "decisions": new_decisions,
                        "seats": summary["seats"],
                    },
                    webhook_urls=settings.webhook_urls,
                )
            if body.verdict == "no_decision":
                raise_alert(
                    session,
                    kind="no_decision",
                    message=message,
                    actor=principal.actor,
                    table_id=table_id,
                    round_id=row.id,
                    data={"roll_id": body.roll_id, "reasons": body.reasons},
                    webhook_urls=settings.webhook_urls,
                    metrics=metrics,
                )
            session.flush()
            result_out = _roll_out(roll, duplicate=False)
        metrics.verdicts.labels(verdict=body.verdict, applied=str(applied).lower()).inc()
        return result_out
    except RulesRefusedError as exc:
        metrics.errors.labels(kind="refused_by_rules").inc()
        raise http_error(exc) from exc
    except IntegrityError as exc:  # a race the locks above do not cover (one roll id at two tables at once)
        raise HTTPException(
            status.HTTP_409_CONFLICT, detail=f"roll {body.roll_id!r} conflicts with another; send it again"
        ) from exc
    except (NotFoundError, StateConflictError) as exc:
        raise http_error(exc) from exc


@router.get("/v1/tables/{table_id}/rolls", response_model=list[RollOut])
def list_rolls(
    table_id: str,
    _: Viewer,
    database: DatabaseDep,
    round_id: Annotated[int | None, Query(ge=1, le=DB_INT_MAX)] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> list[RollOut]:
    """Rolls at a table, newest first (dealer, surveillance, admin)."""
    query = select(Roll).where(Roll.table_id == table_id)
    if round_id is not None:
        query = query.where(Roll.round_id == round_id)
    with database.read_session() as session:
        rows = session.scalars(query.order_by(Roll.created_at.desc()).limit(limit)).all()
        return [_roll_out(row, duplicate=False) for row in rows]


@router.get("/v1/rolls/{roll_id}", response_model=RollOut, responses={404: {}})
def get_roll(roll_id: str, _: Viewer, database: DatabaseDep) -> RollOut:
    """One roll and what it did (dealer, surveillance, admin)."""
    with database.read_session() as session:
        row = session.get(Roll, roll_id)
        if row is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, detail=f"no roll {roll_id!r}")
        return _roll_out(row, duplicate=False)
