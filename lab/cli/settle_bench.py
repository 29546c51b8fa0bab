"""`throwbox lab settle-bench`: the settle detector against exact ground truth, on synthetic rounds of play.

Each round of the built-in demo scene (`vision.demo_scene.demo_plan`): the shaker throws ten dice, they roll
and stop, the dealer's hand drags dice to the layout, the stick reaches in, the hand clears the box. The
scene knows the frame on which the last die stopped, so the bench reports: throws read exactly once,
missed throws, extra reads (e.g. from a hand), reads on a frame where dice still moved or an intruder was in
the box, and the latency from true rest to the "at rest" event (scene time: what a live camera would see),
plus the detector's own processing time per frame on this machine.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import typer


@dataclass(frozen=True)
class SettleBenchResult:
    """Counts and timings of one bench run."""

    throws: int
    reads: int
    read_once: int  # throws with exactly one read, inside their rest period
    missed: int  # throws with no read
    extra_reads: int  # reads outside every throw's rest period, or a second read of a throw
    reads_while_moving: int  # reads on a frame where dice moved or an intruder was in the box
    frames: int
    latency_ms: tuple[float, ...]  # true rest -> at-rest event, scene time, per read throw
    update_ms: tuple[float, ...]  # detector time per frame

    def summary(self) -> dict[str, float | int]:
        """Headline figures: counts, latency median/p99/max, processing median/p99."""
        import numpy as np

        lat = np.asarray(self.latency_ms or (float("nan"),))
        upd = np.asarray(self.update_ms or (float("nan"),))
        return {
            "throws": self.throws,
            "reads": self.reads,
            "read_once": self.read_once,
            "missed": self.missed,
            "extra_reads": self.extra_reads,
            "reads_while_moving": self.reads_while_moving,
            "frames": self.frames,
            "latency_ms_median": round(float(np.median(lat)), 1),
            "latency_ms_p99": round(float(np.percentile(lat, 99)), 1),
            "latency_ms_max": round(float(np.max(lat)), 1),
            "update_ms_median": round(float(np.median(upd)), 2),
            "update_ms_p99": round(float(np.percentile(upd, 99)), 2),
        }


def run_settle_bench(
    *,
    throws: int,
    seed: int = 0,
    width_px: int = 640,
    height_px: int = 480,
    die_edge_px: int = 24,
    still_s: float = 0.3,
    via_video: bool = False,
) -> SettleBenchResult:
    """Render `throws` rounds of play, run them through capture and the settle detector, score them."""
    import cv2

    from vision.capture import Capture, CapturedFrame, DemoGrabber, open_capture
    from vision.demo_scene import DemoScene, Empty, SceneConfig, demo_plan
    from vision.settle import AtRest, SettleConfig, SettleDetector

    scene_config = SceneConfig(width_px=width_px, height_px=height_px, die_edge_px=die_edge_px, seed=seed)
    plan = (*demo_plan(throws), Empty(0.5))
    detector = SettleDetector(SettleConfig(still_s=still_s))
    reads: list[AtRest] = []
    update_ms: list[float] = []
    frames: list[CapturedFrame] = []
    with tempfile.TemporaryDirectory() as tmp:
        if via_video:
            truth = DemoScene(scene_config)
            path = Path(tmp) / "bench.avi"
            fourcc = cv2.VideoWriter.fourcc(*"MJPG")
            writer = cv2.VideoWriter(str(path), fourcc, scene_config.fps, (width_px, height_px))
            for image in truth.render(plan):
                writer.write(image)
            writer.release()
            capture = open_capture(str(path), table_id="bench")
        else:
            grabber = DemoGrabber(scene=scene_config, plan=plan)
            capture = Capture(grabber, table_id="bench")
        for item in capture:
            if not isinstance(item, CapturedFrame):
                continue
            frames.append(item)
            t0 = time.perf_counter()
            events = detector.update(item)
            update_ms.append((time.perf_counter() - t0) * 1000.0)
            reads += [e for e in events if isinstance(e, AtRest)]
        if not via_video:
            if grabber.scene is None:
                raise RuntimeError("the demo source rendered nothing")
            truth = grabber.scene
    per_throw = [0] * len(truth.throws)
    latency_ms: list[float] = []
    extra = moving = 0
    for read in reads:
        seq = read.frame.seq
        if truth.frames[seq].dice_moving or truth.frames[seq].intruder_present:
            moving += 1
        hit = next((t for t in truth.throws if t.rest_frame <= seq < t.end_frame), None)
        if hit is None or per_throw[hit.index] > 0:
            extra += 1
            continue
        per_throw[hit.index] += 1
        latency_ms.append((read.frame.monotonic_s - frames[hit.rest_frame].monotonic_s) * 1000.0)
    return SettleBenchResult(
        throws=len(truth.throws),
        reads=len(reads),
        read_once=sum(1 for n in per_throw if n == 1),
        missed=sum(1 for n in per_throw if n == 0),
        extra_reads=extra,
        reads_while_moving=moving,
        frames=len(frames),
        latency_ms=tuple(latency_ms),
        update_ms=tuple(update_ms),
    )


VIDEO_FORMAT = "throwbox-video/1"  # datasets/synth/video.py


def run_video_bench(root: Path, *, still_s: float = 0.3) -> SettleBenchResult:
    """Score the detector on the synthetic throw clips of `datasets/synth` (`throwbox lab synth --videos K`).

    Each clip runs from the release to `tail_s` after rest, with no empty box before it and no entry over
    the edge, so each gets a fresh detector whose empty-box reference is the clip's first frame and which
    is told the throw has started (`SettleDetector.throw_started`). `video.json` is read directly (format,
    fps, `frames`, `at_rest_frame`, `settled`): the bench needs nothing else of it.
    """
    from vision.capture import CapturedFrame, open_capture
    from vision.settle import AtRest, SettleConfig, SettleDetector

    docs = sorted(root.glob("*/video.json"))
    if not docs:
        raise ValueError(
            f"{root}: no throw videos (*/video.json); make some with `throwbox lab synth --videos K`"
        )
    reads = read_once = missed = extra = moving = frames = 0
    latency_ms: list[float] = []
    update_ms: list[float] = []
    for doc_path in docs:
        doc = json.loads(doc_path.read_text(encoding="utf-8"))
        if doc.get("format") != VIDEO_FORMAT:
            raise ValueError(f"{doc_path}: format {doc.get('format')!r}, expected {VIDEO_FORMAT!r}")
        try:
            fps = float(doc["fps"])
            at_rest = int(doc["at_rest_frame"])
            n_frames = len(doc["frames"])
            settled = bool(doc.get("settled", True))
            clip = doc_path.parent / str(doc.get("mp4") or "throw.mp4")
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{doc_path}: malformed video document ({exc!r})") from exc
        detector: SettleDetector | None = None
        clip_frames: list[CapturedFrame] = []
        clip_reads: list[AtRest] = []
        for item in open_capture(str(clip), table_id="bench", fps=fps):
            if not isinstance(item, CapturedFrame):
                continue
            if detector is None:
                detector = SettleDetector(SettleConfig(still_s=still_s), empty_box=item.image)
                detector.throw_started()
            clip_frames.append(item)
            t0 = time.perf_counter()
            events = detector.update(item)
            update_ms.append((time.perf_counter() - t0) * 1000.0)
            clip_reads += [e for e in events if isinstance(e, AtRest)]
        if len(clip_frames) != n_frames:
            raise ValueError(f"{clip}: {len(clip_frames)} frames decoded, video.json lists {n_frames}")
        frames += n_frames
        reads += len(clip_reads)
        moving += sum(1 for r in clip_reads if r.frame.seq < at_rest)
        good = [r for r in clip_reads if r.frame.seq >= at_rest]
        if settled and good:
            read_once += len(clip_reads) == 1
            latency_ms.append((good[0].frame.monotonic_s - clip_frames[at_rest].monotonic_s) * 1000.0)
            extra += len(good) - 1
        elif settled:
            missed += 1
        else:
            extra += len(good)  # the dice never settled in the clip: any read is one too many
    return SettleBenchResult(
        throws=len(docs),
        reads=reads,
        read_once=read_once,
        missed=missed,
        extra_reads=extra,
        reads_while_moving=moving,
        frames=frames,
        latency_ms=tuple(latency_ms),
        update_ms=tuple(update_ms),
    )


def register(app: typer.Typer) -> None:
    """Attach the `settle-bench` command to the CLI."""

    @app.command("settle-bench")
    def settle_bench(
        throws: int = typer.Option(20, "--throws", min=1, help="Rounds of play to render."),
        seed: int = typer.Option(0, "--seed", help="Scene seed (throw directions, faces, hand targets)."),
        width: int = typer.Option(640, "--width", min=96, help="Frame width in pixels."),
        height: int = typer.Option(480, "--height", min=96, help="Frame height in pixels."),
        die_px: int = typer.Option(24, "--die-px", min=6, help="Die edge in pixels."),
        still_s: float = typer.Option(0.3, "--still-s", min=0.01, help="Settle time of the detector."),
        video: bool = typer.Option(False, "--video", help="Go through an MJPG video file (compression)."),
        videos: Path | None = typer.Option(
            None,
            "--videos",
            help="Score synthetic throw clips (a `throwbox lab synth --videos` videos/ folder).",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
    ) -> None:
        """Score the settle detector on synthetic throws; exit 1 unless every throw was read exactly once.

        Default: rounds of play of the built-in demo scene (hands and stick included). With --videos DIR:
        the clips of `throwbox lab synth --videos` (3-D rendered, MP4-compressed, one throw each).
        """
        try:
            if videos is not None:
                result = run_video_bench(videos, still_s=still_s)
            else:
                result = run_settle_bench(
                    throws=throws,
                    seed=seed,
                    width_px=width,
                    height_px=height,
                    die_edge_px=die_px,
                    still_s=still_s,
                    via_video=video,
                )
        except (ValueError, OSError) as exc:
            typer.echo(f"throwbox lab settle-bench: {exc}", err=True)
            raise typer.Exit(2) from exc
        summary = result.summary()
        if as_json:
            params: dict[str, object] = {"still_s": still_s}
            if videos is not None:
                params["videos"] = str(videos)
            else:
                params.update(seed=seed, width=width, height=height, die_px=die_px, video=video)
            typer.echo(json.dumps({**summary, **params}))
        else:
            from rich.console import Console
            from rich.table import Table

            title = f"{throws} rounds, {width}x{height}, die {die_px} px, seed {seed}"
            table = Table(title=f"settle-bench: {videos if videos is not None else title}")
            table.add_column("figure")
            table.add_column("value", justify="right")
            for key, value in summary.items():
                table.add_row(key, str(value))
            Console().print(table)
        perfect = (
            result.read_once == result.throws and result.extra_reads == 0 and result.reads_while_moving == 0
        )
        if not perfect:
            raise typer.Exit(1)
