"""`FindingReason`: the reasons a finding can give, typed, and serialised exactly as the strings they were."""

from __future__ import annotations

import json

import pytest

from vision.types import Finding, FindingReason, Verdict


@pytest.mark.parametrize("reason", list(FindingReason))
def test_a_finding_serialises_its_reason_as_the_plain_string(reason: FindingReason) -> None:
    finding = Finding(verdict=Verdict.NO_DECISION, reason=reason, die_ids=(2,), detail="why")
    doc = finding.as_dict()
    assert type(doc["reason"]) is str and doc["reason"] == reason.value
    assert json.dumps(doc) == json.dumps({**doc, "reason": reason.value})
    # The member itself is a string too, so a caller that dumps it directly writes the same bytes.
    assert json.dumps({"reason": reason}) == json.dumps({"reason": reason.value})


def test_the_reasons_are_the_codes_the_read_json_has_always_carried() -> None:
    assert {r.value for r in FindingReason} == {
        "die_off_table", "extra_dice", "die_on_die", "cocked_multi_side", "cocked_unclear",
        "cocked_read_by_rule", "stacked_unclear", "stacked_ruled_out", "object_unclear", "state_uncertain",
        "face_uncertain", "count_mismatch", "no_dice", "camera_moved", "frame_exposure", "frame_smoothed",
    }  # fmt: skip
