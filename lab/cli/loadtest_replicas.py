"""`throwbox lab loadtest --replicas N [--workers M]`: the same load against one replica, then against N.

Issue 50's benchmark. One run, one PostgreSQL database (a throwaway cluster of Debian's PostgreSQL
started with initdb/pg_ctl as `.ci/run` does, or `--database-url`), `throwbox db upgrade` once (where this
build has it), N `throwbox serve` processes on that database, and then for each configuration (1 replica,
then N):

- rounds: TABLES tables, one thread each, play whole rounds (lab/cli/loadtest.py's `play_table`), every
  request sent to the configuration's replicas in turn (the client is the round-robin: no balancer needed);
- reads: READ_CLIENTS threads POST a frame to /v1/reads for READ_SECONDS; reads per second, and p50/p99;
- workers: with --workers M and a `throwbox worker` command in this build, M workers play demo-clip tables
  (one table each, spread over the configuration's replicas) during both stages; their rolls are counted.

The figures of both configurations are printed side by side (or as JSON). The processes share this machine's
cores: where there are fewer cores than replicas + workers + the load client, N replicas compete for the same
cores as one does, and the output says so.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import typer

from lab.cli.loadtest import KINDS, Tally, percentile, play_table, summarize

DEMO_SOURCE = "<demo clips>"  # api.demo_table.DEMO_SOURCE: a worker plays the shipped clips (contract)
DEFAULT_IMAGE = (
    Path(__file__).resolve().parents[2] / "tests" / "vision" / "fixtures" / "IMG_20191208_111702.jpg"
)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cli(*args: str) -> list[str]:
    """This interpreter's `throwbox` (PYTHONPATH decides whose code runs, as in the service tests)."""
    return [sys.executable, "-c", "from api.cli import main; main()", *args]


def has_command(*path: str) -> bool:
    """True when this build's `throwbox` has the command PATH (e.g. ("db", "upgrade"), ("worker",))."""
    import typer.main

    from api.cli import app

    command: Any = typer.main.get_command(app)  # a click group (typer may vendor its own click)
    for name in path:
        command = getattr(command, "commands", {}).get(name)
        if command is None:
            return False
    return True


@contextlib.contextmanager
def throwaway_postgres() -> Iterator[str]:
    """A fresh PostgreSQL cluster on a free port (Debian's initdb/pg_ctl), its URL; stopped and removed after.

    As root, the cluster runs as the `postgres` user (initdb refuses root), as `.ci/run` does it.
    """
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"), key=lambda p: int(p.parts[-3]))
    initdb = str(found[-1]) if found else shutil.which("initdb")
    if initdb is None:
        typer.echo("error: no PostgreSQL here (initdb); install it, or pass --database-url", err=True)
        raise typer.Exit(2)
    pg_ctl = str(Path(initdb).with_name("pg_ctl"))
    root = Path(tempfile.mkdtemp(prefix="throwbox-loadtest-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        prefix = ["runuser", "-u", "postgres", "--"]
    port = _free_port()
    data = root / "data"
    options = f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=300"
    try:
        subprocess.run(
            [*prefix, initdb, "-D", str(data), "-U", "postgres", "--auth=trust"],
            check=True,
            capture_output=True,
        )
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-w", "-l", str(root / "log"), "-o", options, "start"],
            check=True,
            capture_output=True,
        )
    except subprocess.CalledProcessError as exc:
        typer.echo(f"error: PostgreSQL did not start: {exc.stderr.decode(errors='replace')[-500:]}", err=True)
        shutil.rmtree(root, ignore_errors=True)
        raise typer.Exit(1) from exc
    try:
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run(
            [*prefix, pg_ctl, "-D", str(data), "-m", "fast", "stop"], capture_output=True, check=False
        )
        shutil.rmtree(root, ignore_errors=True)


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 180) -> None:
    import httpx

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(url + "/readyz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            typer.echo(f"error: {url} did not become ready (log: {log})", err=True)
            raise typer.Exit(1)
        time.sleep(0.2)


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@dataclass
class ReadTally:
    """Reads of the reads stage: latencies of the answered ones, 503s (busy, Retry-After) and errors."""

    latency_ms: list[float] = field(default_factory=list)
    busy: int = 0
    errors: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)


def _read_client(
    urls: list[str], start: int, reader: str, image: bytes, stop_at: float, tally: ReadTally
) -> None:
    import httpx

    headers = {"Authorization": f"Bearer {reader}"}
    clients = [httpx.Client(base_url=url, timeout=60) for url in urls]
    try:
        for turn in itertools.count(start):  # at least one read each, then until STOP_AT
            files = {"image": ("frame.jpg", image, "image/jpeg")}
            started = time.perf_counter()
            try:
                response = clients[turn % len(clients)].post("/v1/reads", headers=headers, files=files)
            except httpx.HTTPError as exc:
                with tally.lock:
                    tally.errors.append(f"read: {type(exc).__name__}: {exc}")
                if time.monotonic() >= stop_at:
                    return
                continue
            elapsed = (time.perf_counter() - started) * 1000
            with tally.lock:
                if response.status_code == 201:
                    tally.latency_ms.append(elapsed)
                elif response.status_code == 503:
                    tally.busy += 1
                else:
                    tally.errors.append(f"read: HTTP {response.status_code} {response.text[:200]}")
            if response.status_code == 503:
                time.sleep(float(response.headers.get("Retry-After", "1") or 1))
            if time.monotonic() >= stop_at:
                return
    finally:
        for client in clients:
            client.close()


def _reads_stage(urls: list[str], reader: str, image: bytes, clients: int, seconds: float) -> dict[str, Any]:
    tally = ReadTally()
    stop_at = time.monotonic() + seconds
    threads = [
        threading.Thread(target=_read_client, args=(urls, k, reader, image, stop_at, tally))
        for k in range(clients)
    ]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    values = tally.latency_ms
    out: dict[str, Any] = {
        "clients": clients,
        "wall_s": round(elapsed, 2),
        "reads": len(values),
        "reads_per_s": round(len(values) / elapsed, 2) if elapsed > 0 else 0.0,
        "busy_503": tally.busy,
        "errors": len(tally.errors),
        "error_samples": tally.errors[:5],
    }
    if values:
        out["p50_ms"] = round(percentile(values, 50), 1)
        out["p99_ms"] = round(percentile(values, 99), 1)
    return out


@dataclass
class Cluster:
    """The replicas of one run, their shared settings and the keys the load uses."""

    workdir: Path
    env: dict[str, str]
    urls: list[str]
    admin: str
    keys: dict[str, str]


def _admin_key(env: dict[str, str]) -> str:
    """Migrate once (`throwbox db upgrade` where this build has it) and make the run's admin key."""
    if has_command("db", "upgrade"):
        done = subprocess.run(_cli("db", "upgrade"), env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            typer.echo(f"error: throwbox db upgrade failed: {done.stderr[-500:]}", err=True)
            raise typer.Exit(1)
    made = subprocess.run(
        _cli("keys", "create", "--role", "admin", "--name", "loadtest-admin"),
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [line for line in made.stdout.splitlines() if line.strip()]
    if made.returncode != 0 or not lines:
        typer.echo(f"error: throwbox keys create failed: {made.stderr[-500:]}", err=True)
        raise typer.Exit(1)
    return lines[-1].strip()


@contextlib.contextmanager
def replicas(database_url: str, count: int, external_workers: bool) -> Iterator[Cluster]:
    """COUNT `throwbox serve` processes on DATABASE_URL sharing one data dir (evidence: shared storage)."""
    import httpx

    workdir = Path(tempfile.mkdtemp(prefix="throwbox-loadtest-"))
    env = {
        **os.environ,
        "THROWBOX_DATABASE_URL": database_url,
        "THROWBOX_DATA_DIR": str(workdir / "data"),
        "THROWBOX_MIGRATE_ON_START": "false",
        "THROWBOX_EXTERNAL_WORKERS": "true" if external_workers else "false",
    }
    admin = _admin_key(env)
    procs: list[subprocess.Popen[bytes]] = []
    urls: list[str] = []
    try:
        for k in range(count):
            port = _free_port()
            log = workdir / f"serve-{k + 1}.log"
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        _cli("serve", "--port", str(port)), env=env, stdout=out, stderr=subprocess.STDOUT
                    )
                )
            urls.append(f"http://127.0.0.1:{port}")
        for k, url in enumerate(urls):
            _wait_ready(url, procs[k], workdir / f"serve-{k + 1}.log")
        keys: dict[str, str] = {}
        with httpx.Client(base_url=urls[0], timeout=60) as client:
            for role in ("dealer", "reader"):
                made = client.post(
                    "/v1/keys",
                    json={"role": role, "name": f"loadtest-{role}"},
                    headers={"Authorization": f"Bearer {admin}"},
                )
                made.raise_for_status()
                keys[role] = made.json()["key"]
        yield Cluster(workdir=workdir, env=env, urls=urls, admin=admin, keys=keys)
    finally:
        _stop(procs)


def _rolls_at(url: str, key: str, tables: list[str]) -> int:
    import httpx

    total = 0
    with httpx.Client(base_url=url, timeout=30) as client:
        for table in tables:
            got = client.get(
                f"/v1/tables/{table}/rolls",
                params={"limit": 1000},
                headers={"Authorization": f"Bearer {key}"},
            )
            if got.status_code == 200:
                total += len(got.json())
    return total


def _worker_health(ports: list[int]) -> list[dict[str, Any] | None]:
    """Each worker's GET /healthz (None where it does not answer yet)."""
    import httpx

    answers: list[dict[str, Any] | None] = []
    for port in ports:
        try:
            answers.append(httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).json())
        except (httpx.HTTPError, ValueError):
            answers.append(None)
    return answers


def _playing(health: dict[str, Any] | None) -> bool:
    """True when every table of this worker is leased and its loop has had frames."""
    if health is None or not health.get("tables"):
        return False
    return all(t.get("state") == "leased" and (t.get("frames") or 0) > 0 for t in health["tables"].values())


@contextlib.contextmanager
def workers(
    cluster: Cluster, urls: list[str], count: int, label: str, ready_s: float = 120.0
) -> Iterator[dict[str, Any]]:
    """COUNT `throwbox worker` processes, one demo-clip table each, spread over URLS (each worker's first
    --service is its own replica, the others its fail-over); the stage starts once every one plays (or after
    READY_S); their rolls are counted at the service and their throws read at their /healthz."""
    import httpx

    info: dict[str, Any] = {"workers": 0}
    if count == 0:
        yield info
        return
    if not has_command("worker"):
        info["note"] = "this build has no `throwbox worker` command: the load ran without workers"
        yield info
        return
    admin = {"Authorization": f"Bearer {cluster.admin}"}
    tables = [f"W{label}-{k:02d}-{int(time.time())}" for k in range(count)]
    procs: list[subprocess.Popen[bytes]] = []
    ports: list[int] = []
    with contextlib.ExitStack() as cleanup, httpx.Client(base_url=urls[0], timeout=60) as client:
        cleanup.callback(_stop, procs)  # dropped below once every worker is up
        croupier = cluster.workdir / "croupier.key"
        croupier.write_text(cluster.keys["dealer"] + "\n")
        croupier.chmod(0o600)
        for k, table in enumerate(tables):
            client.post(
                "/v1/tables", json={"id": table, "game": "hrd10", "camera_source": DEMO_SOURCE}, headers=admin
            ).raise_for_status()
            made = client.post(
                "/v1/keys", json={"role": "worker", "name": f"loadtest-worker-{k}"}, headers=admin
            )
            made.raise_for_status()
            key_file = cluster.workdir / f"worker-{label}-{k}.key"
            key_file.write_text(made.json()["key"] + "\n")
            key_file.chmod(0o600)
            ports.append(_free_port())
            services = urls[k % len(urls) :] + urls[: k % len(urls)]
            command = _cli(
                "worker",
                *[arg for url in services for arg in ("--service", url)],
                "--key-file",
                str(key_file),
                "--table",
                table,
                "--worker-id",
                f"loadtest-{label}-{k}",
                "--spool",
                str(cluster.workdir / f"spool-{label}-{k}"),
                "--health-port",
                str(ports[-1]),
                "--croupier-key-file",
                str(croupier),
            )
            with (cluster.workdir / f"worker-{label}-{k}.log").open("wb") as out:
                procs.append(subprocess.Popen(command, env=cluster.env, stdout=out, stderr=subprocess.STDOUT))
        waited = time.monotonic()
        while time.monotonic() - waited < ready_s and not all(map(_playing, _worker_health(ports))):
            if any(proc.poll() is not None for proc in procs):
                break
            time.sleep(0.5)
        playing = sum(map(_playing, _worker_health(ports)))
        info.update(workers=count, tables=tables, playing_at_start=playing)
        info["ready_after_s"] = round(time.monotonic() - waited, 1)
        if playing < count:
            info["note"] = (
                f"only {playing} of {count} workers were playing their table when the load started "
                f"(logs: {cluster.workdir})"
            )
        cleanup.pop_all()
    before = _rolls_at(urls[0], cluster.admin, tables)
    throws_before = _throws_read(_worker_health(ports))
    started = time.perf_counter()
    try:
        yield info
    finally:
        elapsed = time.perf_counter() - started
        info["rolls"] = _rolls_at(urls[0], cluster.admin, tables) - before
        info["rolls_per_s"] = round(info["rolls"] / elapsed, 2) if elapsed > 0 else 0.0
        info["throws_read"] = _throws_read(_worker_health(ports)) - throws_before
        info["exited_early"] = sum(1 for proc in procs if proc.poll() is not None)
        _stop(procs)


def _throws_read(healths: list[dict[str, Any] | None]) -> int:
    return sum(
        int(t.get("throws_read") or 0) for h in healths if h is not None for t in h.get("tables", {}).values()
    )


def _rounds_stage(
    cluster: Cluster, urls: list[str], tables: int, rounds: int, seed: int, label: str
) -> Tally:
    import httpx

    admin = {"Authorization": f"Bearer {cluster.admin}"}
    names = [f"L{label}-{k:03d}-{int(time.time())}" for k in range(tables)]
    with httpx.Client(base_url=urls[0], timeout=60) as client:
        for name in names:
            client.post("/v1/tables", json={"id": name, "game": "hrd10"}, headers=admin).raise_for_status()
    tally = Tally()
    threads = [
        threading.Thread(
            target=play_table,
            kwargs={
                "base_urls": urls[k % len(urls) :] + urls[: k % len(urls)],
                "table": name,
                "rounds": rounds,
                "dealer": cluster.keys["dealer"],
                "reader": cluster.keys["reader"],
                "seed": seed * 100_000 + k,
                "tally": tally,
                "image": None,
            },
        )
        for k, name in enumerate(names)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return tally


def _warm_up(cluster: Cluster, image: bytes | None) -> None:
    """One round (and one read) on each replica, not counted: the first requests of a process pay its lazy
    imports and caches (seconds), which would otherwise be the p99 of a short run."""
    for k, url in enumerate(cluster.urls):
        _rounds_stage(cluster, [url], 1, 1, seed=999, label=f"warm{k}")
        if image is not None:
            _reads_stage([url], cluster.keys["reader"], image, clients=1, seconds=0.01)


def cpu_note(replicas: int, workers: int) -> str | None:
    """Where this machine's cores limit the comparison (None where each process has a core of its own)."""
    cores = os.cpu_count() or 1
    wanted = replicas + workers + 2  # the replicas, the workers, the load client and PostgreSQL
    if cores >= wanted:
        return None
    return (
        f"this machine has {cores} cores for {replicas} replicas, {workers} workers, PostgreSQL and the load "
        f"client (about {wanted} busy processes): the {replicas}-replica figures measure the same cores "
        "shared by more processes, not what a replica on its own machine adds"
    )


def run(
    *,
    database_url: str,
    replica_count: int,
    worker_count: int,
    tables: int,
    rounds: int,
    seed: int,
    image: bytes | None,
    read_clients: int,
    read_seconds: float,
) -> dict[str, Any]:
    """Both configurations on one database, one after the other; the report as plain data."""
    report: dict[str, Any] = {
        "replicas": replica_count,
        "workers": worker_count,
        "tables": tables,
        "rounds": rounds,
        "cores": os.cpu_count(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "configurations": [],
    }
    note = cpu_note(replica_count, worker_count)
    if note:
        report["note"] = note
    counts = [1, replica_count] if replica_count > 1 else [1]
    with replicas(database_url, replica_count, external_workers=worker_count > 0) as cluster:
        _warm_up(cluster, image)
        report["logs"] = str(cluster.workdir)  # the replicas' and workers' logs, kept
        for count in counts:
            urls = cluster.urls[:count]
            label = f"r{count}"
            config: dict[str, Any] = {"replicas": count}
            with workers(cluster, urls, worker_count, label) as worker_info:
                started = time.perf_counter()
                tally = _rounds_stage(cluster, urls, tables, rounds, seed, label)
                config["rounds"] = summarize(tally, time.perf_counter() - started)
                if image is not None and read_seconds > 0:
                    config["reads"] = _reads_stage(
                        urls, cluster.keys["reader"], image, read_clients, read_seconds
                    )
            config["workers"] = worker_info
            report["configurations"].append(config)
    return report


def print_report(report: dict[str, Any]) -> None:
    """The report as a table: one column per configuration."""
    configs = report["configurations"]
    typer.echo(
        f"tables {report['tables']}, rounds per table {report['rounds']}, {report['cores']} cores, "
        f"load average at start {report['load_average_at_start'][0]}"
    )
    header = f"{'':24s}" + "".join(f"{str(c['replicas']) + ' replica(s)':>26s}" for c in configs)
    typer.echo(header)

    def row(name: str, cells: list[str]) -> None:
        typer.echo(f"{name:24s}" + "".join(f"{cell:>26s}" for cell in cells))

    for kind in KINDS:
        cells = []
        for c in configs:
            got = c["rounds"]["kinds"].get(kind)
            cells.append(f"n={got['n']} {got['p50_ms']:.0f}/{got['p99_ms']:.0f} ms" if got else "-")
        if any(cell != "-" for cell in cells):
            row(f"{kind} p50/p99", cells)
    row(
        "all p50/p99",
        [
            f"{c['rounds']['all']['p50_ms']:.0f}/{c['rounds']['all']['p99_ms']:.0f} ms"
            if "all" in c["rounds"]
            else "-"
            for c in configs
        ],
    )
    row("requests/s (rounds)", [f"{c['rounds']['requests_per_s']:.0f}" for c in configs])
    if all("reads" in c for c in configs):
        row("reads/s", [f"{c['reads']['reads_per_s']:.2f}" for c in configs])
        row(
            "read p50/p99",
            [
                f"{c['reads']['p50_ms']:.0f}/{c['reads']['p99_ms']:.0f} ms" if "p50_ms" in c["reads"] else "-"
                for c in configs
            ],
        )
        row("reads refused (503)", [str(c["reads"]["busy_503"]) for c in configs])
    if report["workers"]:
        row("worker rolls/s", [str(c["workers"].get("rolls_per_s", "-")) for c in configs])
        row("worker throws read", [str(c["workers"].get("throws_read", "-")) for c in configs])
    errors = [c["rounds"]["errors"] + c.get("reads", {}).get("errors", 0) for c in configs]
    row("errors", [str(e) for e in errors])
    for note in dict.fromkeys(c["workers"]["note"] for c in configs if c["workers"].get("note")):
        typer.echo(f"note: {note}")
    if report.get("note"):
        typer.echo(f"note: {report['note']}")
    for c in configs:
        for message in c["rounds"]["error_samples"] + c.get("reads", {}).get("error_samples", []):
            typer.echo(f"  {c['replicas']} replica(s): {message}")


def total_errors(report: dict[str, Any]) -> int:
    """Errors of every stage of every configuration (503s of the reads stage are not errors)."""
    return sum(c["rounds"]["errors"] + c.get("reads", {}).get("errors", 0) for c in report["configurations"])


def postgres_url(given: str) -> contextlib.AbstractContextManager[str]:
    """GIVEN as it is, or a throwaway cluster's URL."""
    if given:
        return contextlib.nullcontext(given)
    return throwaway_postgres()
