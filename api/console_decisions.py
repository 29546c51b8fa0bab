"""The table console's decisions (issue 56): a person's decision of a roll the reader left to a person.

`decide` turns it into a dealer roll naming the read it decides (`read_id`), through the rules engine's one
door (`api.rounds.submit_roll`), and keeps beside it a `console_decisions` row: the call, the faces, and the
labelled boxes (each die of the read with the person's face, or struck out as no die; each die the camera
missed, added by a click), so a later refit can learn from them. A decision of a roll that no longer waits
(the round moved on) is refused (`StaleRollError`); the same decision sent again is answered from the first
(a reload after submitting), another one refused. Where the person gave a die the reader was sure of
another face, or struck it out, the decision is a *mismatch*: a `dealer_read_mismatch` alert for
surveillance, who acknowledge it (`acknowledge_mismatch`), audited.

Exceptions (the routes turn them into HTTP answers)::

    api.rounds.ServiceError
    ├── api.rounds.NotFoundError       no such table, roll or decision
    ├── api.rounds.StateConflictError  a decision that does not fit (409)
    │   └── StaleRollError             the roll no longer waits for a person: the round moved on
    ├── api.rounds.RulesRefusedError   the rules engine refused the dealer roll, by clause (422)
    └── DecisionRefusedError           the decision itself is incomplete (a counted die with no face) (422)
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit, rounds
from api.alerts import acknowledge_alert, raise_alert
from api.audit import canonical_json
from api.console import WaitingRoll, newest_roll, waiting_roll
from api.db.models import Alert, ConsoleDecision, Roll, Round
from api.db.session import Database
from api.metrics import Metrics
from api.schemas.console import MismatchOut
from api.schemas.rolls import RollAnswer, RollSubmission

Call = Literal["valid", "off_table", "die_on_die", "cocked_multi_side"]

# The calls a person may make, the verdict each is, and the rule that makes it one (675a.4(b)-(c)).
CALLS: dict[str, tuple[str, str]] = {
    "valid": ("valid", "the dice as keyed"),
    "off_table": ("invalid", "675a.4(b): a die went off the table; the roll is invalid"),
    "die_on_die": ("invalid", "675a.4(b): a die came to rest on top of another; the roll is invalid"),
    "cocked_multi_side": (
        "void",
        "675a.4(c): a die rests cocked on more than one side; the roll is void and rethrown",
    ),
}

MISMATCH_ALERT = "dealer_read_mismatch"
DECIDE_ACTION = "console.decide"
ACKNOWLEDGE_ACTION = "console.mismatch_acknowledge"


class DecisionRefusedError(rounds.ServiceError):
    """The decision is incomplete or does not fit the read (a counted die without a face, a wrong count of
    dice decisions)."""


class StaleRollError(rounds.StateConflictError):
    """The roll no longer waits for a person: the round moved on (a later roll, or the round closed)."""


@dataclass(frozen=True)
class DieCall:
    """The person's word on one die of the read: its face (None: not given), or struck out (no die)."""

    face: int | None
    struck: bool = False


@dataclass(frozen=True)
class AddedDie:
    """A die the camera missed, added by a click: where, and its face."""

    box_xyxy: tuple[float, float, float, float]
    face: int


@dataclass(frozen=True)
class Decision:
    """A person's decision of a waiting roll."""

    roll_id: str
    round_id: int
    call: Call
    dice: tuple[DieCall, ...]
    added: tuple[AddedDie, ...] = ()


@dataclass(frozen=True)
class Decided:
    """What a decision did: the dealer roll's answer, whether it repeats the first, and the mismatch."""

    answer: RollAnswer
    duplicate: bool
    dealer_roll_id: str
    read_id: str
    mismatch: bool
    alert_id: int | None


# --- a decision -------------------------------------------------------------------------------------------


def dealer_roll_id(roll_id: str) -> str:
    """The id of the dealer roll that decides `roll_id` (one per waiting roll, so a repeat applies once)."""
    candidate = f"{roll_id}:person"
    return candidate if len(candidate) <= 100 else "person-" + hashlib.sha256(roll_id.encode()).hexdigest()


def decision_sha256(decision: Decision) -> str:
    """The decision's fingerprint: the same decision sent again is answered from the first."""
    body = {
        "roll_id": decision.roll_id,
        "round_id": decision.round_id,
        "call": decision.call,
        "dice": [[d.face, d.struck] for d in decision.dice],
        "added": [[list(a.box_xyxy), a.face] for a in decision.added],
    }
    return hashlib.sha256(canonical_json(body).encode()).hexdigest()


@dataclass(frozen=True)
class _Keyed:
    """A decision checked against its read: the faces keyed, the labelled boxes, the dice in dispute."""

    faces: list[int]
    boxes: list[dict[str, Any]]
    disputed: list[dict[str, Any]]


def labelled_boxes(waiting: WaitingRoll, decision: Decision) -> _Keyed:
    """Check a decision against the waiting roll's read and make its labelled boxes.

    Raises:
        DecisionRefusedError: one word per die of the read is not given, or a counted die of a valid call
            has no face.
    """
    if len(decision.dice) != len(waiting.dice):
        raise DecisionRefusedError(
            f"the read has {len(waiting.dice)} dice; the decision names {len(decision.dice)} "
            "(one entry per die of the read, in the read's order)"
        )
    keyed: list[tuple[float, float, int]] = []  # (row key, x, face) of each counted die
    boxes: list[dict[str, Any]] = []
    disputed: list[dict[str, Any]] = []
    by_index = {d.index: d for d in waiting.dice}
    for index, said in enumerate(decision.dice):
        die = by_index[index]
        counted = not said.struck and not die.kept
        if counted and said.face is None and decision.call == "valid":
            raise DecisionRefusedError(
                f"die {die.order + 1} (in reading order) has no face: type its face, strike it out "
                "as no die, or call the roll invalid or void"
            )
        if counted and said.face is not None:
            keyed.append((float(die.order), 0.0, said.face))
        boxes.append(
            {
                "box_xyxy": list(die.box_xyxy),
                "label": "no_die" if said.struck else "die",
                "face": None if said.struck else said.face,
                "origin": "reader",
                "read_index": index,
                "reader_face": die.face,
                "reader_confidence": die.confidence,
                "reader_sure": not die.uncertain,
                "kept": die.kept,
            }
        )
        sure = die.face is not None and not die.uncertain and not die.kept
        if decision.call == "valid" and sure and (said.struck or said.face != die.face):
            disputed.append(
                {
                    "die": die.order + 1,
                    "reader_face": die.face,
                    "reader_confidence": die.confidence,
                    "person": "struck out" if said.struck else said.face,
                }
            )
    for added in decision.added:
        cx = (added.box_xyxy[0] + added.box_xyxy[2]) / 2.0
        cy = (added.box_xyxy[1] + added.box_xyxy[3]) / 2.0
        # An added die goes after the read's dice of its row: its rank among them by its centre's height.
        rank = sum(1 for d in waiting.dice if (d.box_xyxy[1] + d.box_xyxy[3]) / 2.0 <= cy)
        keyed.append((rank - 0.5, cx, added.face))
        boxes.append(
            {
                "box_xyxy": list(added.box_xyxy),
                "label": "die",
                "face": added.face,
                "origin": "person",
                "read_index": None,
                "reader_face": None,
                "reader_confidence": None,
                "reader_sure": False,
                "kept": False,
            }
        )
    faces = [face for _, _, face in sorted(keyed)]
    return _Keyed(faces=faces, boxes=boxes, disputed=disputed)


def decide(
    *,
    database: Database,
    table_id: str,
    decision: Decision,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> Decided:
    """Submit a person's decision of a waiting roll as a dealer roll naming its read, and keep its labels.

    Raises:
        NotFoundError: no such table or roll at it.
        StaleRollError: the roll no longer waits for a person (the round moved on).
        StateConflictError: the roll was decided already, otherwise; it has no read.
        DecisionRefusedError: the decision does not fit the read.
        RulesRefusedError: the rules engine refused the dealer roll, by clause.
    """
    request_sha256 = decision_sha256(decision)
    verdict, rule_text = CALLS[decision.call]
    with database.read_session() as session:
        roll = session.get(Roll, decision.roll_id)
        if roll is None or roll.table_id != table_id:
            raise rounds.NotFoundError(f"no roll {decision.roll_id!r} at table {table_id!r}")
        earlier = session.get(ConsoleDecision, decision.roll_id)
        waiting = None if earlier is not None else waiting_roll(session, table_id)
        if earlier is None and (waiting is None or waiting.roll_id != decision.roll_id):
            raise StaleRollError(_moved_on(session, roll, table_id))
    if earlier is not None:
        return _repeat(
            database=database,
            earlier=earlier,
            request_sha256=request_sha256,
            rule_text=rule_text,
            table_id=table_id,
            actor=actor,
            webhook_urls=webhook_urls,
            metrics=metrics,
        )
    if waiting is None:  # pragma: no cover - refused above as stale
        raise StaleRollError(f"roll {decision.roll_id!r} no longer waits for a person")
    if waiting.round_id != decision.round_id:
        raise StaleRollError(
            f"roll {decision.roll_id!r} is of round {waiting.round_id}, not {decision.round_id}"
        )
    if waiting.read_id is None:
        raise rounds.StateConflictError(
            f"roll {decision.roll_id!r} has no read to decide: key it as a dealer roll instead"
        )
    keyed = labelled_boxes(waiting, decision)
    submission = RollSubmission(
        roll_id=dealer_roll_id(decision.roll_id),
        source="dealer",
        verdict=verdict,  # type: ignore[arg-type]  # one of CALLS' verdicts
        faces=keyed.faces,
        reasons=[] if decision.call == "valid" else [rule_text],
        round_id=decision.round_id,
        evidence_sha256=waiting.evidence_sha256,
        read_id=waiting.read_id,
    )
    submitted = rounds.submit_roll(
        database=database,
        table_id=table_id,
        body=submission,
        actor=actor,
        webhook_urls=webhook_urls,
        metrics=metrics,
    )
    alert_id = _record(
        database=database,
        waiting=waiting,
        decision=decision,
        keyed=keyed,
        submission=submission,
        request_sha256=request_sha256,
        actor=actor,
        webhook_urls=webhook_urls,
        metrics=metrics,
    )
    return Decided(
        answer=submitted.answer,
        duplicate=submitted.duplicate,
        dealer_roll_id=submission.roll_id,
        read_id=waiting.read_id,
        mismatch=bool(keyed.disputed),
        alert_id=alert_id,
    )


def _repeat(
    *,
    database: Database,
    earlier: ConsoleDecision,
    request_sha256: str,
    rule_text: str,
    table_id: str,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> Decided:
    """A decision of a roll decided before: the same one is answered from the first (a reload after
    submitting), another one refused."""
    if earlier.request_sha256 != request_sha256:
        raise rounds.StateConflictError(
            f"roll {earlier.roll_id!r} was already decided by {earlier.decided_by} "
            f"({earlier.verdict} {earlier.faces})"
        )
    submitted = rounds.submit_roll(
        database=database,
        table_id=table_id,
        body=_stored_submission(earlier, rule_text),
        actor=actor,
        webhook_urls=webhook_urls,
        metrics=metrics,
    )
    return Decided(
        answer=submitted.answer,
        duplicate=True,
        dealer_roll_id=earlier.dealer_roll_id,
        read_id=earlier.read_id,
        mismatch=earlier.mismatch,
        alert_id=_mismatch_alert_id(database, earlier.roll_id),
    )


def _moved_on(session: Session, roll: Roll, table_id: str) -> str:
    """Why a roll no longer waits, in words."""
    if roll.verdict != "no_decision":
        return f"roll {roll.id!r} is a {roll.verdict} roll, not one left to a person"
    row = session.get(Round, roll.round_id) if roll.round_id is not None else None
    if row is None or row.closed_at is not None:
        return f"roll {roll.id!r} no longer waits for a person: its round {roll.round_id} has closed"
    newest = newest_roll(session, row.id)
    later = "" if newest is None else f" (newest roll {newest.id!r}, {newest.verdict})"
    return (
        f"roll {roll.id!r} no longer waits for a person: the round moved on{later}; "
        f"round {row.id} is now in phase {row.phase}"
    )


def _stored_submission(earlier: ConsoleDecision, rule_text: str) -> RollSubmission:
    """The dealer roll a stored decision sent, rebuilt exactly (its repeat is answered as a duplicate)."""
    return RollSubmission(
        roll_id=earlier.dealer_roll_id,
        source="dealer",
        verdict=earlier.verdict,  # type: ignore[arg-type]  # stored from CALLS
        faces=list(earlier.faces),
        reasons=[] if earlier.verdict == "valid" else [rule_text],
        round_id=earlier.round_id,
        evidence_sha256=earlier.evidence_sha256,
        read_id=earlier.read_id,
    )


def _mismatch_alert_id(database: Database, roll_id: str) -> int | None:
    with database.read_session() as session:
        return _mismatch_alert(session, roll_id)


def _mismatch_alert(session: Session, roll_id: str) -> int | None:
    for alert in session.scalars(select(Alert).where(Alert.kind == MISMATCH_ALERT).order_by(Alert.id.desc())):
        if (alert.data or {}).get("roll_id") == roll_id:
            return alert.id
    return None


def _record(
    *,
    database: Database,
    waiting: WaitingRoll,
    decision: Decision,
    keyed: _Keyed,
    submission: RollSubmission,
    request_sha256: str,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> int | None:
    """Keep the decision with its labelled boxes, audit what the camera and the person said, close the
    roll's `no_decision` alert and raise a mismatch alert where the person overruled a sure die."""
    with database.session() as session:
        if session.get(ConsoleDecision, decision.roll_id) is not None:  # the same decision at the same time
            return _mismatch_alert(session, decision.roll_id)
        session.add(
            ConsoleDecision(
                roll_id=decision.roll_id,
                dealer_roll_id=submission.roll_id,
                table_id=waiting.table_id,
                round_id=waiting.round_id,
                read_id=submission.read_id or "",
                evidence_sha256=waiting.evidence_sha256,
                verdict=submission.verdict,
                rule=None if decision.call == "valid" else decision.call,
                faces=keyed.faces,
                boxes=keyed.boxes,
                request_sha256=request_sha256,
                mismatch=bool(keyed.disputed),
                decided_by=actor,
            )
        )
        audit.append(
            session,
            actor=actor,
            action=DECIDE_ACTION,
            subject=f"round:{waiting.round_id}",
            payload={
                "roll_id": decision.roll_id,
                "dealer_roll_id": submission.roll_id,
                "read_id": submission.read_id,
                # The reader's word on each die of its read, in the read's order: face, confidence, sure.
                "camera_said": [
                    [d.face, round(d.confidence, 4), not d.uncertain]
                    for d in sorted(waiting.dice, key=lambda d: d.index)
                ],
                "person_said": {"call": decision.call, "faces": keyed.faces, "boxes": keyed.boxes},
                "disputed": keyed.disputed,
            },
        )
        for alert in session.scalars(
            select(Alert).where(
                Alert.kind == "no_decision",
                Alert.table_id == waiting.table_id,
                Alert.round_id == waiting.round_id,
                Alert.acknowledged_at.is_(None),
            )
        ):
            if (alert.data or {}).get("roll_id") == decision.roll_id:
                acknowledge_alert(session, alert, actor=actor, payload={"decided_by": submission.roll_id})
        if not keyed.disputed:
            return None
        said = "; ".join(
            f"die {d['die']}: camera {d['reader_face']}, person {d['person']}" for d in keyed.disputed
        )
        alert = raise_alert(
            session,
            kind=MISMATCH_ALERT,
            message=f"the dealer's keyed roll disagrees with faces the reader was sure of ({said})",
            actor=actor,
            table_id=waiting.table_id,
            round_id=waiting.round_id,
            data={
                "roll_id": decision.roll_id,
                "dealer_roll_id": submission.roll_id,
                "read_id": submission.read_id,
                "evidence_sha256": waiting.evidence_sha256,
                "disputed": keyed.disputed,
            },
            webhook_urls=webhook_urls,
            metrics=metrics,
        )
        return alert.id


# --- surveillance: the dealer's call and the camera ------------------------------------------------------


def mismatches(
    session: Session, *, table_id: str | None, open_only: bool, limit: int
) -> list[ConsoleDecision]:
    """Decisions where the person overruled a die the reader was sure of, newest first."""
    query = select(ConsoleDecision).where(ConsoleDecision.mismatch.is_(True))
    if table_id is not None:
        query = query.where(ConsoleDecision.table_id == table_id)
    if open_only:
        query = query.where(ConsoleDecision.acknowledged_at.is_(None))
    return list(session.scalars(query.order_by(ConsoleDecision.created_at.desc()).limit(limit)))


def acknowledge_mismatch(session: Session, *, roll_id: str, actor: str, note: str) -> ConsoleDecision:
    """Mark a mismatch seen by surveillance: on the decision, in the audit trail, and its alert acknowledged.

    Raises:
        NotFoundError: no decision of that roll, or it is no mismatch.
        StateConflictError: it is already acknowledged.
    """
    row = session.get(ConsoleDecision, roll_id, with_for_update=True)
    if row is None or not row.mismatch:
        raise rounds.NotFoundError(f"no mismatch of roll {roll_id!r}")
    if row.acknowledged_at is not None:
        raise rounds.StateConflictError(
            f"the mismatch of roll {roll_id!r} was already acknowledged by {row.acknowledged_by}"
        )
    row.acknowledged_at = datetime.now(UTC)
    row.acknowledged_by = actor
    audit.append(
        session,
        actor=actor,
        action=ACKNOWLEDGE_ACTION,
        subject=f"round:{row.round_id}",
        payload={
            "roll_id": roll_id,
            "dealer_roll_id": row.dealer_roll_id,
            "read_id": row.read_id,
            "note": note,
        },
    )
    alert_id = _mismatch_alert(session, roll_id)
    alert = session.get(Alert, alert_id) if alert_id is not None else None
    if alert is not None and alert.acknowledged_at is None:
        acknowledge_alert(session, alert, actor=actor, payload={"mismatch_of": roll_id, "note": note})
    return row


def acknowledge(*, database: Database, roll_id: str, actor: str, note: str) -> MismatchOut:
    """`acknowledge_mismatch` in a transaction of its own, answered in its response form (same errors)."""
    with database.session() as session:
        row = acknowledge_mismatch(session, roll_id=roll_id, actor=actor, note=note)
        session.flush()
        return MismatchOut.model_validate(row, from_attributes=True)
