"""Whole rounds over real HTTP (uvicorn on a free port), on SQLite and PostgreSQL: from wagers to
settlement, with the settlement equal to what POST /v1/settle answers for the same wagers and rolls."""

from __future__ import annotations

from typing import Any

from tests.api.conftest import Service

HRD10_WAGERS: list[dict[str, Any]] = [
    {"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"},
    {"seat": 1, "kind": "like_kind", "count": 6, "amount": "5.00"},
    {"seat": 1, "kind": "like_kind", "count": 3, "amount": "5.00"},
    {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
    {"seat": 2, "kind": "pip_street", "face": 6, "amount": "10.00"},
    {"seat": 2, "kind": "like_kind", "count": 4, "amount": "10.00"},
    {"seat": 3, "kind": "millionaire_row", "count": 9, "amount": "1.00"},
]
HRD10_FIRST = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]
HRD10_EXTRA = [5, 5, 2, 3, 4, 6]  # the six dice that were not 5s


def roll(
    svc: Service, table: str, roll_id: str, faces: list[int], verdict: str = "valid", **extra: Any
) -> Any:
    body = {"roll_id": roll_id, "source": "reader", "verdict": verdict, "faces": faces, **extra}
    return svc.call("POST", f"/v1/tables/{table}/rolls", "reader", json=body)


def test_ten_dice_round_with_extra_roll_equals_settle(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T10", "game": "hrd10"})
    rnd = svc.ok("POST", "/v1/tables/T10/rounds", "dealer", 201)
    rid = rnd["id"]
    assert rnd["phase"] == "betting"
    # A second round at the same table is refused while this one is open.
    assert svc.call("POST", "/v1/tables/T10/rounds", "dealer").status_code == 409
    placed = svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": HRD10_WAGERS[:4]})
    assert len(placed["wagers"]) == 4
    svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": HRD10_WAGERS[4:]})
    # A roll before "no more bets" advances nothing: the round is still betting.
    early = roll(svc, "T10", "early-1", HRD10_FIRST)
    assert early.status_code == 409, early.text
    closed = svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    assert closed["phase"] == "no_more_bets"
    # No wager after "no more bets": the engine refuses it and names the clause.
    late = svc.call("POST", f"/v1/rounds/{rid}/wagers", "dealer", json={"wagers": [HRD10_WAGERS[0]]})
    assert late.status_code == 422
    assert all(p["clause"].startswith("593") for p in late.json()["detail"]["problems"])

    # An invalid throw (a die off the table) asks for a rethrow and advances nothing.
    bad = roll(svc, "T10", "r-1", [5, 5, 5], verdict="invalid", reasons=["a die left the table"])
    assert bad.status_code == 201
    assert bad.json()["applied"] is False and bad.json()["rethrow"] is True
    assert bad.json()["phase"] == "no_more_bets"
    first = roll(svc, "T10", "r-2", HRD10_FIRST)
    assert first.status_code == 201, first.text
    assert first.json()["applied"] is True and first.json()["phase"] == "awaiting_extra_roll"
    # The same roll id again is applied once: same answer, marked duplicate, status 200.
    again = roll(svc, "T10", "r-2", HRD10_FIRST)
    assert again.status_code == 200 and again.json()["duplicate"] is True
    assert again.json()["phase"] == "awaiting_extra_roll"
    # The same id with other faces is a conflict, not a second roll.
    assert roll(svc, "T10", "r-2", [6] * 10).status_code == 409
    # A wrong number of dice on the Extra Roll: refused by clause, nothing stored.
    wrong = roll(svc, "T10", "r-3", [5, 5, 2])
    assert wrong.status_code == 422
    assert wrong.json()["detail"]["problems"][0]["clause"].startswith("593")
    void = roll(svc, "T10", "r-4", [1, 2, 3], verdict="void", reasons=["cocked die"])
    assert void.json()["rethrow"] is True and void.json()["phase"] == "awaiting_extra_roll"
    extra = roll(svc, "T10", "r-5", HRD10_EXTRA)
    assert extra.status_code == 201, extra.text
    assert extra.json()["settled"] is True

    stored = svc.ok("GET", f"/v1/rounds/{rid}", "surveillance")
    assert stored["phase"] == "complete" and stored["closed_at"] is not None
    settled = svc.ok(
        "POST",
        "/v1/settle",
        "reader",
        json={"game": "hrd10", "wagers": HRD10_WAGERS, "rolls": [HRD10_FIRST, HRD10_EXTRA]},
    )
    assert stored["settlement"] == settled
    # The Like Kind 6 wager is decided on the final count (4 kept + 2 new fives = 6) at roll 2.
    like6 = settled["settlements"][1]
    assert (like6["result"], like6["roll"]) == ("win", 2)
    # Rethrows were kept for the audit trail; rolls are listed with what they did.
    assert [r["verdict"] for r in stored["summary"]["rethrows"]] == ["invalid", "void"]
    rolls = svc.ok("GET", "/v1/tables/T10/rolls", "surveillance")
    assert sorted(r["roll_id"] for r in rolls) == ["r-1", "r-2", "r-4", "r-5"]
    # The next round can open now; the settled one is closed for good.
    assert svc.call("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer").status_code == 409
    svc.ok("POST", "/v1/tables/T10/rounds", "dealer", 201)


def test_six_dice_round_equals_settle(service: Service) -> None:
    svc = service
    wagers = [
        {"seat": 1, "kind": "pip_street", "face": 1, "amount": "10.00"},
        {"seat": 1, "kind": "like_kind", "count": "no_match", "amount": "10.00"},
        {"seat": 2, "kind": "pip_street", "face": 4, "amount": "5.00"},
        {"seat": 2, "kind": "like_kind", "count": 2, "amount": "5.00"},
    ]
    faces = [1, 2, 3, 4, 5, 6]
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T6", "game": "hrd6"})
    rid = svc.ok("POST", "/v1/tables/T6/rounds", "dealer", 201)["id"]
    # The 6-dice game has no Extra Roll: the engine refuses it by clause.
    refused = svc.call(
        "POST",
        f"/v1/rounds/{rid}/wagers",
        "dealer",
        json={"wagers": [{"seat": 1, "kind": "extra_roll", "amount": "5.00"}]},
    )
    assert refused.status_code == 422
    assert refused.json()["detail"]["problems"][0]["clause"].startswith("675a")
    svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    done = roll(svc, "T6", "six-1", faces)
    assert done.status_code == 201 and done.json()["settled"] is True
    stored = svc.ok("GET", f"/v1/rounds/{rid}", "dealer")
    doc = {"game": "hrd6", "wagers": wagers, "rolls": [faces]}
    settled = svc.ok("POST", "/v1/settle", "dealer", json=doc)
    assert stored["settlement"] == settled
    assert [s["result"] for s in settled["settlements"]] == ["win", "win", "lose", "lose"]


def test_dealer_call_mismatch_raises_alert_and_correction_is_linked(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T1", "game": "hrd10"})
    rid = svc.ok("POST", "/v1/tables/T1/rounds", "dealer", 201)["id"]
    svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": HRD10_WAGERS[4:6]})
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    assert roll(svc, "T1", "c-1", HRD10_FIRST).json()["settled"] is True
    calls = f"/v1/rounds/{rid}/dealer-calls"
    good = svc.ok("POST", calls, "dealer", json={"roll": 1, "winner": 5, "match_count": 4})
    assert good["matches"] is True and good["alert_id"] is None
    bad = svc.ok("POST", calls, "dealer", json={"roll": 1, "winner": 6, "match_count": 3})
    assert bad["matches"] is False
    # Seat 2 bet Pip Street 6 and Like Kind 4 at 10.00: on 5,5,5,5,6,6,6,... only the Like Kind 4 wins.
    due = svc.ok(
        "POST",
        "/v1/settle",
        "dealer",
        json={"game": "hrd10", "wagers": HRD10_WAGERS[4:6], "rolls": [HRD10_FIRST]},
    )["seats"]["2"]["won"]
    right = svc.ok("POST", f"/v1/rounds/{rid}/payouts", "dealer", json={"seat": 2, "paid": due})
    assert right["matches"] is True and right["alert_id"] is None
    wrong = svc.ok("POST", f"/v1/rounds/{rid}/payouts", "dealer", json={"seat": 2, "paid": "100.00"})
    assert wrong["matches"] is False and wrong["settlement_says"] == due
    alerts = svc.ok("GET", "/v1/alerts?table_id=T1", "surveillance")
    assert [(a["id"], a["kind"]) for a in alerts] == [
        (wrong["alert_id"], "payout_mismatch"),
        (bad["alert_id"], "dealer_call_mismatch"),
    ]

    before = svc.ok("GET", f"/v1/rounds/{rid}", "surveillance")
    body = {"reason": "camera misread die 3", "first_roll": [6, 6, 6, 6, 5, 5, 5, 1, 1, 4]}
    # A dealer without the supervisor capability may not correct; surveillance changes nothing.
    assert svc.call("POST", f"/v1/rounds/{rid}/corrections", "dealer", json=body).status_code == 403
    assert svc.call("POST", f"/v1/rounds/{rid}/corrections", "surveillance", json=body).status_code == 403
    first = svc.ok("POST", f"/v1/rounds/{rid}/corrections", "supervisor", 201, json=body)
    second = svc.ok("POST", f"/v1/rounds/{rid}/corrections", "admin", 201, json={**body, "reason": "again"})
    assert first["supersedes_id"] is None and second["supersedes_id"] == first["id"]
    expected = svc.ok(
        "POST",
        "/v1/settle",
        "admin",
        json={"game": "hrd10", "wagers": HRD10_WAGERS[4:6], "rolls": [body["first_roll"]]},
    )
    assert first["settlement"] == expected
    after = svc.ok("GET", f"/v1/rounds/{rid}", "surveillance")
    # The settled round itself never changed; the corrections hang off it.
    assert after["settlement"] == before["settlement"] and after["settlement"] != expected
    assert [c["id"] for c in after["corrections"]] == [first["id"], second["id"]]


def test_no_decision_roll_alerts_and_advances_nothing(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T2", "game": "hrd6"})
    rid = svc.ok("POST", "/v1/tables/T2/rounds", "dealer", 201)["id"]
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    unsure = roll(svc, "T2", "u-1", [1, 2, 3, 4, 5], verdict="no_decision", reasons=["low confidence"])
    assert unsure.status_code == 201
    assert unsure.json()["needs_review"] is True and unsure.json()["applied"] is False
    assert unsure.json()["phase"] == "no_more_bets"
    alerts = svc.ok("GET", "/v1/alerts", "admin")
    assert [a["kind"] for a in alerts] == ["no_decision"]
    by_hand = {"roll_id": "u-2", "source": "dealer", "verdict": "valid", "faces": [2, 2, 3, 4, 5, 6]}
    keyed = svc.call("POST", "/v1/tables/T2/rolls", "dealer", json=by_hand)
    assert keyed.status_code == 201 and keyed.json()["settled"] is True
    metrics = svc.client.get(svc.base_url + "/metrics").text
    assert 'throwbox_roll_verdicts_total{applied="false",verdict="no_decision"} 1.0' in metrics
    assert 'throwbox_alerts_total{kind="no_decision"} 1.0' in metrics


def test_same_roll_sent_at_once_is_applied_once(service: Service) -> None:
    from concurrent.futures import ThreadPoolExecutor

    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "TC", "game": "hrd10"})
    # Two dealers open a round at the same moment: one round opens, the other is told it is open.
    with ThreadPoolExecutor(max_workers=4) as pool:
        opened = list(pool.map(lambda _: svc.call("POST", "/v1/tables/TC/rounds", "dealer"), range(4)))
    assert sorted(r.status_code for r in opened) == [201, 409, 409, 409]
    rid = next(r.json()["id"] for r in opened if r.status_code == 201)
    svc.ok("POST", f"/v1/rounds/{rid}/wagers", "dealer", 201, json={"wagers": HRD10_WAGERS[:4]})
    svc.ok("POST", f"/v1/rounds/{rid}/no-more-bets", "dealer")
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(lambda _: roll(svc, "TC", "same-1", HRD10_FIRST), range(8)))
    assert sorted(a.status_code for a in answers) == [200] * 7 + [201], [a.text for a in answers]
    assert {a.json()["phase"] for a in answers} == {"awaiting_extra_roll"}
    stored = svc.ok("GET", f"/v1/rounds/{rid}", "dealer")
    assert [s["op"] for s in stored["steps"]] == ["no_more_bets", "roll"]
    rolls = svc.ok("GET", "/v1/tables/TC/rolls", "dealer")
    assert [r["roll_id"] for r in rolls] == ["same-1"]
