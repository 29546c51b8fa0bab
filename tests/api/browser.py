"""What the browser tests share: Debian's headless chromium and its chromedriver, driven by selenium (no
downloads), skipped with their reason where they are missing, and a wait that says what never showed."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

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

needs_chromium = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="no Chromium here: apt-get install chromium chromium-driver (.ci/run does)",
)


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


def wait_until(check: Callable[[], bool], *, page: str, what: str, timeout_s: float = 15.0) -> None:
    """Poll `check` until it holds; past `timeout_s`, fail saying `page` never showed `what`."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"{page} never showed {what}")
