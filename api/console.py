"""The table console (issue 56): the rolls the reader left to a person.

A roll *waits for a person* when it is the newest roll of its table's open round and the reader ended it
`no_decision`. `waiting_roll` finds it with its read (the one its submission named, else the table's read
of its evidence frame): each die boxed with the reader's face and confidence, the dice it is unsure of,
the reasons in plain words, and the dice the person must key (on an Extra Roll, the dice in a layout box
are the kept ones: 593.4(g), 675a.4(g)). A person's decision of it is `api.console_decisions`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from api.audit import canonical_json
from api.db.models import AuditEntry, Read, Roll, Round

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

_DIE_NUMBER = re.compile(r"\bdie (\d+)\b")


@dataclass(frozen=True)
class WaitingDie:
    """One die of the waiting roll's read, as the console shows it."""

    index: int  # in the read's document
    order: int  # in reading order (top to bottom, left to right): how a person keys the faces
    face: int | None
    guess: int | None  # the face model's most probable face, sure or not (None: no probabilities)
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


def plain_reasons(
    document: dict[str, Any], roll_reasons: Sequence[str], *, order: dict[int, int] | None = None
) -> tuple[str, ...]:
    """The reader's reasons in plain words: each finding's code said plainly, with its detail. `order` maps
    the read's die numbers (1-based, as the reader writes them) to the console's, in reading order."""

    def renumber(text: str) -> str:
        if not order:
            return text
        return _DIE_NUMBER.sub(
            lambda m: f"die {order.get(int(m.group(1)) - 1, int(m.group(1)) - 1) + 1}", text
        )

    out: list[str] = []
    for finding in document.get("findings") or []:
        code = str(finding.get("reason", ""))
        detail = renumber(str(finding.get("detail", "")))
        plain = PLAIN_REASONS.get(code)
        out.append(f"{plain} ({detail})" if plain and detail else plain or detail or code)
    if not out:
        out = [renumber(str(r)) for r in roll_reasons] or ["the reader could not decide"]
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
        probs = d.get("face_probs")
        guess = None
        if isinstance(probs, list) and len(probs) == 6 and all(isinstance(p, int | float) for p in probs):
            guess = 1 + max(range(6), key=lambda k: float(probs[k]))
        box = boxes[index]
        dice.append(
            WaitingDie(
                index=index,
                order=order[index],
                face=face if isinstance(face, int) else None,
                guess=guess,
                confidence=float(d.get("confidence") or 0.0),
                box_xyxy=(box[0], box[1], box[2], box[3]),
                uncertain=bool(d.get("uncertain")) or not isinstance(face, int),
                kept=extra_roll and d.get("layout_box") is not None,
                notes=tuple(notes),
            )
        )
    return tuple(sorted(dice, key=lambda d: d.order))


def newest_roll(session: Session, round_id: int) -> Roll | None:
    """The round's newest roll (None: none yet)."""
    return session.scalars(
        select(Roll).where(Roll.round_id == round_id).order_by(Roll.created_at.desc(), Roll.id.desc())
    ).first()


def waiting_roll(session: Session, table_id: str) -> WaitingRoll | None:
    """The roll of the table's open round that waits for a person (None: none waits)."""
    row = session.scalars(select(Round).where(Round.table_id == table_id, Round.closed_at.is_(None))).first()
    if row is None:
        return None
    roll = newest_roll(session, row.id)
    if roll is None or roll.verdict != "no_decision":
        return None
    summary = row.state.get("summary", {})
    extra_roll = row.phase == "awaiting_extra_roll"
    read = read_of(session, roll)
    document = read.result if read is not None and isinstance(read.result, dict) else {}
    expected = summary.get("dice_to_rethrow") if extra_roll else document.get("expected_dice")
    if not extra_roll and not isinstance(expected, int):
        expected = 6 if row.game == "hrd6" else 10
    dice = _dice(document, extra_roll=extra_roll)
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
        reasons=plain_reasons(document, roll_reasons, order={d.index: d.order for d in dice}),
        dice=dice,
        waiting_since=roll.created_at,
    )
