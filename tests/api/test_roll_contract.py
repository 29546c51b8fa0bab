"""The roll contract (api/schemas/rolls.py): one model for the live loop, the CLI and the route."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from api.rules_door import RollRejectedError, checked_submission
from api.schemas.rolls import RollSubmission


def test_the_wire_body_carries_the_fields_set_in_their_order_and_nothing_else() -> None:
    body = RollSubmission(
        roll_id="T-1-2", source="reader", verdict="invalid", faces=[], reasons=["a die"], evidence_sha256=None
    ).wire()
    # What the live loop posted as a plain dict before the model: the same bytes.
    before = {
        "roll_id": "T-1-2",
        "source": "reader",
        "verdict": "invalid",
        "faces": [],
        "reasons": ["a die"],
        "evidence_sha256": None,
    }
    assert json.dumps(body) == json.dumps(before)
    keyed = RollSubmission(roll_id="k-1", source="dealer", verdict="valid", faces=[2, 3], round_id=7).wire()
    assert json.dumps(keyed) == json.dumps(
        {"roll_id": "k-1", "source": "dealer", "verdict": "valid", "faces": [2, 3], "round_id": 7}
    )


def test_a_submission_the_door_would_refuse_is_refused_before_it_is_sent() -> None:
    with pytest.raises(ValidationError):
        RollSubmission(roll_id="r", source="reader", verdict="valid", faces=[1] * 11)
    with pytest.raises(RollRejectedError, match="422") as caught:
        checked_submission({"roll_id": "r", "source": "reader", "verdict": "maybe", "faces": []})
    assert caught.value.status_code == 422
