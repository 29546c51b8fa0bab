"""The fuzz benchmark: N hostile images (lab/hostile_images.py) through the reader as `throwbox read` runs it
and through `POST /v1/reads` on a real server, reporting crashes, 5xx, peak memory and the slowest case.

    python -m lab.fuzz --count 10000 --out fuzz-report.json      (or `throwbox lab fuzz`, once registered)

Two ways, side by side, each in its own process so that a crash (even a segfault in a decoder) is a
finding rather than the end of the run:

- `cli`: a worker process runs what `throwbox read` runs on a file, `vision.image.load_image` then
  `Reader.read` (the committed models, one thread). An exception other than `UnreadableImageError` is a
  crash; so is the worker dying or hanging past `--case-timeout` (it is then restarted).
- `rest`: `throwbox serve` on a free loopback port with its own data folder; each image is POSTed with a
  declared type drawn at random (the bytes must decide). A 5xx, a dropped connection, or `/healthz` failing
  after the case is a finding; a dead server is restarted.

Peak memory is each process's resident set (VmHWM), over the run and per case: the mark is reset before
each case (`/proc/PID/clear_refs`, Linux), so the case that costs most is named. Every finding's file is
saved next to the report, to be replayed.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import random
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Annotated, Any

import cv2
import httpx
import typer

from lab.hostile_images import HostileCase, fixture_photos, generate

DECLARED_TYPES = ("image/jpeg", "image/png", "application/octet-stream", "text/plain", "image/webp", "")
# `throwbox serve`, as the console script runs it (api.cli has no __main__).
_SERVE = "import sys; from api.cli import main; sys.argv[0] = 'throwbox'; main()"
_QUIET_ENV = {"OPENCV_LOG_LEVEL": "ERROR", "PYTHONWARNINGS": "ignore"}


def _status_kb(pid: int | str, field_name: str) -> int | None:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    found = re.search(rf"^{field_name}:\s+(\d+) kB", text, re.MULTILINE)
    return int(found.group(1)) if found else None


def _reset_peak(pid: int | str) -> None:
    """Reset the process's peak-RSS mark to its current RSS (Linux; elsewhere the peak is lifetime)."""
    with contextlib.suppress(OSError):
        Path(f"/proc/{pid}/clear_refs").write_text("5")


# ---- the `cli` way: a worker process -------------------------------------------------------------------


def _worker(conn: Connection, manifest: str | None) -> None:
    """Run load_image + Reader.read for each file sent; answer (outcome, detail, seconds, peak_mb)."""
    for name, value in _QUIET_ENV.items():
        os.environ.setdefault(name, value)
    import warnings

    warnings.simplefilter("ignore")  # Pillow warns on odd TIFF tags; the fuzz looks at outcomes only
    # libpng and libjpeg write their complaints straight to fd 2: silence them under the progress bar.
    os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
    from vision.image import UnreadableImageError, load_image
    from vision.onnx_session import MANIFEST_PATH
    from vision.reader import Reader
    from vision.types import Frame

    reader = Reader(threads=1, manifest_path=Path(manifest) if manifest else MANIFEST_PATH)
    conn.send(("ready", "", 0.0, (_status_kb("self", "VmHWM") or 0) / 1024))
    while True:
        path = conn.recv()
        if path is None:
            return
        _reset_peak("self")
        start = time.perf_counter()
        try:
            image = load_image(Path(path))
            roll = reader.read(Frame(image=image, frame_id="fuzz"))
            outcome, detail = "read", str(roll.verdict)
        except UnreadableImageError as exc:
            outcome, detail = "refused", str(exc)[:300]
        except Exception as exc:
            outcome = "crash"
            detail = "".join(traceback.format_exception_only(exc)).strip()[:500]
        seconds = time.perf_counter() - start
        conn.send((outcome, detail, seconds, (_status_kb("self", "VmHWM") or 0) / 1024))


@dataclass
class _Worker:
    manifest: str | None
    process: Any = None
    conn: Connection | None = None
    lifetime_peak_mb: float = 0.0

    def start(self) -> None:
        context = multiprocessing.get_context("spawn")
        parent, child = context.Pipe()
        self.process = context.Process(target=_worker, args=(child, self.manifest), daemon=True)
        self.process.start()
        self.conn = parent
        if not parent.poll(300):
            raise RuntimeError("the fuzz worker did not load the reader in 300 s")
        parent.recv()

    def send(self, path: Path) -> None:
        if self.conn is None:
            raise RuntimeError("worker not started")
        self.conn.send(str(path))

    def result(self, timeout_s: float) -> tuple[str, str, float, float]:
        """The case's result; a dead or hung worker is a crash, and is restarted."""
        if self.conn is None:
            raise RuntimeError("worker not started")
        if self.conn.poll(timeout_s):
            try:
                outcome, detail, seconds, peak_mb = self.conn.recv()
                self.lifetime_peak_mb = max(self.lifetime_peak_mb, peak_mb)
                return outcome, detail, seconds, peak_mb
            except EOFError:
                pass
        alive = self.process.is_alive()
        self.stop()
        self.start()
        why = f"worker hung past {timeout_s} s" if alive else f"worker died (exit {self.process.exitcode})"
        return "crash", why, timeout_s if alive else 0.0, 0.0

    def stop(self) -> None:
        if self.process is not None and self.process.is_alive():
            self.process.kill()
            self.process.join(10)


# ---- the `rest` way: a real server ---------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class _Server:
    workdir: Path
    process: subprocess.Popen[bytes] | None = None
    base_url: str = ""
    key: str = ""
    starts: int = 0
    lifetime_peak_mb: float = 0.0
    log: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log = self.workdir / "server.log"

    def start(self) -> None:
        port = _free_port()
        env = {**os.environ, **_QUIET_ENV, "THROWBOX_DATA_DIR": str(self.workdir / "data")}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(Path.cwd()), os.environ.get("PYTHONPATH")]))
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-c", _SERVE, "serve", "--host", "127.0.0.1", "--port", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
            )
        self.base_url = f"http://127.0.0.1:{port}"
        self.starts += 1
        deadline = time.monotonic() + 120
        while not self.healthy():
            if time.monotonic() > deadline or self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"throwbox serve did not start:\n{tail}")
            time.sleep(0.2)
        admin = (self.workdir / "data" / "first-admin.key").read_text().strip()
        if not self.key:
            response = httpx.post(
                f"{self.base_url}/v1/keys",
                json={"role": "reader", "name": "fuzz"},
                headers={"Authorization": f"Bearer {admin}"},
                timeout=30,
            )
            response.raise_for_status()
            self.key = response.json()["key"]
        # One good read first: the service loads its models on the first read, which is no case's cost.
        ok, photo = cv2.imencode(".jpg", fixture_photos()[0])
        warm = httpx.post(
            f"{self.base_url}/v1/reads",
            files={"image": ("warm.jpg", photo.tobytes(), "image/jpeg")},
            headers={"Authorization": f"Bearer {self.key}"},
            timeout=300,
        )
        if not ok or warm.status_code != 201:
            raise RuntimeError(f"the warm-up read failed: {warm.status_code} {warm.text[:300]}")

    def healthy(self) -> bool:
        try:
            return httpx.get(f"{self.base_url}/healthz", timeout=10).status_code == 200
        except httpx.HTTPError:
            return False

    def peak_mb(self) -> float:
        if self.process is None:
            return 0.0
        peak = (_status_kb(self.process.pid, "VmHWM") or 0) / 1024
        self.lifetime_peak_mb = max(self.lifetime_peak_mb, peak)
        return peak

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


# ---- the run -------------------------------------------------------------------------------------------


@dataclass
class _Tally:
    """One way's figures."""

    outcomes: dict[str, int] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    slowest: dict[str, Any] = field(default_factory=lambda: {"seconds": -1.0})
    costliest: dict[str, Any] = field(default_factory=lambda: {"peak_mb": -1.0})
    seconds_total: float = 0.0

    def add(self, case: HostileCase, outcome: str, detail: str, seconds: float, peak_mb: float) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1
        self.seconds_total += seconds
        named = {"index": case.index, "kind": case.kind, "note": case.note, "outcome": outcome}
        if seconds > self.slowest["seconds"]:
            self.slowest = {**named, "seconds": round(seconds, 4), "detail": detail[:200]}
        if peak_mb > self.costliest["peak_mb"]:
            self.costliest = {**named, "peak_mb": round(peak_mb, 1)}

    def summary(self, count: int, lifetime_peak_mb: float) -> dict[str, Any]:
        return {
            "outcomes": dict(sorted(self.outcomes.items())),
            "findings": len(self.findings),
            "first_findings": self.findings[:50],
            "peak_rss_mb": round(lifetime_peak_mb, 1),
            "costliest_case": self.costliest,
            "slowest_case": self.slowest,
            "mean_ms": round(1000 * self.seconds_total / max(1, count), 2),
        }


def run_fuzz(
    *,
    count: int,
    seed: int,
    out_path: Path,
    ways: tuple[str, ...] = ("cli", "rest"),
    case_timeout_s: float = 120.0,
    manifest: Path | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    """Run `count` hostile images through `ways` and write the JSON report to `out_path`; return it."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    findings_dir = out_path.parent / f"{out_path.stem}-findings"
    tallies = {way: _Tally() for way in ways}
    kinds: dict[str, int] = {}
    rng = random.Random(seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="throwbox-fuzz-") as tmp:
        workdir = Path(tmp)
        worker = _Worker(manifest=str(manifest) if manifest else None) if "cli" in ways else None
        server = _Server(workdir=workdir) if "rest" in ways else None
        if worker is not None:
            worker.start()
        if server is not None:
            server.start()
        client = httpx.Client(timeout=case_timeout_s)
        columns = (TextColumn("fuzz"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        try:
            with Progress(*columns, disable=not progress, transient=False) as bar:
                task = bar.add_task("fuzz", total=count)
                for case in generate(count, seed=seed):
                    kinds[case.kind] = kinds.get(case.kind, 0) + 1
                    path = workdir / f"case-{case.index}"
                    path.write_bytes(case.data)
                    if worker is not None:
                        worker.send(path)
                    if server is not None:
                        declared = rng.choice(DECLARED_TYPES)
                        _one_rest(case, server, client, declared, tallies["rest"], findings_dir)
                    if worker is not None:
                        outcome, detail, seconds, peak_mb = worker.result(case_timeout_s)
                        tallies["cli"].add(case, outcome, detail, seconds, peak_mb)
                        if outcome == "crash":
                            tallies["cli"].findings.append(_finding(case, detail, findings_dir))
                    path.unlink()
                    bar.advance(task)
        finally:
            client.close()
            if worker is not None:
                worker.stop()
            if server is not None:
                server.stop()
    report: dict[str, Any] = {
        "count": count,
        "seed": seed,
        "seconds": round(time.perf_counter() - started, 1),
        "kinds": dict(sorted(kinds.items())),
        "ways": {
            way: tallies[way].summary(
                count,
                worker.lifetime_peak_mb
                if way == "cli" and worker
                else (server.lifetime_peak_mb if server else 0.0),
            )
            for way in ways
        },
        "server_starts": server.starts if server is not None else 0,
        "findings_dir": str(findings_dir) if any(t.findings for t in tallies.values()) else None,
    }
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(report, indent=2) + "\n")
    return report


def _one_rest(
    case: HostileCase, server: _Server, client: httpx.Client, declared: str, tally: _Tally, findings_dir: Path
) -> None:
    """POST one case; a 5xx, a dropped connection or an unhealthy server afterwards is a finding."""
    if server.process is not None:
        _reset_peak(server.process.pid)
    files = {"image": (f"case-{case.index}", case.data, declared)}
    start = time.perf_counter()
    try:
        response = client.post(
            f"{server.base_url}/v1/reads", files=files, headers={"Authorization": f"Bearer {server.key}"}
        )
        status, detail = response.status_code, response.text[:300]
    except httpx.HTTPError as exc:
        status, detail = 0, f"{type(exc).__name__}: {exc}"
    seconds = time.perf_counter() - start
    peak_mb = server.peak_mb()
    healthy = server.healthy()
    outcome = "5xx" if status >= 500 else ("no answer" if status == 0 else str(status))
    if not healthy:
        outcome = f"{outcome}, then unhealthy"
    tally.add(case, outcome, detail, seconds, peak_mb)
    if status >= 500 or status == 0 or not healthy:
        tally.findings.append(_finding(case, f"{status}: {detail}", findings_dir))
        if not healthy:
            server.stop()
            server.start()


def _finding(case: HostileCase, detail: str, findings_dir: Path) -> dict[str, Any]:
    """Record a finding and keep its file, to replay it."""
    findings_dir.mkdir(parents=True, exist_ok=True)
    saved = findings_dir / f"case-{case.index}-{case.kind}.bin"
    saved.write_bytes(case.data)
    return {"index": case.index, "kind": case.kind, "note": case.note, "detail": detail, "file": str(saved)}


def register(app: typer.Typer) -> None:
    """Attach `fuzz` to a command group (`throwbox lab fuzz`)."""

    @app.command("fuzz")
    def fuzz(
        count: Annotated[int, typer.Option("--count", "-n", min=1, help="How many hostile images.")] = 10_000,
        seed: Annotated[int, typer.Option(help="Seed of the generator: case i is the same for a seed.")] = 0,
        out: Annotated[Path, typer.Option(help="Where the JSON report goes.")] = Path("fuzz-report.json"),
        way: Annotated[
            list[str] | None, typer.Option(help="cli (load_image + Reader.read) or rest; default both.")
        ] = None,
        case_timeout: Annotated[
            float, typer.Option(help="Seconds a case may take before it is a hang.")
        ] = 120.0,
        manifest: Annotated[
            Path | None, typer.Option(help="Model manifest (default: models/manifest.json).")
        ] = None,
    ) -> None:
        """Hostile images through the reader and the service: exit 1 on any crash, 5xx or unhealthy server."""
        way = way or ["cli", "rest"]
        unknown = sorted(set(way) - {"cli", "rest"})
        if unknown:
            raise typer.BadParameter(f"unknown way(s) {unknown}; use cli and/or rest")
        report = run_fuzz(
            count=count,
            seed=seed,
            out_path=out,
            ways=tuple(dict.fromkeys(way)),
            case_timeout_s=case_timeout,
            manifest=manifest,
        )
        for name, figures in report["ways"].items():
            typer.echo(
                f"{name}: {figures['outcomes']}; findings {figures['findings']}; peak RSS "
                f"{figures['peak_rss_mb']} MB; slowest {figures['slowest_case']['seconds']} s "
                f"({figures['slowest_case']['kind']}: {figures['slowest_case']['note']})"
            )
        typer.echo(f"report: {out} ({report['seconds']} s)")
        if any(figures["findings"] for figures in report["ways"].values()):
            raise typer.Exit(1)


def main() -> None:
    """`python -m lab.fuzz`."""
    app = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
    register(app)
    app(prog_name="python -m lab.fuzz")


if __name__ == "__main__":
    main()
