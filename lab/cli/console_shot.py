"""`throwbox lab console-screenshot OUT.png`: the README's table console picture, from a real read.

Starts the service (its app under uvicorn, in this process, on a free port, a fresh data dir), makes a table
with a round waiting for dice, and throws one photo through the live loop with the reader's real models
(`--image`; by default a rendered scene of tests/vision/fixtures whose one die the shipped face model and
the pip count disagree on, so the reader leaves it to a person). It then opens `/console` in Debian's
headless chromium (selenium + chromedriver, no downloads) with a dealer key and saves the page as it waits
on that roll. A photo the reader decides by itself leaves nothing to show: the command says so (exit 1).
"""

from __future__ import annotations

import json
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from lab.cli.page_shot import check_browser, save_page_when

if TYPE_CHECKING:
    from api.db.session import Database
    from api.live import LiveRead
    from api.settings import Settings

FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "vision" / "fixtures" / "judge" / "valid.jpg"
TABLE = "T1"


def register(app: typer.Typer) -> None:
    """Attach the `console-screenshot` command to the CLI."""

    @app.command("console-screenshot")
    def console_screenshot(
        out: Path = typer.Argument(..., help="The PNG to write (the README uses docs/img/console.png)."),
        image: Path = typer.Option(FIXTURE, "--image", help="The photo thrown (the reader must leave it)."),
        chromium: Path = typer.Option(Path("/usr/bin/chromium"), help="The chromium binary."),
        chromedriver: Path = typer.Option(Path("/usr/bin/chromedriver"), help="Its chromedriver."),
        timeout_s: float = typer.Option(60.0, "--timeout-s", min=5.0, help="Give up after this long."),
    ) -> None:
        """Screenshot the table console waiting on a roll the real reader left to a person (exit 2 without
        chromium or selenium)."""
        check_browser(command="console-screenshot", chromium=chromium, chromedriver=chromedriver)
        with (
            tempfile.TemporaryDirectory(prefix="throwbox-console-shot-") as tmp,
            _service(Path(tmp) / "data") as (base, keys, database, settings),
        ):
            read = _throw(base=base, keys=keys, database=database, settings=settings, image=image)
            if read.verdict != "no_decision":
                typer.echo(
                    f"throwbox lab console-screenshot: the reader read {image} as {read.verdict}: "
                    "no roll waits for a person; give another --image",
                    err=True,
                )
                raise typer.Exit(1)
            save_page_when(
                url=f"{base}/console?table={TABLE}#key={keys['dealer']}",
                ready_js="const i = document.getElementById('frame'); "
                "return i.complete && i.naturalWidth > 0 "
                "&& document.querySelectorAll('#overlay rect').length > 0;",
                out=out,
                deadline=time.monotonic() + timeout_s,
                chromium=chromium,
                chromedriver=chromedriver,
                window_size="1280,800",
                settle_s=0.3,
                never="throwbox lab console-screenshot: the console never showed the roll",
            )
        typer.echo(json.dumps({"written": str(out), "image": str(image), "roll_id": read.roll_id}))


@contextmanager
def _service(data_dir: Path) -> Iterator[tuple[str, dict[str, str], Database, Settings]]:
    """The app under uvicorn in a thread, with keys for the dealer, the reader and the admin."""
    import socket

    import uvicorn

    from api.auth import Role, create_key
    from api.main import create_app
    from api.settings import Settings

    settings = Settings(data_dir=data_dir)
    app = create_app(settings)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 30.0
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError("the service did not start")
            time.sleep(0.05)
        keys: dict[str, str] = {}
        database: Database = app.state.database
        with database.session() as session:
            for role in (Role.ADMIN, Role.DEALER, Role.READER):
                keys[role.value] = create_key(session, role=role, name=f"console-shot-{role.value}").secret
        yield f"http://127.0.0.1:{port}", keys, database, settings
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def _throw(
    *, base: str, keys: dict[str, str], database: Database, settings: Settings, image: Path
) -> LiveRead:
    """A table with a round waiting for dice; `image` thrown through the live loop with the real reader."""
    import cv2
    import httpx
    import numpy as np

    from api.live import LiveConfig, LiveLoop
    from api.live_service import DatabaseRecorder
    from api.metrics import Metrics
    from api.rules_door import RulesClient
    from vision.capture import CapturedFrame
    from vision.reader import Reader
    from vision.settle import AtRest, SettleDetector

    picture = cv2.imread(str(image), cv2.IMREAD_COLOR)
    if picture is None or picture.dtype != np.uint8:
        raise typer.BadParameter(f"{image} is not a readable image", param_hint="--image")

    def call(method: str, path: str, who: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        response = httpx.request(
            method, base + path, headers={"Authorization": f"Bearer {keys[who]}"}, json=body, timeout=30.0
        )
        response.raise_for_status()
        answer: dict[str, Any] = response.json()
        return answer

    call("POST", "/v1/tables", "admin", {"id": TABLE, "game": "hrd10"})
    rnd = call("POST", f"/v1/tables/{TABLE}/rounds", "dealer")
    wagers = [{"seat": 1, "kind": "pip_street", "face": 2, "amount": "5.00"}]
    call("POST", f"/v1/rounds/{rnd['id']}/wagers", "dealer", {"wagers": wagers})
    call("POST", f"/v1/rounds/{rnd['id']}/no-more-bets", "dealer")
    loop = LiveLoop(
        config=LiveConfig(table_id=TABLE, expected_dice=10),
        items=[],
        detector=SettleDetector(),
        reader=Reader(),
        rules=RulesClient(base_url=base, key=keys["reader"]),
        recorder=DatabaseRecorder(database, settings, Metrics(), actor="reader:console-shot"),
    )
    captured = CapturedFrame(
        image=picture.astype(np.uint8),
        frame_id=f"{TABLE}-{image.stem}",
        table_id=TABLE,
        captured_at=datetime.now(UTC),
        seq=1,
        source_id=str(image),
        monotonic_s=0.0,
    )
    try:
        return loop.handle_throw(AtRest(captured, throw_index=1, moving_since_s=0.0, still_since_s=0.5))
    finally:
        loop.rules.close()
