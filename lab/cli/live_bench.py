"""`throwbox lab live-bench`: latency of the live table from the dice at rest to the rules engine's answer.

A fresh service (temporary SQLite data dir, a real uvicorn server on a free port) gets a table; the live
loop plays throw clips (`api/demo_clips`, or `--videos DIR` from `throwbox lab synth --videos`) through the
capture and the settle detector, reads each at-rest frame with the reader's models, stores the read and
its evidence frame, and POSTs the roll; a croupier opens a round with the demo wagers before each throw.

Per throw: `settle wait` (from the first still frame to the at-rest event, scene time: the detector's
`still_s`), `read` and `process` (from the at-rest event to the rules engine's answer, wall time), and
their sum, rest to posted; and the same from the clip's true rest frame (its `video.json`), which the
settle detector's first still frame precedes or follows by a frame or two. The clips are decoded as
fast as they come (not paced), which changes nothing here: the loop handles each at-rest frame before it
takes the next frame.
"""

from __future__ import annotations

import json
import socket
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from api.live import LiveRead


def _percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=np.float64), q))


def _tracked(items: Any, where: dict[str, tuple[str, float, float]]) -> Iterator[Any]:
    """Pass the capture on; note each frame's clip, the clip's first frame time and the frame's time."""
    from vision.capture import CapturedFrame, ClipStarted

    clip: str | None = None
    start_s: float | None = None
    for item in items:
        if isinstance(item, ClipStarted):
            clip, start_s = item.clip, None
        elif isinstance(item, CapturedFrame) and clip is not None:
            start_s = item.monotonic_s if start_s is None else start_s
            where[item.frame_id] = (clip, start_s, item.monotonic_s)
        yield item


def _from_truth_rest(
    frame_id: str, process_ms: float, where: dict[str, tuple[str, float, float]]
) -> float | None:
    """Rest to posted from the clip's ground truth: its first frame at rest (video.json `at_rest_frame`)."""
    if frame_id not in where:
        return None
    clip, start_s, frame_s = where[frame_id]
    meta = Path(clip).parent / "video.json"
    if not meta.is_file():
        return None
    doc = json.loads(meta.read_text(encoding="utf-8"))
    rest_s = start_s + float(doc["at_rest_frame"]) / float(doc["fps"])
    return (frame_s - rest_s) * 1000.0 + process_ms


def _scene_seconds(where: dict[str, tuple[str, float, float]]) -> float:
    """The scene time the loop went through: per clip played, its first to last frame plus one frame."""
    played: dict[tuple[str, float], list[float]] = {}
    for clip, start_s, frame_s in where.values():
        played.setdefault((clip, start_s), []).append(frame_s)
    total = 0.0
    for (_, start_s), times in played.items():
        step = (max(times) - start_s) / (len(times) - 1) if len(times) > 1 else 0.0
        total += max(times) - start_s + step
    return total


def live_bench(
    videos: Path | None = typer.Option(
        None, "--videos", help="Folder of throw clips (default: the demo clips in api/demo_clips)."
    ),
    loops: int = typer.Option(5, "--loops", min=1, help="Play the clips this many times."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Latency from rest to the posted result (median, p99), reader and service in this process."""
    import httpx
    import uvicorn

    from api.auth import Role, create_key
    from api.demo_table import DemoCroupier, PacedDemoGrabber
    from api.live import LiveConfig, LiveLoop
    from api.live_service import DatabaseRecorder
    from api.main import create_app
    from api.rules_door import RulesClient
    from api.settings import Settings
    from vision.capture import Capture, CaptureError
    from vision.onnx_session import ModelError
    from vision.reader import Reader
    from vision.settle import SettleDetector

    where: dict[str, tuple[str, float, float]] = {}
    import api

    # The shipped demo clips (api/demo_clips; this module moved to lab/cli/ in issue 46).
    clips = videos if videos is not None else Path(api.__file__).resolve().parent / "demo_clips"
    try:
        grabber = PacedDemoGrabber(clips, gap_s=0.0, loops=loops)
        reader = Reader(threads=1)
    except (CaptureError, ModelError) as exc:
        typer.echo(f"throwbox lab live-bench: {exc}", err=True)
        raise typer.Exit(2) from exc
    with tempfile.TemporaryDirectory(prefix="throwbox-live-bench-") as tmp:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        base = f"http://127.0.0.1:{port}"
        settings = Settings(data_dir=Path(tmp) / "data", self_url=base)
        service = create_app(settings)
        server = uvicorn.Server(uvicorn.Config(service, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            if not thread.is_alive():
                typer.echo("throwbox lab live-bench: the service did not start", err=True)
                raise typer.Exit(2)
            time.sleep(0.02)
        database = service.state.database
        try:
            with database.session() as session:
                keys = {
                    role: create_key(session, role=role, name=f"bench-{role.value}").secret for role in Role
                }
            headers = {"Authorization": f"Bearer {keys[Role.ADMIN]}"}
            httpx.post(
                f"{base}/v1/tables", json={"id": "bench", "game": "hrd10"}, headers=headers
            ).raise_for_status()
            with httpx.Client(
                base_url=base, headers={"Authorization": f"Bearer {keys[Role.DEALER]}"}, timeout=10.0
            ) as dealer:
                loop = LiveLoop(
                    config=LiveConfig(table_id="bench", expected_dice=10),
                    items=_tracked(Capture(grabber, table_id="bench", source_id="bench"), where),
                    detector=SettleDetector(),
                    reader=reader,
                    rules=RulesClient(base_url=base, key=keys[Role.READER]),
                    recorder=DatabaseRecorder(
                        database, settings, service.state.metrics, actor="reader:bench"
                    ),
                    on_clip=DemoCroupier(dealer, table_id="bench").prepare,
                )
                started = time.perf_counter()
                cpu_started = time.process_time()  # every thread: the loop, the reader, the service
                loop.run()
                wall_s = time.perf_counter() - started
                cpu_s = time.process_time() - cpu_started
                loop.rules.close()
        finally:
            server.should_exit = True
            thread.join(10)
    reads = loop.reads
    if not reads:
        typer.echo("throwbox lab live-bench: no throw was read", err=True)
        raise typer.Exit(1)
    figures = _latency_figures(reads, where=where)
    verdicts: dict[str, int] = {}
    for r in reads:
        verdicts[r.verdict] = verdicts.get(r.verdict, 0) + 1
    doc = {
        "throws_read": len(reads),
        "clips": len(grabber.inner.videos) * loops,
        "posted": sum(r.answer is not None for r in reads),
        "verdicts": verdicts,
        "latency": figures,
        "goal_ms": 500.0,
        "wall_s": round(wall_s, 1),
        "models": reader.models,
    }
    # Sizing (deploy/README.md): CPU seconds per second of camera time is the cores one table's loop
    # needs at the clips' frame rate (every frame goes through the settle detector; each throw is read,
    # stored and posted to the service in this same process, so its share is included).
    scene_s = _scene_seconds(where)
    doc["frames"] = len(where)
    doc["cpu_s"] = round(cpu_s, 2)
    doc["scene_s"] = round(scene_s, 2)
    doc["cores_per_table"] = round(cpu_s / scene_s, 3) if scene_s > 0 else None
    if as_json:
        typer.echo(json.dumps(doc, indent=1))
        return
    _print_figures(doc, figures=figures, verdicts=verdicts)


def _latency_figures(
    reads: list[LiveRead], *, where: dict[str, tuple[str, float, float]]
) -> dict[str, dict[str, float]]:
    """Median and p99 of each latency of the throws read (and from the clips' true rest frame, where every
    throw has one)."""
    series = {
        "rest_to_posted_ms": [r.rest_to_posted_ms for r in reads],
        "settle_wait_ms": [r.settle_wait_ms for r in reads],
        "read_ms": [r.read_ms for r in reads],
        "process_ms": [r.process_ms for r in reads],
    }
    truth = [_from_truth_rest(r.roll_id, r.process_ms, where) for r in reads]
    if all(t is not None for t in truth):
        series["truth_rest_to_posted_ms"] = [float(t) for t in truth if t is not None]
    figures = {
        name: {"median": round(_percentile(v, 50), 1), "p99": round(_percentile(v, 99), 1)}
        for name, v in series.items()
    }
    return figures


def _print_figures(
    doc: dict[str, Any], *, figures: dict[str, dict[str, float]], verdicts: dict[str, int]
) -> None:
    """The live bench's figures as a table and two lines, for a person."""
    from rich.console import Console
    from rich.table import Table

    table = Table(
        title=f"live table: {doc['throws_read']} throws read of {doc['clips']} clips, {doc['posted']} posted"
    )
    table.add_column("from rest to ...")
    table.add_column("median ms", justify="right")
    table.add_column("p99 ms", justify="right")
    rows = [
        ("settle_wait_ms", "at-rest event (settle wait, scene time)"),
        ("read_ms", "  read (reader's models)"),
        ("process_ms", "  read + store + POST answered (wall)"),
        ("rest_to_posted_ms", "posted result (sum)"),
    ]
    if "truth_rest_to_posted_ms" in figures:
        rows.append(("truth_rest_to_posted_ms", "posted result, from the clips' true rest frame"))
    for name, label in rows:
        table.add_row(label, f"{figures[name]['median']:.1f}", f"{figures[name]['p99']:.1f}")
    Console().print(table)
    typer.echo(f"verdicts {verdicts}; wall {doc['wall_s']} s; goal under 500 ms")
    typer.echo(
        f"CPU {doc['cpu_s']} s for {doc['scene_s']} s of camera time ({doc['frames']} frames): "
        f"{doc['cores_per_table']} cores per table"
    )


def register(app: typer.Typer) -> None:
    """Attach the `live-bench` command to the CLI."""
    app.command("live-bench")(live_bench)
