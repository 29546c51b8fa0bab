"""The table console (issue 56): the rolls the reader left to a person, and a person's decision of one.

A roll *waits for a person* when it is the newest roll of its table's open round and the reader ended it
`no_decision`. `waiting_roll` finds it with its read (the one its submission named, else the table's read
of its evidence frame): each die boxed with the reader's face and confidence, the dice it is unsure of,
the reasons in plain words, and the dice the person must key (on an Extra Roll, the dice in a layout box
are the kept ones: 593.4(g), 675a.4(g)).

`decide` turns a person's decision into a dealer roll naming the read it decides (`read_id`), through the
rules engine's one door (`api.rounds.submit_roll`), and keeps beside it a `console_decisions` row: the call,
the faces, and the labelled boxes (each die of the read with the person's face, or struck out as no die;
each die the camera missed, added by a click), so a later refit can learn from them. A decision of a roll
that no longer waits (the round moved on) is refused (`StaleRollError`); the same decision sent again is
answered from the first (a reload after submitting), another one refused. Where the person gave a die the
reader was sure of another face, or struck it out, the decision is a *mismatch*: a `dealer_read_mismatch`
alert for surveillance, who acknowledge it (`acknowledge_mismatch`), audited.

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
import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from api import audit, rounds
from api.alerts import acknowledge_alert, raise_alert
from api.audit import canonical_json
from api.db.models import Alert, AuditEntry, ConsoleDecision, Read, Roll, Round
from api.db.session import Database
from api.metrics import Metrics
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

# The reader's finding codes (vision.types.FindingReason) in a person's words.
PLAIN_REASONS: dict[str, str] = {
    "face_uncertain": "the reader is not sure of a die's face",
    "cocked_unclear": "a die may be cocked: is it flat, or resting on one side or more?",
    "cocked_multi_side": "a die looks cocked on more than one side (void, 675a.4(c))",
    "cocked_read_by_rule": "a cocked die was read by the rule of 675a.4(c)",
    "stacked_unclear": "a die may rest on another (invalid, 675a.4(b))",
    "die_on_die": "a die rests on another (invalid, 675a.4(b))",
    "die_off_table": "a die is off the table (invalid, 675a.4(b))",
    "extra_dice": "more dice than the game has",
    "object_unclear": "something the reader cannot tell from a die",
    "state_uncertain": "the reader is not sure how a die lies",
    "count_mismatch": "the reader did not count the dice the game has: a die missed, or one too many",
    "no_dice": "the reader found no dice",
    "camera_moved": "the camera moved since the table was calibrated",
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
class WaitingDie:
    """One die of the waiting roll's read, as the console shows it."""

    index: int  # in the read's document
    order: int  # in reading order (top to bottom, left to right): how a person keys the faces
    face: int | None
    confidence: float
    box_xyxy: tuple[float, float, float, float]
    uncertain: bool
    kept: bool  # an Extra Roll's kept die (in a layout box): not keyed
    notes: tuple[str, ...]


@dataclass(frozen=True)
class WaitingRoll:
    """A roll waiting for a person, with what the reader saw."""

    roll_id: str
    table_id: str
    round_id: int
    phase: str
    kind: Literal["first_roll", "extra_roll"]
    dice_expected: int | None
    read_id: str | None
    evidence_sha256: str | None
    reasons: tuple[str, ...]  # in plain words
    dice: tuple[WaitingDie, ...]
    waiting_since: datetime


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


# --- the waiting roll -------------------------------------------------------------------------------------


def reading_order(boxes: Sequence[Sequence[float]]) -> list[int]:
    """The indices of `boxes` in reading order: rows top to bottom (a die joins a row when its centre lies
    within half a die's height of the row's first), each row left to right."""
    if not boxes:
        return []
    heights = sorted(float(b[3]) - float(b[1]) for b in boxes)
    half = max(heights[len(heights) // 2], 1.0) / 2.0
    by_y = sorted(range(len(boxes)), key=lambda i: (float(boxes[i][1]) + float(boxes[i][3])) / 2.0)
    rows: list[list[int]] = []
    row_y = 0.0
    for i in by_y:
        cy = (float(boxes[i][1]) + float(boxes[i][3])) / 2.0
        if not rows or cy - row_y > half:
            rows.append([])
            row_y = cy
        rows[-1].append(i)
    return [i for row in rows for i in sorted(row, key=lambda j: float(boxes[j][0]) + float(boxes[j][2]))]


def submitted_read_id(session: Session, roll: Roll) -> str | None:
    """The read a roll's submission named: its audited body, whose hash must be the roll's own."""
    if roll.round_id is None:
        return None
    entries = session.scalars(
        select(AuditEntry).where(
            AuditEntry.action == "roll.submit", AuditEntry.subject == f"round:{roll.round_id}"
        )
    )
    for entry in entries:
        body = json.loads(entry.payload).get("roll")
        if not isinstance(body, dict) or body.get("roll_id") != roll.id:
            continue
        if hashlib.sha256(canonical_json(body).encode()).hexdigest() != roll.request_sha256:
            continue
        read_id = body.get("read_id")
        return read_id if isinstance(read_id, str) else None
    return None


def read_of(session: Session, roll: Roll) -> Read | None:
    """The roll's read: the one its submission named, else the table's read of the roll's evidence frame."""
    read_id = submitted_read_id(session, roll)
    if read_id is not None:
        return session.get(Read, read_id)
    if roll.evidence_sha256 is None:
        return None
    return session.scalars(
        select(Read)
        .where(Read.table_id == roll.table_id, Read.evidence_sha256 == roll.evidence_sha256)
        .order_by(Read.created_at.desc())
    ).first()


def plain_reasons(document: dict[str, Any], roll_reasons: Sequence[str]) -> tuple[str, ...]:
    """The reader's reasons in plain words: each finding's code said plainly, with its detail."""
    out: list[str] = []
    for finding in document.get("findings") or []:
        code = str(finding.get("reason", ""))
        detail = str(finding.get("detail", ""))
        plain = PLAIN_REASONS.get(code)
        out.append(f"{plain} ({detail})" if plain and detail else plain or detail or code)
    if not out:
        out = [str(r) for r in roll_reasons] or ["the reader could not decide"]
    return tuple(dict.fromkeys(out))


def _dice(document: dict[str, Any], *, extra_roll: bool) -> tuple[WaitingDie, ...]:
    raw = [d for d in document.get("dice") or [] if isinstance(d, dict)]
    boxes = [tuple(float(v) for v in d.get("box_xyxy") or (0.0, 0.0, 0.0, 0.0)) for d in raw]
    order = {index: rank for rank, index in enumerate(reading_order(boxes))}
    dice = []
    for index, d in enumerate(raw):
        notes = [str(r) for r in d.get("reasons") or []]
        notes += [k.replace("_", " ") for k in ("cocked", "stacked", "off_table") if d.get(k)]
        face = d.get("face")
        box = boxes[index]
        dice.append(
            WaitingDie(
                index=index,
                order=order[index],
                face=face if isinstance(face, int) else None,
                confidence=float(d.get("confidence") or 0.0),
                box_xyxy=(box[0], box[1], box[2], box[3]),
                uncertain=bool(d.get("uncertain")) or not isinstance(face, int),
                kept=extra_roll and d.get("layout_box") is not None,
                notes=tuple(notes),
            )
        )
    return tuple(sorted(dice, key=lambda d: d.order))


def _newest_roll(session: Session, round_id: int) -> Roll | None:
    return session.scalars(
        select(Roll).where(Roll.round_id == round_id).order_by(Roll.created_at.desc(), Roll.id.desc())
    ).first()


def waiting_roll(session: Session, table_id: str) -> WaitingRoll | None:
    """The roll of the table's open round that waits for a person (None: none waits)."""
    row = session.scalars(select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None))).first()
    if row is None:
        return None
    roll = _newest_roll(session, row.id)
    if roll is None or roll.verdict != "no_decision":
        return None
    summary = row.state.get("summary", {})
    extra_roll = row.phase == "awaiting_extra_roll"
    read = read_of(session, roll)
    document = read.result if read is not None and isinstance(read.result, dict) else {}
    expected = summary.get("dice_to_rethrow") if extra_roll else document.get("expected_dice")
    if not extra_roll and not isinstance(expected, int):
        expected = 6 if row.game == "hrd6" else 10
    roll_reasons = (roll.outcome or {}).get("reasons") or []
    if not roll_reasons:
        roll_reasons = [str(r) for r in document.get("reasons") or []]
    return WaitingRoll(
        roll_id=roll.id,
        table_id=table_id,
        round_id=row.id,
        phase=row.phase,
        kind="extra_roll" if extra_roll else "first_roll",
        dice_expected=expected if isinstance(expected, int) else None,
        read_id=None if read is None else read.id,
        evidence_sha256=roll.evidence_sha256 or (None if read is None else read.evidence_sha256),
        reasons=plain_reasons(document, roll_reasons),
        dice=_dice(document, extra_roll=extra_roll),
        waiting_since=roll.created_at,
    )


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
    newest = _newest_roll(session, row.id)
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
