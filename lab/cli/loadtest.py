"""`throwbox lab loadtest`: many tables playing rounds at once against the service; latency and errors.

A benchmark, not a test: by default it starts `throwbox serve` as its own process on a free port with a
fresh data directory (so client and server do not share one Python interpreter), gives each table a
thread that plays whole rounds (open, wagers, no more bets, an invalid throw now and then, roll one, the
Extra Roll when it is due), and reports p50/p99 latency of the roll submissions and of all requests, and
every error. `--url` points it at a service that is already running instead.
"""

from __future__ import annotations

import itertools
import json
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


KINDS = ("roll", "read", "open_round", "wagers", "no_more_bets")


def summarize(tally: Tally, elapsed_s: float) -> dict[str, Any]:
    """p50/p99/mean per kind of request, all requests, throughput and errors, as plain numbers."""
    kinds: dict[str, Any] = {}
    for kind in KINDS:
        values = tally.latency_ms.get(kind, [])
        if values:
            kinds[kind] = {
                "n": len(values),
                "p50_ms": round(percentile(values, 50), 1),
                "p99_ms": round(percentile(values, 99), 1),
                "mean_ms": round(statistics.fmean(values), 1),
            }
    everything = [v for values in tally.latency_ms.values() for v in values]
    out: dict[str, Any] = {
        "wall_s": round(elapsed_s, 2),
        "requests": len(everything),
        "requests_per_s": round(len(everything) / elapsed_s, 1) if elapsed_s > 0 else 0.0,
        "kinds": kinds,
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
    }
    if everything:
        out["all"] = {
            "p50_ms": round(percentile(everything, 50), 1),
            "p99_ms": round(percentile(everything, 99), 1),
        }
    return out


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def play_table(
    *,
    base_urls: list[str],
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
    turn = itertools.count()
    dealer_h = {"Authorization": f"Bearer {dealer}"}
    reader_h = {"Authorization": f"Bearer {reader}"}

    def call(kind: str, method: str, path: str, headers: dict[str, str], expect: int, **kw: Any) -> Any:
        started = time.perf_counter()
        try:
            client = clients[next(turn) % len(clients)]  # the replicas in turn, one request each
            response = client.request(method, path, headers=headers, **kw)
        except httpx.HTTPError as exc:
            tally.error(f"{table} {kind}: {type(exc).__name__}: {exc}")
            return None
        tally.add(kind, (time.perf_counter() - started) * 1000)
        if response.status_code != expect:
            tally.error(f"{table} {kind}: HTTP {response.status_code} {response.text[:200]}")
            return None
        return response.json()

    clients = [httpx.Client(base_url=url, timeout=60) for url in base_urls]
    try:
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
    finally:
        for client in clients:
            client.close()


def loadtest(
    tables: int = typer.Option(50, min=1, max=500, help="Tables playing at once, one thread each."),
    rounds: int = typer.Option(5, min=1, max=10_000, help="Rounds each table plays."),
    url: str = typer.Option("", help="A running service (default: start one on a fresh data dir)."),
    admin_key_file: Path | None = typer.Option(
        None, help="File holding an admin key (with --url; default: the started service's first key)."
    ),
    seed: int = typer.Option(0, help="Seed of the random dice."),
    image: Path | None = typer.Option(
        None,
        help="A JPEG frame: every throw also POSTs it to /v1/reads (needs the reader's models). With "
        "--replicas: the reads stage's frame (default tests/vision/fixtures/IMG_20191208_111702.jpg).",
    ),
    replicas: int = typer.Option(
        0,
        min=0,
        max=16,
        help="N >= 1: on PostgreSQL, start N `throwbox serve` replicas and run the same load against one "
        "replica, then against all N, in this run (0: one service on SQLite, as before).",
    ),
    workers: int = typer.Option(
        0,
        min=0,
        max=64,
        help="With --replicas: M `throwbox worker`s play demo-clip tables during the load.",
    ),
    database_url: str = typer.Option(
        "",
        help="With --replicas: an empty PostgreSQL database (default: a throwaway cluster by initdb).",
    ),
    read_clients: int = typer.Option(
        4, min=1, max=256, help="With --replicas: clients POSTing the frame to /v1/reads at once."
    ),
    read_seconds: float = typer.Option(
        15.0, min=0, max=3600, help="With --replicas: how long the reads stage lasts (0: no reads stage)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Benchmark: TABLES tables submitting rolls concurrently; p50/p99 latency and errors.

    With --replicas N: the rounds, then a reads stage (reads per second), against one replica and then
    against N replicas on one PostgreSQL database, in one run (lab/cli/loadtest_replicas.py).
    """
    import httpx

    frame = None
    if image is None and replicas > 0:
        from lab.cli.loadtest_replicas import DEFAULT_IMAGE

        image = DEFAULT_IMAGE if DEFAULT_IMAGE.exists() else None
    if image is not None:
        try:
            frame = image.read_bytes()
        except OSError as exc:
            typer.echo(f"error: cannot read --image {image}: {exc}", err=True)
            raise typer.Exit(2) from exc
    if workers and not replicas:
        typer.echo("error: --workers needs --replicas", err=True)
        raise typer.Exit(2)
    if replicas:
        _run_replicas(
            url=url,
            database_url=database_url,
            replicas=replicas,
            workers=workers,
            tables=tables,
            rounds=rounds,
            seed=seed,
            frame=frame,
            read_clients=read_clients,
            read_seconds=read_seconds,
            as_json=as_json,
        )
        return
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
        tally, elapsed_s = _play_tables(
            base_url, key_file=key_file, tables=tables, rounds=rounds, seed=seed, frame=frame
        )
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=30)
    if as_json:
        typer.echo(json.dumps({"tables": tables, "rounds": rounds, **summarize(tally, elapsed_s)}, indent=2))
        if tally.errors:
            raise typer.Exit(1)
        return
    _print_tally(tally, tables=tables, rounds=rounds, elapsed_s=elapsed_s)


def _run_replicas(
    *,
    url: str,
    database_url: str,
    replicas: int,
    workers: int,
    tables: int,
    rounds: int,
    seed: int,
    frame: bytes | None,
    read_clients: int,
    read_seconds: float,
    as_json: bool,
) -> None:
    """`--replicas N`: the rounds and the reads stage against one replica, then N, on one PostgreSQL."""
    from lab.cli import loadtest_replicas as spread

    if url:
        typer.echo("error: --replicas starts its own replicas; it takes --database-url, not --url", err=True)
        raise typer.Exit(2)
    with spread.postgres_url(database_url) as db_url:
        report = spread.run(
            database_url=db_url,
            replica_count=replicas,
            worker_count=workers,
            tables=tables,
            rounds=rounds,
            seed=seed,
            image=frame,
            read_clients=read_clients,
            read_seconds=read_seconds,
        )
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        spread.print_report(report)
    if spread.total_errors(report):
        raise typer.Exit(1)


def _play_tables(
    base_url: str, *, key_file: Path, tables: int, rounds: int, seed: int, frame: bytes | None
) -> tuple[Tally, float]:
    """Make the keys and `tables` tables, then play `rounds` rounds on each at once, a thread a table:
    what each request took, and the wall time."""
    import httpx

    admin = {"Authorization": f"Bearer {key_file.read_text().strip()}"}
    with httpx.Client(base_url=base_url, timeout=60) as client:
        keys = {}
        for role in ("dealer", "reader"):
            made = client.post("/v1/keys", json={"role": role, "name": f"loadtest-{role}"}, headers=admin)
            made.raise_for_status()
            keys[role] = made.json()["key"]
        prefix = f"L{int(time.time())}"
        names = [f"{prefix}-{k:03d}" for k in range(tables)]
        for name in names:
            client.post("/v1/tables", json={"id": name, "game": "hrd10"}, headers=admin).raise_for_status()
    tally = Tally()
    threads = [
        threading.Thread(
            target=play_table,
            kwargs={
                "base_urls": [base_url],
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
    return tally, elapsed_s


def _print_tally(tally: Tally, *, tables: int, rounds: int, elapsed_s: float) -> None:
    """The load test's latencies by kind of request, and its errors, for a person (exit 1 on any error)."""
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


def register(app: typer.Typer) -> None:
    """Attach the `loadtest` command to the CLI."""
    app.command()(loadtest)
