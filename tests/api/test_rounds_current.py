"""`GET /v1/tables/{id}/rounds/current`: the open round (200), no open round (204, no body: an answer, not
an error), no such table (404)."""

from __future__ import annotations

from tests.api.conftest import Service


def test_current_round_answers_204_between_rounds_and_404_for_no_table(service: Service) -> None:
    svc = service
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "C1", "game": "hrd6"})
    idle = svc.call("GET", "/v1/tables/C1/rounds/current", "surveillance")
    assert (idle.status_code, idle.content) == (204, b"")
    missing = svc.call("GET", "/v1/tables/NOPE/rounds/current", "surveillance")
    assert missing.status_code == 404 and missing.json() == {"detail": "no table 'NOPE'"}
    opened = svc.ok("POST", "/v1/tables/C1/rounds", "dealer", 201)
    current = svc.ok("GET", "/v1/tables/C1/rounds/current", "dealer")
    assert (current["id"], current["table_id"], current["phase"]) == (opened["id"], "C1", "betting")
    # Settled: the round is closed, and "no open round" is again a 204.
    wagers = [{"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"}]
    svc.ok("POST", f"/v1/rounds/{opened['id']}/wagers", "dealer", 201, json={"wagers": wagers})
    svc.ok("POST", f"/v1/rounds/{opened['id']}/no-more-bets", "dealer")
    roll = {"roll_id": "C1-1", "source": "reader", "verdict": "valid", "faces": [5, 5, 2, 3, 4, 6]}
    svc.ok("POST", "/v1/tables/C1/rolls", "reader", 201, json=roll)
    assert svc.ok("GET", f"/v1/rounds/{opened['id']}", "admin")["phase"] == "complete"
    assert svc.call("GET", "/v1/tables/C1/rounds/current", "admin").status_code == 204
