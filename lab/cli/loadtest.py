"""`throwbox lab loadtest`: many tables playing rounds at once against the service; latency and errors.

A benchmark, not a test: by default it starts `throwbox serve` as its own process on a free port with a
fresh data directory (so client and server do not share one Python interpreter), gives each table a
thread that plays whole rounds (open, wagers, no more bets, an invalid throw now and then, roll one, the
Extra Roll when it is due), and reports p50/p99 latency of the roll submissions and of all requests, and
every error. `--url` points it at a service that is already running instead.
"""

from __future__ import annotations

import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer


@dataclass
class Tally:
    """Latencies by kind of request, and errors, shared by the table threads."""

    latency_ms: dict[str, list[float]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, kind: str, latency_ms: float) -> None:
        with self.lock:
            self.latency_ms.setdefault(kind, []).append(latency_ms)

    def error(self, message: str) -> None:
        with self.lock:
            self.errors.append(message)


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (0..100) by the nearest-rank method."""
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(q / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _play_table(
    *,
    base_url: str,
    table: str,
    rounds: int,
    dealer: str,
    reader: str,
    seed: int,
    tally: Tally,
    image: bytes | None,
) -> None:
    import httpx

    from api.schemas.rolls import RollSubmission

    rng = random.Random(seed)
    dealer_h = {"Authorization": f"Bearer {dealer}"}
    reader_h = {"Authorization": f"Bearer {reader}"}

    def call(kind: str, method: str, path: str, headers: dict[str, str], expect: int, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            response = client.request(method, path, headers=headers, **kw)
        except httpx.HTTPError as exc:
            tally.error(f"{table} {kind}: {type(exc).__name__}: {exc}")
            return None
        tally.add(kind, (time.perf_counter() - started) * 1000)
        if response.status_code != expect:
            tally.error(f"{table} {kind}: HTTP {response.status_code} {response.text[:200]}")
            return None
        return response.json()

    with httpx.Client(base_url=base_url, timeout=60) as client:
        for number in range(rounds):
            opened = call("open_round", "POST", f"/v1/tables/{table}/rounds", dealer_h, 201)
            if opened is None:
                return
            rid = opened["id"]
            face = rng.randint(1, 6)
            wagers = [
                {"seat": 1, "kind": "pip_street", "face": face, "amount": "5.00"},
                {"seat": 1, "kind": "like_kind", "count": rng.randint(2, 8), "amount": "5.00"},
                {"seat": 1, "kind": "extra_roll", "amount": "5.00"},
                {"seat": 1, "kind": "millionaire_row", "count": 9, "amount": "1.00"},
            ]
            if (
                call("wagers", "POST", f"/v1/rounds/{rid}/wagers", dealer_h, 201, json={"wagers": wagers})
                is None
            ):
                return
            if call("no_more_bets", "POST", f"/v1/rounds/{rid}/no-more-bets", dealer_h, 200) is None:
                return
            throw = 0
            dice = 10
            while True:
                throw += 1
                roll_id = f"{table}-{number}-{throw}"
                if image is not None:
                    # The camera's reader: read the frame first (POST /v1/reads), then submit the roll.
                    files = {"image": ("frame.jpg", image, "image/jpeg")}
                    call("read", "POST", "/v1/reads", reader_h, 201, files=files, data={"table_id": table})
                if rng.random() < 0.1:
                    body = RollSubmission(
                        roll_id=roll_id,
                        source="reader",
                        verdict="invalid",
                        faces=[],
                        reasons=["a die left the table"],
                    )
                    call("roll", "POST", f"/v1/tables/{table}/rolls", reader_h, 201, json=body.wire())
                    continue
                faces = [rng.randint(1, 6) for _ in range(dice)]
                body = RollSubmission(roll_id=roll_id, source="reader", verdict="valid", faces=faces)
                answer = call("roll", "POST", f"/v1/tables/{table}/rolls", reader_h, 201, json=body.wire())
                if answer is None or answer["settled"]:
                    break
                dice = answer["round"]["dice_to_rethrow"]


def register(app: typer.Typer) -> None:
    """Attach the `loadtest` command to the CLI."""

    @app.command()
    def loadtest(
        tables: int = typer.Option(50, min=1, max=500, help="Tables playing at once, one thread each."),
        rounds: int = typer.Option(5, min=1, max=10_000, help="Rounds each table plays."),
        url: str = typer.Option("", help="A running service (default: start one on a fresh data dir)."),
        admin_key_file: Path | None = typer.Option(
            None, help="File holding an admin key (with --url; default: the started service's first key)."
        ),
        seed: int = typer.Option(0, help="Seed of the random dice."),
        image: Path | None = typer.Option(
            None, help="A JPEG frame: every throw also POSTs it to /v1/reads (needs the reader's models)."
        ),
    ) -> None:
        """Benchmark: TABLES tables submitting rolls concurrently; p50/p99 latency and errors."""
        import httpx

        frame = None
        if image is not None:
            try:
                frame = image.read_bytes()
            except OSError as exc:
                typer.echo(f"error: cannot read --image {image}: {exc}", err=True)
                raise typer.Exit(2) from exc
        workdir = Path(tempfile.mkdtemp(prefix="throwbox-loadtest-"))
        server: subprocess.Popen[bytes] | None = None
        if url:
            if admin_key_file is None:
                typer.echo("error: --url needs --admin-key-file", err=True)
                raise typer.Exit(2)
            base_url = url.rstrip("/")
            key_file = admin_key_file
        else:
            port = _free_port()
            base_url = f"http://127.0.0.1:{port}"
            data_dir = workdir / "data"
            env = {**os.environ, "THROWBOX_DATA_DIR": str(data_dir)}
            env.pop("THROWBOX_DATABASE_URL", None)
            log = (workdir / "serve.log").open("wb")
            command = [sys.executable, "-c", "from api.cli import main; main()", "serve", "--port", str(port)]
            server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            key_file = data_dir / "first-admin.key"
        try:
            deadline = time.monotonic() + 120
            while True:
                try:
                    if httpx.get(base_url + "/readyz", timeout=2).status_code == 200 and key_file.exists():
                        break
                except httpx.HTTPError:
                    pass
                if (server is not None and server.poll() is not None) or time.monotonic() > deadline:
                    typer.echo(
                        f"error: the service at {base_url} did not become ready (log: {workdir})", err=True
                    )
                    raise typer.Exit(1)
                time.sleep(0.2)
            admin = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
            with httpx.Client(base_url=base_url, timeout=60) as client:
                keys = {}
                for role in ("dealer", "reader"):
                    made = client.post(
                        "/v1/keys", json={"role": role, "name": f"loadtest-{role}"}, headers=admin
                    )
                    made.raise_for_status()
                    keys[role] = made.json()["key"]
                prefix = f"L{int(time.time())}"
                names = [f"{prefix}-{k:03d}" for k in range(tables)]
                for name in names:
                    client.post(
                        "/v1/tables", json={"id": name, "game": "hrd10"}, headers=admin
                    ).raise_for_status()
            tally = Tally()
            threads = [
                threading.Thread(
                    target=_play_table,
                    kwargs={
                        "base_url": base_url,
                        "table": name,
                        "rounds": rounds,
                        "dealer": keys["dealer"],
                        "reader": keys["reader"],
                        "seed": seed * 100_000 + k,
                        "tally": tally,
                        "image": frame,
                    },
                )
                for k, name in enumerate(names)
            ]
            started = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            elapsed_s = time.perf_counter() - started
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
        everything = [v for values in tally.latency_ms.values() for v in values]
        typer.echo(
            f"tables {tables}, rounds per table {rounds}, wall {elapsed_s:.1f} s, "
            f"{len(everything) / elapsed_s:.0f} requests/s"
        )
        for kind in ("roll", "read", "open_round", "wagers", "no_more_bets"):
            values = tally.latency_ms.get(kind, [])
            if values:
                typer.echo(
                    f"{kind:13s} n={len(values):6d}  p50 {percentile(values, 50):7.1f} ms  "
                    f"p99 {percentile(values, 99):7.1f} ms  mean {statistics.fmean(values):7.1f} ms"
                )
        if everything:
            typer.echo(
                f"{'all':13s} n={len(everything):6d}  p50 {percentile(everything, 50):7.1f} ms  "
                f"p99 {percentile(everything, 99):7.1f} ms"
            )
        typer.echo(f"errors {len(tally.errors)}")
        for message in tally.errors[:10]:
            typer.echo(f"  {message}")
        if tally.errors:
            raise typer.Exit(1)
