"""What the browser tests share: Debian's headless chromium and its chromedriver, driven by selenium, and
Debian's headless firefox-esr, driven through its own remote protocol (Marionette, with Mozilla's
`marionette_driver`: geckodriver cannot be had without GitHub); no downloads. Each is skipped with its reason
where it is missing, and a wait says what never showed."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
CHROMEDRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
FIREFOX = shutil.which("firefox-esr") or "/usr/bin/firefox-esr"
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
WINDOW_WH = (1280, 900)

needs_chromium = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="no Chromium here: apt-get install chromium chromium-driver (.ci/run does)",
)


def _firefox_missing() -> str | None:
    if not Path(FIREFOX).exists():
        return "no Firefox here: apt-get install firefox-esr (.ci/run does)"
    if importlib.util.find_spec("marionette_driver") is None:
        return "no marionette_driver here (Firefox's remote protocol client): the dev extra installs it"
    return None


needs_firefox = pytest.mark.skipif(_firefox_missing() is not None, reason=_firefox_missing() or "")


@contextmanager
def chromium(*, performance_log: bool = False) -> Iterator[Any]:
    """A headless chromium session, quit on leaving; with `performance_log` its network log is kept (to count
    a page's requests)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in FLAGS:
        options.add_argument(flag)
    if performance_log:
        options.set_capability("goog:loggingPrefs", {"performance": "ALL"})
    driver = webdriver.Chrome(service=DriverService(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()


class Firefox:
    """A Marionette session seen through the part of selenium's WebDriver the browser tests use (`get`,
    `current_url`, `execute_script`, `find_element(s)`, `refresh`), so one test drives either browser.
    Locator strategies and key codes are the W3C WebDriver's in both, so selenium's `By` and `Keys` serve."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def get(self, url: str) -> None:
        self.client.navigate(url)

    @property
    def current_url(self) -> str:
        url: str = self.client.get_url()
        return url

    def execute_script(self, script: str, *args: Any) -> Any:
        # In the page's own realm (no sandbox), as WebDriver runs a script.
        return self.client.execute_script(script, script_args=args, new_sandbox=False, sandbox=None)

    def find_element(self, by: str, value: str) -> Any:
        return self.client.find_element(by, value)

    def find_elements(self, by: str, value: str) -> list[Any]:
        found: list[Any] = self.client.find_elements(by, value)
        return found

    def refresh(self) -> None:
        self.client.refresh()


def _marionette_port(profile: Path, process: subprocess.Popen[bytes], *, timeout_s: float = 30.0) -> int:
    """The port Firefox's Marionette chose (asked for port 0: no clash between parallel tests), from the
    file it writes in its profile."""
    written = profile / "MarionetteActivePort"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"firefox-esr exited ({process.returncode}) before Marionette listened")
        if written.exists() and written.read_text(encoding="utf-8").strip():
            return int(written.read_text(encoding="utf-8"))
        time.sleep(0.05)
    raise RuntimeError(f"firefox-esr's Marionette did not listen within {timeout_s:.0f} s")


@contextmanager
def firefox() -> Iterator[Firefox]:
    """A headless firefox-esr session on a fresh profile, quit and removed on leaving."""
    with warnings.catch_warnings():  # mozinfo, imported by the driver, calls a deprecated distro function
        warnings.simplefilter("ignore", DeprecationWarning)
        from marionette_driver.marionette import Marionette

    with tempfile.TemporaryDirectory(prefix="throwbox-firefox-") as folder:
        profile = Path(folder)
        (profile / "user.js").write_text('user_pref("marionette.port", 0);\n', encoding="utf-8")
        command = [FIREFOX, "--headless", "--marionette", "--no-remote", "--profile", str(profile)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = Marionette(host="127.0.0.1", port=_marionette_port(profile, process))
            client.start_session()
            client.set_window_rect(width=WINDOW_WH[0], height=WINDOW_WH[1])
            try:
                yield Firefox(client)
            finally:
                client.delete_session()
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def press(driver: Any, *typed: str) -> None:
    """Keystrokes to whatever has the focus, as a person types them, in either browser."""
    if isinstance(driver, Firefox):
        keyboard = driver.client.actions.sequence("key", "keyboard")
        for k in typed:
            keyboard.send_keys(k)
        keyboard.perform()
        return
    from selenium.webdriver.common.action_chains import ActionChains

    chain = ActionChains(driver)
    for k in typed:
        chain.send_keys(k)
    chain.perform()


def click_at(driver: Any, element: Any, *, dx: int, dy: int) -> None:
    """A mouse click `dx`, `dy` CSS pixels from the centre of `element`, in either browser."""
    if isinstance(driver, Firefox):
        mouse = driver.client.actions.sequence("pointer", "mouse", {"pointerType": "mouse"})
        mouse.pointer_move(dx, dy, origin=element).click().perform()
        return
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(driver).move_to_element_with_offset(element, dx, dy).click().perform()


def wait_until(check: Callable[[], bool], *, page: str, what: str, timeout_s: float = 15.0) -> None:
    """Poll `check` until it holds; past `timeout_s`, fail saying `page` never showed `what`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"{page} never showed {what}")
