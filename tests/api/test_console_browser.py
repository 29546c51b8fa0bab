"""The table console at `/console` in headless Chromium (Debian's chromium + chromedriver, driven by selenium)
and headless Firefox (Debian's firefox-esr, driven through Marionette) against a real server, each test in
both browsers: a dealer corrects the one uncertain die of a waiting roll with one keystroke, submits
with Enter, and the round settles; a reload mid-roll keeps the person's edits; a roll the round moved past
says so; a reader or surveillance key cannot submit (403 in words); surveillance sees a dealer overruling a
sure die beside the frame and acknowledges it with one click."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.api.browser import chromium, click_at, firefox, needs_chromium, needs_firefox, press, wait_until
from tests.api.test_console import (
    TABLE,
    TRUTH,
    ScriptedReader,
    Table,
    open_round,
    stored_decision,
    truth_face,
)
from tests.api.test_console import table as table  # the fixture, shared


@pytest.fixture(
    params=[pytest.param("chromium", marks=needs_chromium), pytest.param("firefox", marks=needs_firefox)]
)
def browser(request: pytest.FixtureRequest) -> Iterator[Any]:
    with chromium() if request.param == "chromium" else firefox() as driver:
        yield driver


def wait_for(check: Callable[[], bool], *, timeout_s: float = 15.0, what: str) -> None:
    wait_until(check, page="the console", what=what, timeout_s=timeout_s)


def text_of(browser: Any, element_id: str) -> str:
    from selenium.webdriver.common.by import By

    found: str = browser.find_element(By.ID, element_id).text
    return found


def focused_die(browser: Any) -> str | None:
    index: str | None = browser.execute_script(
        "const a = document.activeElement; return a && a.dataset ? a.dataset.index ?? null : null;"
    )
    return index


def open_console(browser: Any, table: Table, who: str) -> None:
    browser.get(f"{table.svc.base_url}/console?table={TABLE}#key={table.svc.keys[who]}")


def frame_shown(browser: Any) -> bool:
    shown: bool = browser.execute_script(
        "const i = document.getElementById('frame'); return !document.getElementById('decide').hidden "
        "&& i.complete && i.naturalWidth > 0 && document.querySelectorAll('#overlay rect').length > 0;"
    )
    return shown


def test_a_dealer_corrects_the_uncertain_die_with_one_keystroke_and_the_round_settles(
    table: Table, browser: Any
) -> None:
    from selenium.webdriver.common.keys import Keys

    read = table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    unsure = next(d for d in waiting["dice"] if d["index"] == 4)
    open_console(browser, table, "dealer")
    wait_for(lambda: frame_shown(browser), what="the waiting roll's frame with its boxes")
    assert "#key" not in browser.current_url and f"roll={read.roll_id}" in browser.current_url
    assert read.roll_id in text_of(browser, "waiting-title")
    assert "the reader is not sure of a die's face" in text_of(browser, "reasons")
    # Each die boxed on the frame with the reader's face and confidence; the unsure one marked.
    tags = browser.execute_script(
        "return Array.from(document.querySelectorAll('#overlay text')).map((t) => t.textContent);"
    )
    assert f"{unsure['order'] + 1}: {unsure['guess']}? 0.50" in tags and len(tags) == 10
    assert len(browser.execute_script("return document.querySelectorAll('#overlay rect.uncertain');")) == 1
    # The focus waits on the unsure die: one keystroke gives its face, Enter submits.
    assert focused_die(browser) == "4"
    press(browser, str(truth_face(unsure)))
    assert browser.execute_script("return document.activeElement.id") == "submit"
    press(browser, Keys.ENTER)
    wait_for(lambda: "round settled" in text_of(browser, "notice"), what="the settled round")
    assert f"decided as dealer roll {read.roll_id}:person" in text_of(browser, "notice")
    settled = table.svc.ok("GET", f"/v1/rounds/{table.round_id}", "surveillance")
    assert settled["phase"] == "complete" and settled["closed_at"] is not None
    [roll] = [
        r for r in table.svc.ok("GET", f"/v1/tables/{TABLE}/rolls", "dealer") if r["source"] == "dealer"
    ]
    assert roll["roll_id"] == f"{read.roll_id}:person" and sorted(roll["faces"]) == sorted(TRUTH["faces"])
    wait_for(lambda: "waits for a person" in text_of(browser, "idle-text"), what="nothing waiting")


def test_a_whole_roll_keyed_in_reading_order_survives_a_reload_and_a_stale_roll_says_so(
    table: Table, browser: Any
) -> None:
    from selenium.webdriver.common.keys import Keys

    read = table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    in_order = sorted(waiting["dice"], key=lambda d: d["order"])
    faces = [truth_face(d) for d in in_order]
    open_console(browser, table, "dealer")
    wait_for(lambda: frame_shown(browser), what="the waiting roll")
    press(browser, Keys.HOME, *[str(f) for f in faces[:6]])  # six of ten, then the page is reloaded
    browser.refresh()
    wait_for(lambda: frame_shown(browser), what="the waiting roll after a reload")
    values = browser.execute_script(
        "return Array.from(document.querySelectorAll('#dice input')).map((i) => i.value);"
    )
    assert values[:6] == [str(f) for f in faces[:6]] and f"roll={read.roll_id}" in browser.current_url
    # The round moves on under the person (the dealer rethrew and the reader read it): said in words.
    table.throw(ScriptedReader(uncertain=[2]))
    wait_for(
        lambda: (
            f"roll {read.roll_id} no longer waits for a person: the round moved on"
            in text_of(browser, "notice")
        ),
        what="the stale roll's message",
    )


@pytest.mark.parametrize("who", ["reader", "surveillance"])
def test_a_reader_or_surveillance_key_cannot_submit_and_is_told_so(
    table: Table, browser: Any, who: str
) -> None:
    from selenium.webdriver.common.keys import Keys

    table.throw(ScriptedReader(uncertain=[4]))
    open_console(browser, table, who)
    if who == "reader":  # it may not even see what waits
        wait_for(lambda: "refused (403)" in text_of(browser, "login-error"), what="the refusal")
        assert "role 'reader' may not do this" in text_of(browser, "login-error")
        return
    wait_for(lambda: frame_shown(browser), what="the waiting roll")
    press(browser, "3", Keys.ENTER)
    wait_for(lambda: "refused (403)" in text_of(browser, "error"), what="the refusal")
    assert text_of(browser, "error") == (
        "refused (403): this key may not submit here: role 'surveillance' may not do this; allowed: dealer"
    )
    assert table.waiting()  # still waiting


def test_surveillance_sees_the_dealer_overrule_a_sure_die_beside_the_frame_and_acknowledges_it(
    table: Table, browser: Any
) -> None:
    from selenium.webdriver.common.by import By

    table.throw(ScriptedReader(uncertain=[4]))
    [waiting] = table.waiting()
    dice = sorted(waiting["dice"], key=lambda d: d["index"])
    said = [{"face": d["face"] if d["index"] != 4 else truth_face(d)} for d in dice]
    said[0] = {"face": 6 if dice[0]["face"] != 6 else 5}
    body = {
        "table_id": TABLE,
        "roll_id": waiting["roll_id"],
        "round_id": waiting["round_id"],
        "call": "valid",
    }
    out = table.svc.ok("POST", "/v1/console/decisions", "dealer", 201, json={**body, "dice": said})
    assert out["mismatch"] is True
    open_round(table.svc)
    open_console(browser, table, "surveillance")
    wait_for(
        lambda: len(browser.find_elements(By.CSS_SELECTOR, "#mismatches article")) == 1, what="the mismatch"
    )
    card = browser.find_element(By.CSS_SELECTOR, "#mismatches article")
    disputed = card.find_element(By.CSS_SELECTOR, "tr.disputed").text
    assert f"{dice[0]['face']} (0.97)" in disputed and disputed.endswith(str(said[0]["face"]))
    wait_for(
        lambda: browser.execute_script(
            "const i = document.querySelector('#mismatches img'); return i.complete && i.naturalWidth > 0;"
        ),
        what="the frame beside it",
    )
    card.find_element(By.CSS_SELECTOR, "button.ack").click()
    wait_for(lambda: "acknowledged roll" in text_of(browser, "notice"), what="the acknowledgement")
    assert browser.find_elements(By.CSS_SELECTOR, "#mismatches article") == []
    assert table.svc.ok("GET", f"/v1/console/mismatches?table_id={TABLE}", "surveillance") == []


def test_a_die_the_camera_missed_is_added_by_a_click_and_typed(table: Table, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    read = table.throw(ScriptedReader(missed=[9]))  # nine dice read, all sure; the tenth missed
    open_console(browser, table, "dealer")
    wait_for(lambda: frame_shown(browser), what="the waiting roll")
    missed = TRUTH["dice"][9]
    x0, y0, x1, y1 = missed["box_xyxy"]
    overlay = browser.find_element(By.ID, "overlay")
    # Where the missed die is on the page: frame pixels scaled to the shown frame, from its centre.
    dx, dy = browser.execute_script(
        "const i = document.getElementById('frame'); const r = i.getBoundingClientRect();"
        "const s = r.width / i.naturalWidth;"
        "return [arguments[0] * s - r.width / 2, arguments[1] * s - r.height / 2];",
        (x0 + x1) / 2,
        (y0 + y1) / 2,
    )
    click_at(browser, overlay, dx=round(dx), dy=round(dy))
    assert browser.execute_script("return document.activeElement.dataset.added") == "0"
    press(browser, str(missed["face"]), Keys.ENTER)
    wait_for(lambda: "round settled" in text_of(browser, "notice"), what="the settled round")
    stored = stored_decision(table.svc, read.roll_id)
    [added] = [b for b in stored.boxes if b["origin"] == "person"]
    assert added["face"] == missed["face"] and added["label"] == "die"
    cx, cy = (
        (added["box_xyxy"][0] + added["box_xyxy"][2]) / 2,
        (added["box_xyxy"][1] + added["box_xyxy"][3]) / 2,
    )
    assert abs(cx - (x0 + x1) / 2) < 3 and abs(cy - (y0 + y1) / 2) < 3  # where the person clicked
    assert sorted(stored.faces) == sorted(TRUTH["faces"])
