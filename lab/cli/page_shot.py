"""What `throwbox lab dashboard-screenshot` and `console-screenshot` share: Debian's headless chromium driven
by selenium and its chromedriver (no downloads), and a page saved once it shows what the picture is for."""

from __future__ import annotations

import time
from pathlib import Path

import typer

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


def check_browser(*, command: str, chromium: Path, chromedriver: Path) -> None:
    """Exit 2, saying why, without selenium, chromium or its chromedriver (before any service is started)."""
    try:
        import selenium  # noqa: F401
    except ImportError as exc:
        typer.echo(f"throwbox lab {command}: needs selenium (pip install -e '.[dev]')", err=True)
        raise typer.Exit(2) from exc
    if not chromium.exists() or not chromedriver.exists():
        typer.echo(f"throwbox lab {command}: no {chromium} or {chromedriver}", err=True)
        raise typer.Exit(2)


def save_page_when(
    *,
    url: str,
    ready_js: str,
    out: Path,
    deadline: float,
    chromium: Path,
    chromedriver: Path,
    window_size: str,
    settle_s: float,
    never: str,
) -> None:
    """Open `url`, wait until `ready_js` returns true (exit 1 with `never` past the monotonic `deadline`),
    let the page settle `settle_s` seconds and save it to `out`."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service as DriverService

    options = webdriver.ChromeOptions()
    options.binary_location = str(chromium)
    for flag in (*FLAGS, f"--window-size={window_size}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=DriverService(executable_path=str(chromedriver)), options=options)
    try:
        driver.get(url)
        while not driver.execute_script(ready_js):
            if time.monotonic() > deadline:
                typer.echo(never, err=True)
                raise typer.Exit(1)
            time.sleep(0.2)
        time.sleep(settle_s)
        out.parent.mkdir(parents=True, exist_ok=True)
        driver.save_screenshot(str(out))
    finally:
        driver.quit()
