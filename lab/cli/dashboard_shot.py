"""`throwbox lab dashboard-screenshot OUT.png`: the README's dashboard picture, from a real demo run.

Starts `throwbox serve --demo` on a free port with a fresh data dir, waits until the demo table has read a
few throws, raises one surveillance review (so the alerts list has an entry; its message says it was made
for the screenshot), opens the dashboard in Debian's headless chromium (selenium + chromedriver, no
downloads) with the demo's surveillance key, and saves the page.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import typer

from lab.cli.page_shot import check_browser, save_page_when


def register(app: typer.Typer) -> None:
    """Attach the `dashboard-screenshot` command to the CLI."""

    @app.command("dashboard-screenshot")
    def dashboard_screenshot(
        out: Path = typer.Argument(..., help="The PNG to write (the README uses docs/img/dashboard.png)."),
        reads: int = typer.Option(3, "--reads", min=1, help="Wait for this many demo reads first."),
        chromium: Path = typer.Option(Path("/usr/bin/chromium"), help="The chromium binary."),
        chromedriver: Path = typer.Option(Path("/usr/bin/chromedriver"), help="Its chromedriver."),
        timeout_s: float = typer.Option(120.0, "--timeout-s", min=5.0, help="Give up after this long."),
    ) -> None:
        """Screenshot the dashboard of a live demo run (exit 2 without chromium or selenium)."""
        import httpx

        check_browser(command="dashboard-screenshot", chromium=chromium, chromedriver=chromedriver)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        with tempfile.TemporaryDirectory(prefix="throwbox-shot-") as tmp:
            data_dir = Path(tmp) / "data"
            env = {**os.environ, "THROWBOX_DATA_DIR": str(data_dir)}
            server = subprocess.Popen(
                [str(Path(sys.executable).parent / "throwbox"), "serve", "--demo", "--port", str(port)],
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            try:
                deadline = time.monotonic() + timeout_s
                key_path = data_dir / "demo-surveillance.key"
                seen = 0
                while seen < reads:
                    if time.monotonic() > deadline or server.poll() is not None:
                        typer.echo(
                            f"throwbox lab dashboard-screenshot: {seen} of {reads} reads in time", err=True
                        )
                        raise typer.Exit(1)
                    time.sleep(0.5)
                    if not key_path.exists():
                        continue
                    key = key_path.read_text(encoding="utf-8").strip()
                    try:
                        answer = httpx.get(
                            f"{base}/v1/events?follow=false&types=read",
                            headers={"Authorization": f"Bearer {key}"},
                            timeout=5.0,
                        )
                    except httpx.HTTPError:
                        continue
                    seen = answer.text.count("event: read")
                httpx.post(
                    f"{base}/v1/alerts",
                    json={"message": "surveillance review raised for this screenshot", "table_id": "demo"},
                    headers={"Authorization": f"Bearer {key}"},
                    timeout=5.0,
                ).raise_for_status()
                save_page_when(
                    url=f"{base}/#key={key}",
                    ready_js="const i = document.getElementById('frame'); "
                    "return i.complete && i.naturalWidth > 0 "
                    "&& document.getElementById('alerts').children.length > 0;",
                    out=out,
                    deadline=deadline,
                    chromium=chromium,
                    chromedriver=chromedriver,
                    window_size="1280,860",
                    settle_s=0.5,
                    never="throwbox lab dashboard-screenshot: the page never showed a frame",
                )
            finally:
                server.terminate()
                server.wait(30)
        typer.echo(json.dumps({"written": str(out), "reads_before": seen}))
