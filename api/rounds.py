"""Rounds, wagers and rolls: the service drives the rules engine's round state machine and stores it.

The rules engine (`rules.hrd.round`) decides everything; this module only stores and replays. A round
row keeps its configuration (paytable and settings at opening), its wagers, and the list of steps taken
("no more bets", each roll with its verdict). The engine's `Round` is rebuilt by replaying those steps
through the engine's own transitions, so what is stored is exactly what the engine was given, and a
replay always reproduces the same decisions.

`submit_roll` is the rules engine's door for a throw (the reader's or one keyed by a dealer): it advances
and settles the round, stores the roll with its answer, audits it, publishes its events and raises the
alert a `no_decision` calls for, all in one transaction.

Errors are api/errors.py's (re-exported here for the callers that name them `rounds.*`); the one
exception handler of api/http_errors.py turns them into HTTP answers.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from api import audit, fairness
from api.alerts import raise_alert
from api.audit import canonical_json
from api.auth import Principal, Role
from api.db.models import Evidence, GameTable, Read, Round
from api.db.models import Roll as RollRow
from api.db.models import Wager as WagerRow
from api.db.session import Database

# Re-exported: callers name them `rounds.NotFoundError` etc. (api/console_decisions.py, api/rules_door.py).
from api.errors import ForbiddenError as ForbiddenError
from api.errors import NotFoundError as NotFoundError
from api.errors import RulesRefusedError as RulesRefusedError
from api.errors import ServiceError as ServiceError
from api.errors import StateConflictError as StateConflictError
from api.events import publish
from api.metrics import Metrics
from api.schemas.rolls import RollAnswer, RollSubmission
from rules.games import DocumentRefusedError, Problem, RulesError
from rules.hrd import round as engine
from rules.hrd.dice import NO_MATCH
from rules.hrd.document import round_answer
from rules.hrd.paytable import Odds, parse_paytable
from rules.hrd.settings import parse_settings
from rules.hrd.settlement import Settlement
from rules.hrd.wagers import Wager, WagerKind

# --- configuration -----------------------------------------------------------------------------------


def check_table_config(*, game: str, paytable: Mapping[str, Any] | None, settings: Mapping[str, Any]) -> None:
    """Let the rules engine check a table's paytable and settings.

    Raises:
        RulesRefusedError: a problem in either, by clause.
    """
    problems: list[Problem] = []
    if paytable is not None:
        _, found = parse_paytable(paytable, game=game)
        problems.extend(found)
    _, found = parse_settings(settings)
    problems.extend(found)
    if problems:
        raise RulesRefusedError(problems)


def _open(config: Mapping[str, Any]) -> engine.Round:
    game = str(config["game"])
    settings, problems = parse_settings(config.get("settings") or {})
    paytable = None
    if config.get("paytable") is not None:
        paytable, more = parse_paytable(config["paytable"], game=game)
        problems.extend(more)
    if problems:
        raise RulesRefusedError(problems)
    try:
        return engine.open_round(game, paytable=paytable, settings=settings)
    except DocumentRefusedError as exc:
        raise RulesRefusedError(exc.problems) from exc


# --- wagers as JSON ----------------------------------------------------------------------------------


def wager_from_document(doc: Mapping[str, Any]) -> Wager:
    """A stored wager document (amount as a decimal string) as the engine's `Wager`."""
    count = doc.get("count")
    return Wager(
        seat=int(doc["seat"]),
        kind=WagerKind(doc["kind"]),
        amount=Decimal(str(doc["amount"])),
        face=doc.get("face"),
        # "no_match" is the 6-dice circle; on another game the engine refuses the circle, by clause.
        count=NO_MATCH if count == "no_match" else count,
    )


def wager_document(wager: Wager, *, game: str) -> dict[str, Any]:
    """The engine's `Wager` as JSON (amount as a decimal string; "no_match" for the 6-dice circle)."""
    count: int | str | None = wager.count
    if game == "hrd6" and count == NO_MATCH:
        count = "no_match"
    return {
        "seat": wager.seat,
        "kind": wager.kind.value,
        "amount": str(wager.amount),
        "face": wager.face,
        "count": count,
    }


def _odds_text(odds: Odds | None) -> str | None:
    return None if odds is None else odds.text


def settlement_document(settlement: Settlement, *, game: str) -> dict[str, Any]:
    """One decision as JSON."""
    return {
        "wager_index": settlement.wager_index,
        "wager": wager_document(settlement.wager, game=game),
        "result": settlement.result.value,
        "win": str(settlement.win),
        "roll": settlement.roll,
        "odds": _odds_text(settlement.odds),
        "clause": settlement.clause,
    }


def round_summary(rnd: engine.Round) -> dict[str, Any]:
    """What the engine's round says, as JSON: phase, rolls, rethrows, decisions and seat totals."""
    first = rnd.first_roll
    extra = rnd.extra_roll
    return {
        "phase": rnd.phase.value,
        "first_roll": None
        if first is None
        else {
            "faces": list(first.faces),
            "winner": first.winner,
            "match_count": first.match_count,
            "no_match": first.no_match,
        },
        "extra_roll": None
        if extra is None
        else {
            "winner": extra.winner,
            "kept": extra.kept,
            "faces": list(extra.faces),
            "new_matches": extra.new_matches,
            "final_count": extra.final_count,
        },
        "dice_to_rethrow": rnd.dice_to_rethrow if rnd.phase is engine.Phase.AWAITING_EXTRA_ROLL else None,
        "rethrows": [
            {"roll": r.roll, "verdict": r.verdict.value, "faces": list(r.faces), "reason": r.reason}
            for r in rnd.rethrows
        ],
        "settlements": [settlement_document(s, game=rnd.game) for s in rnd.settlements_in_wager_order()],
        "pending": list(rnd.pending),
        "seats": {
            str(seat): {"staked": str(t.staked), "won": str(t.won), "lost": str(t.lost), "net": str(t.net)}
            for seat, t in engine.seat_totals(rnd).items()
        },
    }


# --- replay -------------------------------------------------------------------------------------------


def _apply_step(rnd: engine.Round, step: Mapping[str, Any]) -> engine.Round:
    op = step["op"]
    if op == "no_more_bets":
        return engine.no_more_bets(rnd)
    if op == "roll":
        after = engine.record_roll(
            rnd, list(step["faces"]), verdict=step["verdict"], reason=str(step.get("reason", ""))
        )
        if after.phase is engine.Phase.FIRST_ROLL:
            after = engine.settle_first_roll(after)
        if after.phase is engine.Phase.EXTRA_ROLL:
            after = engine.settle_extra_roll(after)
        return after
    raise ValueError(f"unknown round step {op!r}")


def replay(
    config: Mapping[str, Any], wagers: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]
) -> engine.Round:
    """Rebuild the engine's round from what was stored.

    Raises:
        RulesRefusedError: the engine refuses a wager or a roll.
        StateConflictError: a step does not fit the round's phase.
    """
    try:
        rnd = _open(config)
        if wagers:
            rnd = engine.place_wagers(rnd, [wager_from_document(w) for w in wagers])
        for step in steps:
            rnd = _apply_step(rnd, step)
    except DocumentRefusedError as exc:
        raise RulesRefusedError(exc.problems) from exc
    except engine.RoundStateError as exc:
        raise StateConflictError(str(exc)) from exc
    except RulesError as exc:
        raise RulesRefusedError([Problem("document", str(exc), None)]) from exc
    return rnd


@dataclass(frozen=True)
class StepResult:
    """The engine's round after a step, and the summary to store."""

    round: engine.Round
    summary: dict[str, Any]

    @property
    def complete(self) -> bool:
        """True once every wager is decided."""
        return self.round.phase is engine.Phase.COMPLETE

    def answer(self) -> dict[str, Any]:
        """The settlement of a complete round, in exactly the form `POST /v1/settle` answers."""
        if not self.complete:
            raise StateConflictError(f"the round is in phase {self.round.phase.value}, not complete")
        return round_answer(self.round)


def advance(
    *,
    config: Mapping[str, Any],
    wagers: Sequence[Mapping[str, Any]],
    steps: Sequence[Mapping[str, Any]],
    new_step: Mapping[str, Any] | None = None,
    new_wagers: Sequence[Mapping[str, Any]] = (),
) -> StepResult:
    """Replay the round and apply one more step or more wagers (all or none)."""
    rnd = replay(config, wagers, steps)
    try:
        if new_wagers:
            rnd = engine.place_wagers(rnd, [wager_from_document(w) for w in new_wagers], field="wagers")
        if new_step is not None:
            rnd = _apply_step(rnd, new_step)
    except DocumentRefusedError as exc:
        raise RulesRefusedError(exc.problems) from exc
    except engine.RoundStateError as exc:
        raise StateConflictError(str(exc)) from exc
    return StepResult(round=rnd, summary=round_summary(rnd))


def now_utc() -> datetime:
    """Timezone-aware now."""
    return datetime.now(UTC)


# --- rolls --------------------------------------------------------------------------------------------


def wager_documents(session: Session, round_id: int) -> list[dict[str, Any]]:
    """The round's wagers in the order placed."""
    rows = session.scalars(select(WagerRow).where(WagerRow.round_id == round_id).order_by(WagerRow.id)).all()
    return [row.document for row in rows]


def steps_of(row: Round) -> list[dict[str, Any]]:
    """The steps taken so far."""
    return list(row.state.get("steps", []))


def roll_answer(row: RollRow, *, duplicate: bool) -> RollAnswer:
    """The answer a stored roll gave (`duplicate`: this is a repeat of it)."""
    return RollAnswer.model_validate({**row.outcome, "duplicate": duplicate, "created_at": row.created_at})


@dataclass(frozen=True)
class SubmittedRoll:
    """What `submit_roll` did: the answer, and whether it repeats the first answer to this roll id."""

    answer: RollAnswer
    duplicate: bool


# The source of a roll each role may submit: the camera's reader (reader and worker keys) or the dealer.
ROLE_SOURCE = {Role.READER: "reader", Role.WORKER: "reader", Role.DEALER: "dealer"}
_SOURCE_SAYS = {"reader": "the camera's reading", "dealer": "keyed by the dealer"}


def roll_source(*, role: Role, claimed: str | None) -> str:
    """The source of a roll sent with a key of `role`: the role's, never the body's (issue 57).

    Raises:
        ForbiddenError: the body claims another source than the role's, or the role submits no rolls.
    """
    source = ROLE_SOURCE.get(role)
    if source is None:
        raise ForbiddenError(f"a {role.value} key submits no rolls")
    if claimed is not None and claimed != source:
        raise ForbiddenError(
            f"a {role.value} key's rolls are {source!r} ({_SOURCE_SAYS[source]}): it may not submit a roll "
            f"as {claimed!r}; leave `source` out, the service sets it from the key"
        )
    return source


def submit_roll_as(
    *,
    database: Database,
    table_id: str,
    body: RollSubmission,
    principal: Principal,
    webhook_urls: list[str],
    metrics: Metrics,
    lease_epoch: int | None = None,
    worker_id: str | None = None,
) -> SubmittedRoll:
    """`submit_roll` for a key (`POST /v1/tables/{id}/rolls`): the roll's source is the key's role's
    (`roll_source`), and a bound worker key acts as its own worker id.

    Raises:
        ForbiddenError: a source the key cannot back; a bound worker key naming another worker id.
        and what `submit_roll` raises.
    """
    worker_id = principal.acts_as(worker_id)
    body = body.model_copy(update={"source": roll_source(role=principal.role, claimed=body.source)})
    try:
        return submit_roll(
            database=database,
            table_id=table_id,
            body=body,
            actor=principal.actor,
            webhook_urls=webhook_urls,
            metrics=metrics,
            lease_epoch=lease_epoch,
            worker_id=worker_id,
        )
    except RulesRefusedError:
        metrics.errors.labels(kind="refused_by_rules").inc()
        raise


def submit_roll(
    *,
    database: Database,
    table_id: str,
    body: RollSubmission,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
    lease_epoch: int | None = None,
    worker_id: str | None = None,
) -> SubmittedRoll:
    """Apply a throw to the table's open round and commit it with its answer, audit entry and events.

    The service's own callers (the in-process rules door, the dealer console) name the source in the body;
    a key's roll comes through `submit_roll_as`, which sets it from the key's role. A roll id sent again with
    the same body is answered from the first (`duplicate`), applied once. "invalid" and "void" advance
    nothing (`rethrow`); "no_decision" advances nothing and raises an alert. A table worker's roll carries
    its lease (`lease_epoch`, `worker_id`): a new roll from a worker whose lease another worker has taken
    over since is refused (api.leases.fence_refusal); a roll id already applied is still answered as a
    duplicate, as nothing is applied again.

    Raises:
        ValueError: the body names no source (a caller's mistake: the service's callers always name it).
        NotFoundError: no such table, evidence frame, read or round.
        StateConflictError: no open round, another round named, a roll id reused with other data, one
            roll id at two tables at once, or a superseded worker's lease (`lease_superseded`).
        RulesRefusedError: the rules engine refused the roll, by clause.
    """
    if body.source is None:
        raise ValueError("a roll's source must be named: reader or dealer (a key's roll: submit_roll_as)")
    return _submit(
        database=database,
        table_id=table_id,
        body=body,
        actor=actor,
        webhook_urls=webhook_urls,
        metrics=metrics,
        lease_epoch=lease_epoch,
        worker_id=worker_id,
    )


def _submit(
    *,
    database: Database,
    table_id: str,
    body: RollSubmission,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
    lease_epoch: int | None,
    worker_id: str | None,
) -> SubmittedRoll:
    """`submit_roll` once the key's part is settled: the roll in one transaction."""
    request_sha256 = hashlib.sha256(canonical_json(body.model_dump()).encode()).hexdigest()
    try:
        with database.session() as session:

            def earlier() -> RollAnswer | None:
                """The first answer to this roll id, when it was already applied."""
                existing = session.scalars(
                    select(RollRow)
                    .where(RollRow.id == body.roll_id)
                    .execution_options(populate_existing=True)
                ).first()
                if existing is None:
                    return None
                if existing.request_sha256 != request_sha256 or existing.table_id != table_id:
                    raise StateConflictError(f"roll id {body.roll_id!r} was already used for another roll")
                return roll_answer(existing, duplicate=True)

            if (answer := earlier()) is not None:
                return SubmittedRoll(answer, duplicate=True)
            if session.get(GameTable, table_id) is None:
                raise NotFoundError(f"no table {table_id!r}")
            if body.evidence_sha256 is not None and session.get(Evidence, body.evidence_sha256) is None:
                raise NotFoundError(f"no evidence frame {body.evidence_sha256}; upload it first")
            if body.read_id is not None and session.get(Read, body.read_id) is None:
                raise NotFoundError(f"no read {body.read_id!r}")
            if body.round_id is not None and session.get(Round, body.round_id) is None:
                raise NotFoundError(f"no round {body.round_id}")
            if lease_epoch is not None:
                from api.leases import fence_refusal

                refusal = fence_refusal(session, table_id=table_id, epoch=lease_epoch, worker_id=worker_id)
                if refusal is not None:
                    raise StateConflictError(refusal)
            row = session.scalars(
                select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None)).with_for_update()
            ).first()
            # Look again under the round's lock: the same roll sent twice at once (PostgreSQL lets both
            # transactions pass the first look) is applied by the first and answered from it for the second.
            if (answer := earlier()) is not None:
                return SubmittedRoll(answer, duplicate=True)
            if row is None:
                raise StateConflictError(f"no open round at table {table_id!r}")
            if body.round_id is not None and body.round_id != row.id:
                raise StateConflictError(f"round {body.round_id} is not the open round ({row.id})")
            taken = _take_roll(session, row=row, table_id=table_id, body=body)
            roll = RollRow(
                id=body.roll_id,
                table_id=table_id,
                round_id=row.id,
                request_sha256=request_sha256,
                source=taken.outcome["source"],
                verdict=body.verdict,
                faces=body.faces,
                evidence_sha256=body.evidence_sha256,
                applied=taken.outcome["applied"],
                outcome=taken.outcome,
                submitted_by=actor,
            )
            session.add(roll)
            if roll.applied:  # the dice fairness watch counts the dice of valid rolls (issue 49)
                fairness.record_roll(
                    session, roll=roll, actor=actor, webhook_urls=webhook_urls, metrics=metrics
                )
            _record_roll(
                session,
                taken=taken,
                row=row,
                table_id=table_id,
                body=body,
                actor=actor,
                webhook_urls=webhook_urls,
                metrics=metrics,
            )
            session.flush()
            answer = roll_answer(roll, duplicate=False)
    except IntegrityError as exc:  # a race the locks above do not cover (one roll id at two tables at once)
        raise StateConflictError(f"roll {body.roll_id!r} conflicts with another; send it again") from exc
    metrics.verdicts.labels(verdict=body.verdict, applied=str(answer.applied).lower()).inc()
    return SubmittedRoll(answer, duplicate=False)


@dataclass(frozen=True)
class _Taken:
    """What the engine made of a throw: the answer's fields and the decisions it added."""

    outcome: dict[str, Any]
    new_decisions: list[dict[str, Any]]


def _take_roll(session: Session, *, row: Round, table_id: str, body: RollSubmission) -> _Taken:
    """Let the engine take the throw: a valid one advances the round (`row`, updated) and may settle it."""
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
    return _Taken(outcome=outcome, new_decisions=new_decisions)


def _record_roll(
    session: Session,
    *,
    taken: _Taken,
    row: Round,
    table_id: str,
    body: RollSubmission,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> None:
    """Audit the roll, publish its events (roll or invalid_roll, settlement) and raise a no_decision alert."""
    outcome = taken.outcome
    audit.append(
        session,
        actor=actor,
        action="roll.submit",
        subject=f"round:{row.id}",
        payload={
            "roll": body.model_dump(),
            "applied": outcome["applied"],
            "phase": row.phase,
            "decisions": taken.new_decisions,
        },
    )
    event_data = {k: outcome[k] for k in ("roll_id", "round_id", "verdict", "source", "faces", "phase")}
    event_data["evidence_sha256"] = body.evidence_sha256
    if outcome["applied"]:
        publish(session, event_type="roll", table_id=table_id, data=event_data, webhook_urls=webhook_urls)
    else:
        publish(
            session,
            event_type="invalid_roll",
            table_id=table_id,
            data={**event_data, "reasons": body.reasons, "rethrow": outcome["rethrow"]},
            webhook_urls=webhook_urls,
        )
    if taken.new_decisions:
        publish(
            session,
            event_type="settlement",
            table_id=table_id,
            data={
                "round_id": row.id,
                "final": outcome["settled"],
                "decisions": taken.new_decisions,
                "seats": outcome["round"]["seats"],
            },
            webhook_urls=webhook_urls,
        )
    if body.verdict == "no_decision":
        raise_alert(
            session,
            kind="no_decision",
            message=outcome["message"],
            actor=actor,
            table_id=table_id,
            round_id=row.id,
            data={"roll_id": body.roll_id, "reasons": body.reasons},
            webhook_urls=webhook_urls,
            metrics=metrics,
        )
