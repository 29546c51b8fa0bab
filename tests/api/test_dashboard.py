"""The dashboard at `/` in headless Chromium (Debian's chromium + chromedriver, driven by selenium): the page
loads, takes the key from the link, and shows a read (with its annotated frame), the round and an alert,
as they arrive on the event stream."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import cv2
import httpx
import pytest

from api.db.session import Database
from api.live import LiveConfig, LiveLoop, RulesClient
from api.live_service import DEMO_CLIPS, DatabaseRecorder
from api.metrics import Metrics
from tests.api.conftest import running_service
from tests.api.test_live import FIRST, TruthReader, die, frame
from vision.settle import AtRest, SettleDetector

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,900",
)

pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="no Chromium here: apt-get install chromium chromium-driver (.ci/run does)",
)


@pytest.fixture
def browser() -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def wait_for(check: Callable[[], bool], *, timeout_s: float = 15.0, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"the dashboard never showed {what}")


def test_dashboard_loads_shows_a_read_and_an_alert(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    with running_service("sqlite", tmp_path / "data") as svc:
        svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "L1", "game": "hrd10"})
        with httpx.Client(base_url=svc.base_url, headers=svc.headers("dealer")) as dealer:
            rnd = dealer.post("/v1/tables/L1/rounds").json()
            wagers = [{"seat": 1, "kind": "pip_street", "face": 5, "amount": "5.00"}]
            dealer.post(f"/v1/rounds/{rnd['id']}/wagers", json={"wagers": wagers})
            dealer.post(f"/v1/rounds/{rnd['id']}/no-more-bets")

        # The page is served without a key; its data needs one.
        page = svc.client.get(svc.base_url + "/")
        assert page.status_code == 200 and "throwbox" in page.text
        assert svc.client.get(svc.base_url + "/static/dashboard.js").status_code == 200

        browser.get(f"{svc.base_url}/#key={svc.keys['surveillance']}")
        wait_for(lambda: browser.find_element(By.ID, "stream").text == "live", what="a live event stream")
        assert "#key" not in browser.current_url  # the key is not left in the address bar
        round_text = browser.find_element(By.ID, "round").text
        assert f"round {rnd['id']}" in round_text and "no_more_bets" in round_text

        # A read arrives: a real frame of a demo clip, read as roll one (four 5s), posted by the live loop.
        database = Database(svc.settings.resolved_database_url)
        capture = cv2.VideoCapture(str(next(DEMO_CLIPS.glob("*/throw.mp4"))))
        ok, picture = capture.read()
        capture.release()
        assert ok
        at_rest = frame(1, image=picture)
        loop = LiveLoop(
            config=LiveConfig(table_id="L1", expected_dice=10),
            items=[],
            detector=SettleDetector(),
            reader=TruthReader([[die(f, x=30.0 * i) for i, f in enumerate(FIRST)]]),
            rules=RulesClient(base_url=svc.base_url, key=svc.keys["reader"]),
            recorder=DatabaseRecorder(database, svc.settings, Metrics(), actor="reader:live-test"),
        )
        try:
            read = loop.handle_throw(AtRest(at_rest, throw_index=0, moving_since_s=0.0, still_since_s=0.7))
            assert read.answer is not None
            wait_for(
                lambda: "VALID" in browser.find_element(By.ID, "read").text,
                what="the read's verdict",
            )
            caption = browser.find_element(By.ID, "read").text
            assert "faces 5 5 5 5 6 6 6 1 1 4" in caption and "winner 5 x4" in caption
            wait_for(
                lambda: browser.execute_script(
                    "const i = document.getElementById('frame'); return i.dataset.sha256 === arguments[0] "
                    "&& i.complete && i.naturalWidth > 0;",
                    read.evidence_sha256,
                ),
                what="the annotated evidence frame",
            )
            wait_for(lambda: "valid" in browser.find_element(By.ID, "rolls").text, what="the roll")

            # An alert arrives: the dealer calls the wrong face.
            with httpx.Client(base_url=svc.base_url, headers=svc.headers("dealer")) as dealer:
                dealer.post(
                    f"/v1/rounds/{rnd['id']}/dealer-calls", json={"roll": 1, "winner": 6, "match_count": 3}
                )
            wait_for(
                lambda: "dealer_call_mismatch" in browser.find_element(By.ID, "alerts").text,
                what="the dealer-call alert",
            )
            assert "the dice show" in browser.find_element(By.ID, "alerts").text
        finally:
            loop.rules.close()
            database.dispose()


def test_dashboard_refuses_a_bad_key(tmp_path: Path, browser: Any) -> None:
    from selenium.webdriver.common.by import By

    with running_service("sqlite", tmp_path / "data") as svc:
        browser.get(f"{svc.base_url}/#key=tbx_nothing_here")
        wait_for(lambda: browser.find_element(By.ID, "login").is_displayed(), what="the key form")
        assert "refused" in browser.find_element(By.ID, "login-error").text
        # A reader key may not read the event stream or rounds: refused too, with the reason.
        browser.get(f"{svc.base_url}/#key={svc.keys['reader']}")
        browser.refresh()
        wait_for(lambda: "refused" in browser.find_element(By.ID, "login-error").text, what="the refusal")


def test_dashboard_fairness_panel_and_the_report_png(tmp_path: Path, browser: Any, monkeypatch: Any) -> None:
    """The fairness panel draws observed against expected for the table's dice (issue 49), and the PNG of
    `throwbox fairness` for the same table opens in the browser as a picture of the expected size."""
    import numpy as np
    from selenium.webdriver.common.by import By
    from typer.testing import CliRunner

    from api.cli import app as cli
    from api.fairness_demo import parse_loaded_die, play_rounds
    from tests.api.test_fairness import check_report_png

    with running_service("sqlite", tmp_path / "data") as svc:
        svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "F1", "game": "hrd10"})
        svc.ok("POST", "/v1/tables/F1/dice-sets", "admin", 201, json={"name": "red 12", "per_position": True})
        with httpx.Client(base_url=svc.base_url, headers=svc.headers("dealer"), timeout=30) as dealer:
            weights = parse_loaded_die("1:6:0.8333333333", dice=10)
            play_rounds(
                dealer, table_id="F1", weights=weights, rounds=20, rng=np.random.default_rng(1), prefix="f"
            )

        browser.get(f"{svc.base_url}/?table=F1#key={svc.keys['surveillance']}")
        wait_for(
            lambda: browser.find_element(By.ID, "fairness").get_attribute("data-rolls") == "20",
            what="the fairness panel",
        )
        panel = browser.find_element(By.ID, "fairness")
        assert "dice set red 12: 20 valid rolls" in panel.text and "chi-square p" in panel.text
        faces = panel.find_element(By.CSS_SELECTOR, 'svg[data-panel="faces"]')
        bars = faces.find_elements(By.CSS_SELECTOR, "rect.observed")
        expected = faces.find_elements(By.CSS_SELECTOR, "line.expected")
        assert len(bars) == 6 and len(expected) == 6
        # SVG y grows downwards: face 6 (25 % here) stands above its expected 1/6, and it is the tallest.
        tops = [float(b.get_attribute("y")) for b in bars]
        assert tops[5] < float(expected[5].get_attribute("y1")) and tops[5] == min(tops)
        for name in ("pip_street", "like_kind"):
            assert panel.find_elements(By.CSS_SELECTOR, f'svg[data-panel="{name}"] rect.observed')

        monkeypatch.setenv("THROWBOX_DATA_DIR", str(svc.settings.data_dir))
        png = tmp_path / "F1.png"
        result = CliRunner().invoke(cli, ["fairness", "--table", "F1", "--png", str(png)])
        assert result.exit_code == 0, result.output
        check_report_png(png)
        browser.get(png.as_uri())
        wait_for(
            lambda: browser.execute_script(
                "const i = document.images[0]; return !!i && i.complete && i.naturalWidth === 1500 "
                "&& i.naturalHeight === 480;"
            ),
            what="the report PNG",
        )
