"""`throwbox watch SOURCE [--seconds N] [--out DIR]`: run a frame source through the settle detector.

Prints each capture and settle event as it happens and saves every "at rest" frame (the frame a read is
taken from) into `--out`, with an `events.jsonl` log. SOURCE is a camera index (`0`), a stream URL
(`rtsp://...`, `http://...`), a video file, an image or a folder of images, or `demo` (synthetic throws).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from vision.capture import CaptureEvent
    from vision.settle import SettleEvent


def event_to_dict(event: CaptureEvent | SettleEvent) -> dict[str, Any]:
    """A JSON-ready description of a capture or settle event (frames become their ids)."""
    from vision.settle import AtRest, SettledWithoutThrow, StateChanged

    doc: dict[str, Any] = {"event": type(event).__name__}
    if isinstance(event, AtRest | SettledWithoutThrow):
        doc["frame_id"] = event.frame.frame_id
        doc["seq"] = event.frame.seq
        doc["captured_at"] = event.frame.captured_at.isoformat()
        doc["still_for_s"] = round(event.frame.monotonic_s - event.still_since_s, 4)
        if isinstance(event, AtRest):
            doc["throw_index"] = event.throw_index
        else:
            doc["intruder_seen"] = event.intruder_seen
            doc["empty"] = event.empty
        return doc
    if isinstance(event, StateChanged):
        doc.update(previous=event.previous.value, current=event.current.value, frame_id=event.frame_id)
        return doc
    for key, value in vars(event).items():
        doc[key] = value.value if hasattr(value, "value") else value
    return doc


def parse_outline(text: str) -> NDArray[np.float64]:
    """'x,y;x,y;x,y' -> (n, 2) points; a clear `ValueError` for anything else."""
    import numpy as np

    try:
        points = [tuple(float(v) for v in pair.split(",")) for pair in text.split(";") if pair.strip()]
    except ValueError as exc:
        raise ValueError(f"--roi {text!r}: numbers expected, as 'x,y;x,y;x,y'") from exc
    if len(points) < 3 or any(len(p) != 2 for p in points):
        raise ValueError(f"--roi {text!r}: at least 3 'x,y' points expected")
    return np.asarray(points, dtype=np.float64)


def _load_picture(path: Path) -> NDArray[np.uint8]:
    import cv2
    import numpy as np

    image = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if image is None:
        raise ValueError(f"--empty-box {path}: not a readable image")
    return np.asarray(image, dtype=np.uint8)


def _describe(doc: dict[str, Any]) -> str:
    name = doc["event"]
    rest = ", ".join(f"{k}={v}" for k, v in doc.items() if k != "event")
    return f"{name}: {rest}"


def register(app: typer.Typer) -> None:
    """Attach the `watch` command to the CLI."""

    @app.command()
    def watch(
        source: str = typer.Argument(
            ..., help="Camera index, stream URL, video file, image(s) folder, or 'demo'.", show_default=False
        ),
        seconds: float | None = typer.Option(
            None, "--seconds", min=0.0, help="Stop after this long (scene time for recordings)."
        ),
        out: Path | None = typer.Option(None, "--out", help="Save at-rest frames and events.jsonl here."),
        table: str = typer.Option("T1", "--table", help="Table id stamped on frames."),
        still_s: float = typer.Option(0.3, "--still-s", min=0.01, help="How long the dice must be still."),
        fps: float | None = typer.Option(None, "--fps", min=0.1, help="Frame rate for images / odd videos."),
        realtime: bool = typer.Option(False, "--realtime", help="Play recordings at their recorded pace."),
        save_handled: bool = typer.Option(
            False, "--save-handled", help="Also save frames of the box settled after a hand or the stick."
        ),
        roi: str | None = typer.Option(
            None, "--roi", help="The throw box's outline in pixels, 'x,y;x,y;x,y;...' (default: whole frame)."
        ),
        empty_box: Path | None = typer.Option(
            None, "--empty-box", help="A picture of the empty box (default: learnt from the first frames)."
        ),
        calibration: Path | None = typer.Option(
            None,
            "--calibration",
            help="Folder of table calibrations (`throwbox calibrate table`): watch <DIR>/<table>.json's box.",
        ),
        as_json: bool = typer.Option(False, "--json", help="Print events as JSON lines."),
    ) -> None:
        """Watch a source; one "at rest" frame per throw is saved (exit 2 if the source cannot be used)."""
        import cv2

        from vision.capture import CaptureConfig, CapturedFrame, CaptureError, open_capture
        from vision.settle import AtRest, SettleConfig, SettleDetector, SettledWithoutThrow, settle_stream

        try:
            capture = open_capture(source, table_id=table, config=CaptureConfig(realtime=realtime), fps=fps)
            reference = None if empty_box is None else _load_picture(empty_box)
            if calibration is not None and roi is not None:
                raise ValueError("give --roi or --calibration, not both")
            if calibration is not None:
                from calibration.store import load_table

                table_cal = load_table(calibration, table)
                detector = SettleDetector.for_table(
                    table_cal, SettleConfig(still_s=still_s), empty_box=reference
                )
            else:
                detector = SettleDetector(
                    SettleConfig(still_s=still_s),
                    roi_xy=None if roi is None else parse_outline(roi),
                    empty_box=reference,
                )
        except (CaptureError, ValueError) as exc:
            typer.echo(f"throwbox watch: {exc}", err=True)
            raise typer.Exit(2) from exc
        log = None
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            log = (out / "events.jsonl").open("w", encoding="utf-8")
        live = capture.grabber.live
        started = time.monotonic()
        first_s: float | None = None
        frames = reads = 0
        try:
            for item in settle_stream(capture, detector):
                if isinstance(item, CapturedFrame):
                    frames += 1
                    first_s = item.monotonic_s if first_s is None else first_s
                    if seconds is not None and not live and item.monotonic_s - first_s >= seconds:
                        break
                else:
                    doc = event_to_dict(item)
                    keep = isinstance(item, AtRest) or (
                        save_handled and isinstance(item, SettledWithoutThrow)
                    )
                    if out is not None and isinstance(item, AtRest | SettledWithoutThrow) and keep:
                        kind = "at_rest" if isinstance(item, AtRest) else "handled"
                        path = out / f"{kind}_{item.frame.frame_id}.png"
                        if not cv2.imwrite(str(path), item.frame.image):
                            raise CaptureError(f"cannot write {path}")
                        doc["saved"] = str(path)
                    reads += isinstance(item, AtRest)
                    typer.echo(json.dumps(doc) if as_json else _describe(doc))
                    if log is not None:
                        log.write(json.dumps(doc) + "\n")
                if seconds is not None and live and time.monotonic() - started >= seconds:
                    break
        except (CaptureError, ValueError) as exc:
            typer.echo(f"throwbox watch: {exc}", err=True)
            raise typer.Exit(2) from exc
        except KeyboardInterrupt:
            pass
        finally:
            capture.stop()
            if log is not None:
                log.close()
        summary = f"{frames} frames, {reads} throws read ({capture.repeats_dropped} repeated frames dropped)"
        typer.echo(json.dumps({"frames": frames, "throws_read": reads}) if as_json else summary)
