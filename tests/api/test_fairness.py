"""Dice fairness monitoring (issue 49) through the service: a loaded die raises `dice_bias_suspected` with
its evidence and a fair set stays quiet (rolls played over REST, as the dealer keys them), surveillance
acknowledges, swapping the set resets the watch, and `throwbox fairness` prints the tests and writes its
PNG."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import cv2
import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from api.cli import app as cli
from api.db.session import Database
from api.fairness_demo import parse_loaded_die, play_rounds
from tests.api.conftest import Service, running_service

ROUNDS = 160  # die 2 always showing a six crosses its chart's threshold after about 110 first rolls
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def played(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with running_service("sqlite", tmp_path_factory.mktemp("fairness") / "data") as svc:
        for table in ("LOADED", "FAIR", "NOSET"):
            svc.ok("POST", "/v1/tables", "admin", 201, json={"id": table, "game": "hrd6"})
        for table, name in (("LOADED", "set L"), ("FAIR", "set F")):
            svc.ok(
                "POST",
                f"/v1/tables/{table}/dice-sets",
                "admin",
                201,
                json={"name": name, "per_position": True},
            )
        with httpx.Client(base_url=svc.base_url, headers=svc.headers("dealer"), timeout=30) as dealer:
            rng = np.random.default_rng(49)
            loaded = parse_loaded_die("2:6:0.8333333333", dice=6)
            fair = parse_loaded_die("all:6:0", dice=6)
            assert (
                play_rounds(dealer, table_id="LOADED", weights=loaded, rounds=ROUNDS, rng=rng, prefix="L")
                == ROUNDS
            )
            assert (
                play_rounds(dealer, table_id="FAIR", weights=fair, rounds=ROUNDS, rng=rng, prefix="F")
                == ROUNDS
            )
            play_rounds(dealer, table_id="NOSET", weights=fair, rounds=2, rng=rng, prefix="N")
        yield svc


def _bias_alerts(svc: Service, table: str) -> list[dict[str, Any]]:
    alerts = svc.ok("GET", f"/v1/alerts?table_id={table}", "surveillance")
    return [a for a in alerts if a["kind"] == "dice_bias_suspected"]


def test_a_loaded_die_raises_the_alert_with_evidence_and_a_fair_set_does_not(played: Service) -> None:
    assert _bias_alerts(played, "FAIR") == []
    alerts = _bias_alerts(played, "LOADED")
    charts = {a["data"]["chart"] for a in alerts}
    assert "die 2 face 6" in charts
    alert = next(a for a in alerts if a["data"]["chart"] == "die 2 face 6")
    data = alert["data"]
    assert data["position"] == 2 and data["faces"] == [6] and data["family"] == "position"
    assert data["statistic"]["test"] == "bernoulli_cusum"
    assert data["statistic"]["value_llr"] >= data["statistic"]["threshold_llr"] > 5
    assert 50 < data["window"]["trials"] < ROUNDS and data["observed_p"] == 1.0
    assert data["expected_p"] == pytest.approx(1 / 6)
    assert len(data["roll_links"]) == 50
    roll = played.ok("GET", data["roll_links"][0], "surveillance")
    assert roll["table_id"] == "LOADED" and roll["faces"][1] == 6
    events = played.call("GET", "/v1/events?follow=false&table_id=LOADED", "surveillance").text
    assert '"kind": "dice_bias_suspected"' in events or '"kind":"dice_bias_suspected"' in events


def test_the_report_shows_the_loaded_die_against_the_exact_distribution(played: Service) -> None:
    loaded = played.ok("GET", "/v1/tables/LOADED/fairness", "dealer")
    assert loaded["rolls"] == ROUNDS and loaded["first_rolls"] == ROUNDS
    assert loaded["dice_set"]["name"] == "set L" and loaded["dice_set"]["rolls"] == ROUNDS
    assert loaded["positions"][1][5]["observed_p"] == 1.0
    tests = {t["what"]: t for t in loaded["chi_square"]}
    assert tests["die 2"]["p_value"] < 1e-20 and tests["die 1"]["p_value"] > 1e-4
    assert sum(r["expected_p"] for r in loaded["pip_street"]) == pytest.approx(1.0)
    assert len(loaded["sequential"]) == 6 + 6 + len(loaded["like_kind"]) + 36
    fair = played.ok("GET", "/v1/tables/FAIR/fairness", "surveillance")
    assert min(t["p_value"] for t in fair["chi_square"]) > 1e-4
    assert all(s["alarms"] == 0 for s in fair["sequential"])
    # A window: nothing before the set came into play.
    empty = played.ok("GET", "/v1/tables/FAIR/fairness?until=2000-01-01T00:00:00Z", "surveillance")
    assert empty["rolls"] == 0 and empty["faces"][0]["trials"] == 0


def test_a_table_without_a_set_is_watched_under_unregistered(played: Service) -> None:
    sets = played.ok("GET", "/v1/tables/NOSET/dice-sets", "surveillance")
    assert [(s["name"], s["rolls"]) for s in sets] == [("unregistered", 2)]


def test_surveillance_acknowledges_a_bias_alert(played: Service) -> None:
    alert = _bias_alerts(played, "LOADED")[0]
    path = f"/v1/tables/LOADED/fairness/alerts/{alert['id']}/acknowledge"
    assert played.call("POST", path.replace("LOADED", "FAIR"), "surveillance", json={}).status_code == 404
    done = played.ok("POST", path, "surveillance", json={"note": "dice taken to the pit boss"})
    assert done["acknowledged_by"].startswith("surveillance:") and done["acknowledged_at"]
    again = played.call("POST", path, "surveillance", json={})
    assert (
        again.status_code == 409 and again.json()["detail"] == f"alert {alert['id']} is already acknowledged"
    )
    review = played.ok(
        "POST", "/v1/alerts", "surveillance", 201, json={"message": "look", "table_id": "FAIR"}
    )
    other = played.call(
        "POST", f"/v1/tables/FAIR/fairness/alerts/{review['id']}/acknowledge", "surveillance", json={}
    )
    assert other.status_code == 404


def test_cli_prints_the_tests_and_writes_the_png(played: Service, tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("THROWBOX_DATA_DIR", str(played.settings.data_dir))
    set_id = played.ok("GET", "/v1/tables/LOADED/dice-sets", "surveillance")[-1]["id"]
    png = tmp_path / "loaded.png"
    result = CliRunner().invoke(
        cli, ["fairness", "--table", "LOADED", "--dice-set", str(set_id), "--png", str(png)]
    )
    assert result.exit_code == 0, result.output
    assert (
        f"{ROUNDS} valid rolls" in result.output
        and "die 2" in result.output
        and "Pip Street winner" in result.output
    )
    check_report_png(png)
    bad = CliRunner().invoke(cli, ["fairness", "--table", "NOPE", "--png", str(png)])
    assert bad.exit_code == 2 and "no dice table 'NOPE'" in bad.output


def check_report_png(path: Path) -> None:
    """A real PNG of the expected size, three panels each with observed bars and expected markers."""
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    image = cv2.imread(str(path))
    assert image is not None and image.shape == (480, 1500, 3)
    bars = np.all(np.abs(image.astype(int) - (0xBF, 0x8C, 0x4C)) < 8, axis=2)  # BGR of #4c8cbf
    marks = np.all(np.abs(image.astype(int) - (0x2B, 0x40, 0xD0)) < 8, axis=2)  # BGR of #d0402b
    for third in range(3):
        columns = slice(third * 500, (third + 1) * 500)
        assert bars[:, columns].sum() > 500, f"panel {third + 1} has no bars"
        assert marks[:, columns].sum() > 50, f"panel {third + 1} has no expected markers"


def test_cli_names_every_alarm_and_its_open_alert_first(played: Service, monkeypatch: Any) -> None:
    # After an alarm the chart restarts at 0, so "nearest its threshold" no longer finds it (issue 57): the
    # output must still name the alarm, and its open alert, ahead of the tests.
    monkeypatch.setenv("THROWBOX_DATA_DIR", str(played.settings.data_dir))
    sets = played.ok("GET", "/v1/tables/LOADED/dice-sets", "surveillance")
    (set_id,) = [s["id"] for s in sets if s["name"] == "set L"]  # the loaded set, in play or swapped out
    report = played.ok("GET", f"/v1/tables/LOADED/fairness?dice_set_id={set_id}", "surveillance")
    alarmed = [s for s in report["sequential"] if s["alarms"]]
    assert "die 2 face 6" in {s["chart"] for s in alarmed}
    assert all(s["statistic_llr"] < s["threshold_llr"] for s in alarmed)  # each restarted after its alarm
    alerts = _bias_alerts(played, "LOADED")
    still_open = [a for a in alerts if a["acknowledged_at"] is None]
    assert still_open  # (another test acknowledges one; the others stay open)
    result = CliRunner().invoke(
        cli,
        [
            "fairness",
            "--table",
            "LOADED",
            "--dice-set",
            str(set_id),
            "--png",
            str(Path(played.settings.data_dir) / "x.png"),
        ],
    )
    assert result.exit_code == 0, result.output
    out = result.output
    tests_start = out.index("chi-square goodness of fit")
    head = out[:tests_start]
    assert f"open dice_bias_suspected alerts: {len(still_open)}" in head
    for alert in still_open:
        assert f"alert {alert['id']}  " in head and alert["data"]["chart"] in head
    assert f"charts that alarmed with this dice set: {len(alarmed)}" in head
    for chart in alarmed:
        assert f"  {chart['chart']:<20} alarms {chart['alarms']}" in head
    # And in the watch's list too, every alarmed chart, not only the ten nearest their threshold.
    watch = out[out.index("sequential watch") :]
    assert all(f"  {chart['chart']:<20}" in watch for chart in alarmed)
    quiet = CliRunner().invoke(
        cli, ["fairness", "--table", "FAIR", "--png", str(Path(played.settings.data_dir) / "y.png")]
    )
    assert "open dice_bias_suspected alerts: none" in quiet.output
    assert "charts that alarmed with this dice set: none" in quiet.output


def test_swapping_the_dice_set_resets_the_watch(played: Service) -> None:
    bad = played.call(
        "POST",
        "/v1/tables/LOADED/dice-sets",
        "admin",
        json={"name": "x", "in_play_at": "2030-01-02T00:00:00Z", "out_of_play_at": "2030-01-01T00:00:00Z"},
    )
    assert bad.status_code == 422
    assert played.call("POST", "/v1/tables/NOPE/dice-sets", "admin", json={"name": "x"}).status_code == 404
    new = played.ok(
        "POST", "/v1/tables/LOADED/dice-sets", "admin", 201, json={"name": "set L2", "per_position": True}
    )
    sets = played.ok("GET", "/v1/tables/LOADED/dice-sets", "surveillance")
    assert [s["name"] for s in sets] == ["set L2", "set L"]
    assert sets[0]["out_of_play_at"] is None and sets[1]["out_of_play_at"] is not None
    fresh = played.ok("GET", "/v1/tables/LOADED/fairness", "surveillance")
    assert fresh["dice_set"]["id"] == new["id"] and fresh["rolls"] == 0
    assert all(s["statistic_llr"] == 0 and s["alarms"] == 0 for s in fresh["sequential"])
    old = played.ok("GET", f"/v1/tables/LOADED/fairness?dice_set_id={sets[1]['id']}", "surveillance")
    assert old["rolls"] == ROUNDS


def test_the_demo_plays_a_loaded_die_at_its_own_table(tmp_path: Path) -> None:
    import time

    from pydantic import ValidationError

    from api.fairness_demo import DEMO_DICE_TABLE, start_demo_dice
    from api.settings import Settings

    with pytest.raises(ValidationError, match="demo_loaded_die"):
        Settings(demo_loaded_die="1:7:0.1")  # no face 7
    with running_service("sqlite", tmp_path / "data") as svc:
        settings = svc.settings.model_copy(
            update={"self_url": svc.base_url, "demo_loaded_die": "1:6:0.8333", "demo_dice_interval_s": 0.0}
        )
        database = Database(settings.resolved_database_url)
        feeder = start_demo_dice(settings=settings, database=database, dealer_key=svc.keys["dealer"])
        assert feeder is not None
        try:
            deadline = time.monotonic() + 60
            while feeder.rounds < 12 and feeder.error is None and time.monotonic() < deadline:
                time.sleep(0.1)
        finally:
            feeder.stop()
            database.dispose()
        assert feeder.error is None and feeder.rounds >= 12
        sets = svc.ok("GET", f"/v1/tables/{DEMO_DICE_TABLE}/dice-sets", "surveillance")
        assert [(s["name"], s["per_position"]) for s in sets] == [("demo dice, loaded 1:6:0.8333", True)]
        report = svc.ok("GET", f"/v1/tables/{DEMO_DICE_TABLE}/fairness", "surveillance")
        assert report["rolls"] == feeder.rounds and report["positions"][0][5]["observed_p"] == pytest.approx(
            1.0
        )
    assert start_demo_dice(settings=svc.settings, database=database, dealer_key="unused") is None


def test_the_service_designs_the_charts_of_the_sets_in_play_ahead(played: Service) -> None:
    from api.fairness import warm_up
    from rules.fairness import watch_design

    watch_design.cache_clear()
    database = Database(played.settings.resolved_database_url)
    try:
        warm_up(database)
    finally:
        database.dispose()
    # hrd6 by position (LOADED, FAIR) and over the set (NOSET's unregistered set): two designs, no more.
    assert watch_design.cache_info().currsize == 2
