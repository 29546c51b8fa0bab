"""Frame sources for the live table: camera, stream, video file, images, demo; loss and freeze detection.

Every source is a small `Grabber` (open / read one image / close), the transport. `Capture` wraps one and
turns it into a stream of `CapturedFrame`s and typed `CaptureEvent`s, stamping each frame with a sequence
number, the table, a UTC time and a monotonic time, and watching the feed's health:

- no new frame for `no_frame_timeout_s` (a live source)          -> `SourceLost(kind=NO_FRAMES)`
- the same image, bit for bit, for `frozen_after_s` (a live source) -> `SourceLost(kind=FROZEN)`
- while lost: close, wait with exponential back-off, reopen       -> `Reconnecting(attempt, delay_s)`
- the first fresh frame after a loss                               -> `SourceRecovered(outage_s)`
- a recorded source (file, images, demo clip) runs out              -> `SourceEnded`
- the demo moves on to the next throw clip (a cut, not motion)        -> `ClipStarted`

A bit-identical repeat of the previous image is never handed on from a live source: a real camera's sensor
noise makes consecutive frames differ, so a repeat is a stalled pipeline, not a still table, and passing it
on would let the settle detector see "dice at rest" in a stale picture. Consumers reset their state on
`SourceLost`, so no roll is ever read from a frame that predates an outage.

Errors (typed, each with a message naming the source)::

    CaptureError              base class
    +-- SourceSpecError       the SOURCE string names nothing we can open (no such file, unknown scheme)
    +-- SourceOpenError       the source exists but cannot be opened when the capture starts
    +-- FrameDecodeError      an image of an image sequence cannot be decoded
    +-- SourceLostError       a live source stayed lost for `max_reconnect_attempts` reconnections

Time stamps: for a live source `monotonic_s` is `time.monotonic()` when the frame was read; for a recorded
source it is the capture's start plus the frame's position in the recording, so the time between two frames
is scene time whatever the playback speed (files are read as fast as they decode unless `realtime`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from pathlib import Path
from typing import Protocol

import cv2
import numpy as np
from numpy.typing import NDArray

from vision.demo_scene import DemoScene, SceneConfig, Step, demo_plan
from vision.types import Frame

ImageArray = NDArray[np.uint8]

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp"})
VIDEO_SUFFIXES = frozenset({".mp4", ".avi", ".mkv", ".mov", ".webm", ".m4v", ".mpg", ".mpeg"})
STREAM_SCHEMES = ("rtsp://", "rtsps://", "rtmp://", "http://", "https://", "udp://", "tcp://")


# ------------------------------------------------------------------------------------------------ errors
class CaptureError(Exception):
    """Base class of every capture error."""


class SourceSpecError(CaptureError):
    """The SOURCE string names nothing we can open (no such file, not a device index, unknown scheme)."""


class SourceOpenError(CaptureError):
    """The source exists but cannot be opened when the capture starts (no camera there, unreadable video)."""


class FrameDecodeError(CaptureError):
    """An image of an image sequence cannot be decoded."""


class SourceLostError(CaptureError):
    """A live source stayed lost through `max_reconnect_attempts` reconnections."""


# ------------------------------------------------------------------------------------------------ types
@dataclass(frozen=True, kw_only=True, eq=False)
class CapturedFrame(Frame):
    """A `Frame` as it came off a source: its sequence number, source and monotonic time stamp.

    `frame_id` is `<table>-<capture start, UTC>-<seq>`, unique across restarts of the service. Frames
    compare by identity (`eq=False`): comparing images pixel by pixel is never what `==` should mean, and
    events holding a frame stay comparable.
    """

    seq: int
    source_id: str
    monotonic_s: float

    # `eq=False` alone would inherit `Frame.__eq__`, which compares the image arrays and raises.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.seq < 0:
            raise ValueError(f"seq must be >= 0, got {self.seq}")
        if self.captured_at.tzinfo is None:
            raise ValueError("captured_at must be timezone-aware (UTC)")


class LossKind(StrEnum):
    """Why a source counts as lost."""

    NO_FRAMES = "no_frames"  # nothing new arrived for `no_frame_timeout_s`
    FROZEN = "frozen"  # the same image, bit for bit, for `frozen_after_s`


@dataclass(frozen=True)
class SourceLost:
    """The source stopped delivering fresh frames; consumers must drop what they were building."""

    source_id: str
    kind: LossKind
    last_frame_s: float  # monotonic time of the last fresh frame
    detected_s: float  # monotonic time the loss was declared


@dataclass(frozen=True)
class Reconnecting:
    """The capture is closing and reopening a lost source after `delay_s` (exponential back-off).

    `last_error` is why the previous reopening failed, if it did.
    """

    source_id: str
    attempt: int
    delay_s: float
    last_error: str | None = None


@dataclass(frozen=True)
class SourceRecovered:
    """Fresh frames flow again; `outage_s` runs from the last fresh frame before the loss to this one."""

    source_id: str
    kind: LossKind
    outage_s: float
    detected_s: float


@dataclass(frozen=True)
class SourceEnded:
    """A recorded source (video file, images, a finite demo) has no more frames."""

    source_id: str
    frames: int


@dataclass(frozen=True)
class ClipStarted:
    """The next frame begins another recording (the demo playing throw clips back to back): a cut, not motion.

    The synthetic throw clips of `datasets/synth` start at the release, so consumers treat the cut as the
    start of a throw seen from a new camera (see `SettleDetector.new_clip`).
    """

    source_id: str
    clip: str


CaptureEvent = SourceLost | Reconnecting | SourceRecovered | SourceEnded | ClipStarted


@dataclass(frozen=True)
class Grab:
    """One image from a grabber; `media_time_s` is its position in a recording (None for live sources).

    `clip_start` names the clip this image begins, when a grabber plays several recordings back to back.
    """

    image: ImageArray
    media_time_s: float | None = None
    clip_start: str | None = None


class Grabber(Protocol):
    """The transport under `Capture`: one source, opened, read one image at a time, closed.

    `read` returns None when no image is available: for a live source a failed or timed-out read (the
    capture decides when that becomes a loss), for a recorded source the end of the recording. `read` on a
    closed grabber returns None. `open` raises `SourceOpenError`.
    """

    description: str
    live: bool

    def open(self) -> None: ...

    def read(self) -> Grab | None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class CaptureConfig:
    """Health thresholds and reconnection policy of a capture. Defaults suit a 15-60 fps table camera."""

    no_frame_timeout_s: float = 2.0  # live: no fresh frame for this long is a loss
    frozen_after_s: float = 1.0  # live: bit-identical frames for this long is a loss (a frozen feed)
    check_recorded: bool = False  # apply the two checks above to recorded sources too (tests, replays)
    reconnect_initial_s: float = 0.5  # first back-off delay; doubles on each failed attempt
    reconnect_max_s: float = 8.0  # back-off ceiling
    max_reconnect_attempts: int | None = None  # None: keep trying for ever (a table camera comes back)
    poll_interval_s: float = 0.005  # pause after a failed live read, before the loss is declared
    realtime: bool = False  # recorded sources: deliver frames at their recorded pace (the demo table)

    def __post_init__(self) -> None:
        for name in ("no_frame_timeout_s", "frozen_after_s", "reconnect_initial_s", "reconnect_max_s"):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.reconnect_max_s < self.reconnect_initial_s:
            raise ValueError("reconnect_max_s must be at least reconnect_initial_s")
        if self.max_reconnect_attempts is not None and self.max_reconnect_attempts < 1:
            raise ValueError(
                f"max_reconnect_attempts must be >= 1 or None, got {self.max_reconnect_attempts}"
            )
        if self.poll_interval_s < 0:
            raise ValueError(f"poll_interval_s must be >= 0, got {self.poll_interval_s}")


# ---------------------------------------------------------------------------------------------- grabbers
def _as_bgr(image: object, *, what: str) -> ImageArray:
    """Accept what OpenCV decoders hand back (BGR, grey, BGRA; 8-bit) and return (H, W, 3) uint8 BGR."""
    if not isinstance(image, np.ndarray) or image.dtype != np.uint8 or image.size == 0:
        raise CaptureError(f"{what}: not an 8-bit image ({getattr(image, 'dtype', type(image).__name__)})")
    if image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 1):
        return np.asarray(cv2.cvtColor(image, cv2.COLOR_GRAY2BGR), dtype=np.uint8)
    if image.ndim == 3 and image.shape[2] == 4:
        return np.asarray(cv2.cvtColor(image, cv2.COLOR_BGRA2BGR), dtype=np.uint8)
    if image.ndim == 3 and image.shape[2] == 3:
        return image
    raise CaptureError(f"{what}: unsupported image shape {image.shape}")


class VideoCaptureGrabber:
    """A camera device index, a network stream or a video file, through `cv2.VideoCapture`.

    Streams are opened with FFmpeg open/read time-outs so that a dead camera makes `read` return instead
    of blocking for FFmpeg's default 30 s.
    """

    def __init__(
        self,
        target: int | str,
        *,
        live: bool,
        fps: float | None = None,
        open_timeout_s: float = 5.0,
        read_timeout_s: float = 2.0,
    ) -> None:
        self.target = target
        self.live = live
        self.description = f"camera {target}" if isinstance(target, int) else str(target)
        self._fps_override = fps
        self._open_timeout_ms = round(open_timeout_s * 1000)
        self._read_timeout_ms = round(read_timeout_s * 1000)
        self._cap: cv2.VideoCapture | None = None
        self._fps = 0.0
        self._index = 0

    @property
    def fps(self) -> float:
        """Frame rate of the open source (0.0 when unknown or not open)."""
        return self._fps

    def open(self) -> None:
        """Open the device, stream or file; raise `SourceOpenError` when OpenCV cannot."""
        self.close()
        if isinstance(self.target, str) and self.target.lower().startswith(STREAM_SCHEMES):
            params = [
                cv2.CAP_PROP_OPEN_TIMEOUT_MSEC,
                self._open_timeout_ms,
                cv2.CAP_PROP_READ_TIMEOUT_MSEC,
                self._read_timeout_ms,
            ]
            cap = cv2.VideoCapture(self.target, cv2.CAP_FFMPEG, params)
        else:
            cap = cv2.VideoCapture(self.target)
        if not cap.isOpened():
            cap.release()
            raise SourceOpenError(f"cannot open {self.description}: OpenCV could not open it")
        fps = self._fps_override or float(cap.get(cv2.CAP_PROP_FPS))
        if not self.live and not (0.5 <= fps <= 1000.0):
            cap.release()
            raise SourceOpenError(
                f"{self.description}: the video reports no usable frame rate ({fps}); pass fps"
            )
        self._cap, self._fps, self._index = cap, fps, 0

    def read(self) -> Grab | None:
        """The next image, or None (end of file, or a failed live read)."""
        if self._cap is None:
            return None
        ok, image = self._cap.read()
        if not ok or image is None:
            return None
        grab = Grab(
            image=_as_bgr(image, what=self.description),
            media_time_s=None if self.live else self._index / self._fps,
        )
        self._index += 1
        return grab

    def close(self) -> None:
        """Release the OpenCV capture."""
        if self._cap is not None:
            self._cap.release()
            self._cap = None


class ImageSequenceGrabber:
    """A directory or list of still images played as a recording at `fps` (sorted by name for a directory)."""

    live = False

    def __init__(self, paths: Sequence[Path], *, fps: float = 30.0, description: str | None = None) -> None:
        if not paths:
            raise SourceSpecError("the image sequence is empty")
        if fps <= 0:
            raise ValueError(f"fps must be positive, got {fps}")
        missing = [str(p) for p in paths if not Path(p).is_file()]
        if missing:
            raise SourceSpecError(f"no such image file(s): {', '.join(missing[:3])}")
        self.paths = tuple(Path(p) for p in paths)
        self.fps = fps
        self.description = description or f"{len(self.paths)} images"
        self._index: int | None = None

    @classmethod
    def from_directory(cls, directory: Path, *, fps: float = 30.0) -> ImageSequenceGrabber:
        """Every image file in `directory`, in name order."""
        paths = sorted(p for p in directory.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())
        if not paths:
            raise SourceSpecError(f"{directory}: no image files ({', '.join(sorted(IMAGE_SUFFIXES))})")
        return cls(paths, fps=fps, description=str(directory))

    def open(self) -> None:
        """Start at the first image."""
        self._index = 0

    def read(self) -> Grab | None:
        """Decode the next image; raise `FrameDecodeError` naming the file when it cannot be decoded."""
        if self._index is None or self._index >= len(self.paths):
            return None
        path = self.paths[self._index]
        image = cv2.imread(str(path), cv2.IMREAD_COLOR)
        if image is None:
            raise FrameDecodeError(f"cannot decode image {path}")
        grab = Grab(image=_as_bgr(image, what=str(path)), media_time_s=self._index / self.fps)
        self._index += 1
        return grab

    def close(self) -> None:
        """Forget the position."""
        self._index = None


class DemoGrabber:
    """Synthetic throws for a table with no camera: the built-in `DemoScene`, or a folder of throw videos.

    With `video_dir` (e.g. the clips `datasets/synth` writes) it plays every video in name order, one after
    another, `loops` times; without it, it renders `throws` rounds of play (throw, the dealer moving the
    winners to the layout, collecting the dice), or the given `plan` once. `None` means for ever. Media
    time runs on across clips. `scene` (after the first frame) holds the rendered ground truth.
    """

    live = False

    def __init__(
        self,
        *,
        scene: SceneConfig | None = None,
        throws: int | None = None,
        video_dir: Path | None = None,
        loops: int | None = 1,
        plan: tuple[Step, ...] | None = None,
    ) -> None:
        if throws is not None and throws < 1:
            raise ValueError(f"throws must be >= 1 or None, got {throws}")
        self.scene_config = scene or SceneConfig()
        self.throws = throws
        self.video_dir = video_dir
        self.loops = loops
        self.plan = plan
        self.videos: tuple[Path, ...] = ()
        if video_dir is not None:
            if not video_dir.is_dir():
                raise SourceSpecError(f"demo video folder {video_dir} does not exist")
            # Recursive: `throwbox synth --videos` writes videos/<id>/throw.mp4.
            self.videos = tuple(
                sorted(p for p in video_dir.rglob("*") if p.suffix.lower() in VIDEO_SUFFIXES and p.is_file())
            )
            if not self.videos:
                raise SourceSpecError(f"{video_dir}: no video files ({', '.join(sorted(VIDEO_SUFFIXES))})")
        self.description = f"demo ({video_dir})" if video_dir else "demo (built-in synthetic throws)"
        self.scene: DemoScene | None = None
        self._frames: Iterator[tuple[ImageArray, float, str | None]] | None = None

    def _rendered(self) -> Iterator[tuple[ImageArray, float, str | None]]:
        self.scene = DemoScene(self.scene_config)
        dt = 1.0 / self.scene_config.fps
        n = 0
        if self.plan is not None:
            for n, image in enumerate(self.scene.render(self.plan)):
                yield image, n * dt, None
            return
        rounds = 0
        while self.throws is None or rounds < self.throws:
            for image in self.scene.render(demo_plan(1)):
                yield image, n * dt, None
                n += 1
            rounds += 1
            if self.throws is None:  # an endless demo keeps no ever-growing ground truth
                self.scene.frames.clear()
                self.scene.throws.clear()

    def _played(self) -> Iterator[tuple[ImageArray, float, str | None]]:
        offset_s = 0.0
        loop = 0
        while self.loops is None or loop < self.loops:
            for path in self.videos:
                clip = VideoCaptureGrabber(str(path), live=False)
                clip.open()
                last_s = 0.0
                start: str | None = str(path)
                try:
                    while (grab := clip.read()) is not None:
                        last_s = grab.media_time_s or 0.0
                        yield grab.image, offset_s + last_s, start
                        start = None
                finally:
                    clip.close()
                offset_s += last_s + 1.0 / clip.fps
            loop += 1

    def open(self) -> None:
        """Start from the beginning."""
        self._frames = self._played() if self.videos else self._rendered()

    def read(self) -> Grab | None:
        """The next synthetic frame, or None at the end."""
        if self._frames is None:
            return None
        item = next(self._frames, None)
        if item is None:
            return None
        return Grab(image=item[0], media_time_s=item[1], clip_start=item[2])

    def close(self) -> None:
        """Stop playing."""
        self._frames = None


def grabber_for(spec: str, *, fps: float | None = None) -> Grabber:
    """Turn a SOURCE string into a grabber: `0` (camera index), `rtsp://...`/`http://...` (stream),
    `demo` or `demo:DIR` (synthetic throws), a video file, an image file, or a directory of images.
    """
    text = spec.strip()
    if not text:
        raise SourceSpecError(
            "empty source: give a camera index, a stream URL, a video file, images or 'demo'"
        )
    if text.isdigit():
        return VideoCaptureGrabber(int(text), live=True)
    if text.lower().startswith(STREAM_SCHEMES):
        return VideoCaptureGrabber(text, live=True)
    if text == "demo":
        return DemoGrabber(throws=None)
    if text.startswith("demo:"):
        return DemoGrabber(video_dir=Path(text[5:]), loops=None)
    path = Path(text)
    if path.is_dir():
        return ImageSequenceGrabber.from_directory(path, fps=fps or 30.0)
    if path.is_file():
        if path.suffix.lower() in IMAGE_SUFFIXES:
            return ImageSequenceGrabber([path], fps=fps or 30.0)
        return VideoCaptureGrabber(str(path), live=False, fps=fps)
    if "://" in text:
        raise SourceSpecError(
            f"unsupported stream scheme in {text!r}; use one of {', '.join(STREAM_SCHEMES)}"
        )
    raise SourceSpecError(f"{text!r} is not a camera index, a stream URL, 'demo', or an existing file/folder")


# ----------------------------------------------------------------------------------------------- capture
class Capture:
    """One source's frames and health events, in order; iterate it once.

    Args:
        grabber: the transport (see `grabber_for`).
        table_id: the table the camera watches; stamped on every frame.
        source_id: a short name for events and frame ids (default: the grabber's description).
        config: health thresholds and reconnection policy.
        clock: monotonic clock (injected by tests).
        wall_clock: UTC clock (injected by tests).
        sleep: how to wait (injected by tests); the default wakes early when `stop()` is called.
    """

    def __init__(
        self,
        grabber: Grabber,
        *,
        table_id: str,
        source_id: str | None = None,
        config: CaptureConfig | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        if not table_id:
            raise ValueError("table_id must not be empty")
        self.grabber = grabber
        self.table_id = table_id
        self.source_id = source_id or grabber.description
        self.config = config or CaptureConfig()
        self._clock = clock
        self._wall_clock = wall_clock
        self._stop = threading.Event()
        self._sleep = sleep or self._wait
        self._last_open_error: str | None = None
        self._started = False
        self.frames_delivered = 0
        self.repeats_dropped = 0

    def _wait(self, seconds: float) -> None:
        self._stop.wait(seconds)

    def stop(self) -> None:
        """Ask the capture to end after the current item (safe from another thread)."""
        self._stop.set()

    def __iter__(self) -> Iterator[CapturedFrame | CaptureEvent]:
        if self._started:
            raise RuntimeError("a Capture can be iterated only once")
        self._started = True
        self.grabber.open()  # a source that cannot be opened at all is a configuration error: raise
        try:
            yield from self._run()
        finally:
            self.grabber.close()

    def _run(self) -> Iterator[CapturedFrame | CaptureEvent]:
        cfg = self.config
        live = self.grabber.live
        checks = live or cfg.check_recorded
        start_s = self._clock()
        start_wall = self._wall_clock()
        session = start_wall.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
        last_fresh_s = start_s
        previous: ImageArray | None = None
        lost: LossKind | None = None
        attempt = 0
        while not self._stop.is_set():
            grab = self.grabber.read()
            now = self._clock()
            if grab is None:
                if not live:
                    yield SourceEnded(source_id=self.source_id, frames=self.frames_delivered)
                    return
                if lost is None and now - last_fresh_s >= cfg.no_frame_timeout_s:
                    lost = LossKind.NO_FRAMES
                    yield SourceLost(self.source_id, lost, last_frame_s=last_fresh_s, detected_s=now)
                if lost is not None:
                    attempt += 1
                    yield from self._reconnect(attempt)
                else:
                    self._sleep(cfg.poll_interval_s)
                continue
            image = _as_bgr(grab.image, what=self.source_id)
            if grab.media_time_s is None or live:
                t, wall = now, self._wall_clock()
            else:  # recorded: scene time, whatever the playback speed
                t = start_s + grab.media_time_s
                wall = start_wall + timedelta(seconds=grab.media_time_s)
                if cfg.realtime and t > now:
                    self._sleep(t - now)
            repeat = previous is not None and np.array_equal(previous, image)
            if repeat and checks:
                self.repeats_dropped += 1
                if lost is None and t - last_fresh_s >= cfg.frozen_after_s:
                    lost = LossKind.FROZEN
                    yield SourceLost(self.source_id, lost, last_frame_s=last_fresh_s, detected_s=t)
                if lost is not None and live:  # a recording cannot be reconnected: read on
                    attempt += 1
                    yield from self._reconnect(attempt)
                continue
            previous = image
            if grab.clip_start is not None:
                yield ClipStarted(self.source_id, clip=grab.clip_start)
            if lost is not None:
                yield SourceRecovered(self.source_id, lost, outage_s=t - last_fresh_s, detected_s=t)
                lost = None
                attempt = 0
            last_fresh_s = t
            seq = self.frames_delivered
            self.frames_delivered += 1
            yield CapturedFrame(
                image=image,
                frame_id=f"{self.table_id}-{session}-{seq}",
                table_id=self.table_id,
                captured_at=wall,
                seq=seq,
                source_id=self.source_id,
                monotonic_s=t,
            )

    def _reconnect(self, attempt: int) -> Iterator[CaptureEvent]:
        cfg = self.config
        if cfg.max_reconnect_attempts is not None and attempt > cfg.max_reconnect_attempts:
            raise SourceLostError(
                f"{self.source_id}: still lost after {cfg.max_reconnect_attempts} reconnection attempts"
            )
        delay_s = min(cfg.reconnect_initial_s * 2.0 ** min(attempt - 1, 60), cfg.reconnect_max_s)
        yield Reconnecting(self.source_id, attempt=attempt, delay_s=delay_s, last_error=self._last_open_error)
        self.grabber.close()
        self._sleep(delay_s)
        if self._stop.is_set():
            return
        try:
            self.grabber.open()
            self._last_open_error = None
        except SourceOpenError as exc:
            # Still gone: the next read returns None, the back-off grows, and the next `Reconnecting`
            # event carries this message.
            self._last_open_error = str(exc)


def open_capture(
    spec: str, *, table_id: str, config: CaptureConfig | None = None, fps: float | None = None
) -> Capture:
    """A `Capture` over the source a SOURCE string names (see `grabber_for`)."""
    return Capture(grabber_for(spec, fps=fps), table_id=table_id, source_id=spec, config=config)
