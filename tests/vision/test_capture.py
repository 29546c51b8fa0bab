"""Frame sources and feed health: files, images, the demo, frozen feeds, drop-outs and reconnection.

Live sources are driven by a scripted transport (`ScriptedCamera`) and a fake clock, so outages of seconds
run in milliseconds and every time in an event can be checked exactly. Video files are real files written
with `cv2.VideoWriter` and read back through `cv2.VideoCapture`.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.capture import (
    Capture,
    CaptureConfig,
    CapturedFrame,
    CaptureError,
    DemoGrabber,
    FrameDecodeError,
    Grab,
    ImageSequenceGrabber,
    LossKind,
    Reconnecting,
    SourceEnded,
    SourceLost,
    SourceLostError,
    SourceOpenError,
    SourceRecovered,
    SourceSpecError,
    VideoCaptureGrabber,
    grabber_for,
    open_capture,
)
from vision.demo_scene import SceneConfig

FPS = 30.0
T0 = datetime(2026, 11, 29, 12, 0, 0, tzinfo=UTC)


def picture(k: int, *, w: int = 96, h: int = 72) -> np.ndarray:
    """A distinct, compressible test picture: a bar whose position and shade encode k."""
    img = np.full((h, w, 3), (40, 110, 35), dtype=np.uint8)
    x = (k * 7) % (w - 12)
    cv2.rectangle(img, (x, 10), (x + 10, h - 10), (200, 200, (k * 37) % 256), -1)
    return img


def write_video(path: Path, images: Iterable[np.ndarray], *, fps: float = FPS) -> Path:
    """Write an MJPG .avi (intra-only, so identical input frames decode identically)."""
    frames = list(images)
    h, w = frames[0].shape[:2]
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter.fourcc(*"MJPG"), fps, (w, h))
    assert writer.isOpened(), "OpenCV cannot write MJPG here"
    for img in frames:
        writer.write(img)
    writer.release()
    return path


class FakeClock:
    """Monotonic time that moves only when the code under test reads frames or sleeps."""

    def __init__(self) -> None:
        self.t = 1000.0
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.t += seconds

    def wall(self) -> datetime:
        return T0 + timedelta(seconds=self.t - 1000.0)


class ScriptedCamera:
    """A live transport replaying `script`: each read takes one frame period and returns the next entry
    (an image, or None for a failed read). `opens` says, for each reopening, whether it succeeds.
    """

    live = True
    description = "scripted camera"

    def __init__(self, clock: FakeClock, script: list[np.ndarray | None], opens: Iterable[bool] = ()) -> None:
        self.clock = clock
        self.script = script
        self.pos = 0
        self.opens = iter(opens)
        self.is_open = False
        self.open_calls = 0

    def open(self) -> None:
        self.open_calls += 1
        if self.open_calls > 1 and not next(self.opens, True):
            raise SourceOpenError("scripted camera: connection refused")
        self.is_open = True

    def read(self) -> Grab | None:
        if not self.is_open:
            return None
        self.clock.t += 1.0 / FPS
        if self.pos >= len(self.script):
            return None
        item = self.script[self.pos]
        self.pos += 1
        return None if item is None else Grab(image=item)

    def close(self) -> None:
        self.is_open = False


def scripted_capture(
    clock: FakeClock, script: list[np.ndarray | None], *, opens: Iterable[bool] = (), **config: object
) -> Capture:
    cfg = CaptureConfig(**config)  # type: ignore[arg-type]
    return Capture(
        ScriptedCamera(clock, script, opens),
        table_id="T1",
        config=cfg,
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
    )


def take(capture: Iterable[object], *, frames: int, limit: int = 10_000) -> list[object]:
    """Drain `capture` until `frames` frames were seen (or `limit` items, so a bug cannot hang the test)."""
    items: list[object] = []
    seen = 0
    for item in capture:
        items.append(item)
        seen += isinstance(item, CapturedFrame)
        if seen >= frames or len(items) >= limit:
            break
    return items


def position(items: Sequence[object], obj: object) -> int:
    """Index of `obj` itself in `items` (by identity, whatever `==` of its type does)."""
    return next(i for i, item in enumerate(items) if item is obj)


def frames_of(items: Iterable[object]) -> list[CapturedFrame]:
    return [i for i in items if isinstance(i, CapturedFrame)]


def events_of(items: Iterable[object]) -> list[object]:
    return [i for i in items if not isinstance(i, CapturedFrame)]


# ------------------------------------------------------------------------------------------ source specs
@pytest.mark.parametrize(
    ("spec", "kind", "live"),
    [
        ("0", VideoCaptureGrabber, True),  # a camera device index
        ("rtsp://10.0.0.5/stream1", VideoCaptureGrabber, True),  # an IP camera
        ("http://cam.local/mjpg", VideoCaptureGrabber, True),  # an MJPEG-over-HTTP camera
        ("demo", DemoGrabber, False),  # synthetic throws, no camera
    ],
)
def test_source_spec_picks_the_transport(spec: str, kind: type, live: bool) -> None:
    grabber = grabber_for(spec)
    assert isinstance(grabber, kind)
    assert grabber.live is live


def test_source_spec_files_and_folders(tmp_path: Path) -> None:
    video = write_video(tmp_path / "clip.avi", [picture(k) for k in range(3)])
    still = tmp_path / "still.png"
    cv2.imwrite(str(still), picture(1))
    (tmp_path / "frames").mkdir()
    cv2.imwrite(str(tmp_path / "frames" / "a.png"), picture(2))
    assert isinstance(grabber_for(str(video)), VideoCaptureGrabber)
    assert grabber_for(str(video)).live is False
    assert isinstance(grabber_for(str(still)), ImageSequenceGrabber)
    assert isinstance(grabber_for(str(tmp_path / "frames")), ImageSequenceGrabber)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("", "empty source"),  # nothing given
        ("   ", "empty source"),  # only blanks
        ("no/such/file.mp4", "not a camera index"),  # a typo in a path
        ("ftp://host/x.mp4", "unsupported stream scheme"),  # a scheme OpenCV will not stream
        ("demo:/no/such/folder", "does not exist"),  # a demo folder that is not there
    ],
)
def test_bad_source_spec_is_a_clear_error(spec: str, message: str) -> None:
    with pytest.raises(SourceSpecError, match=message):
        grabber_for(spec)


def test_empty_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SourceSpecError, match="no image files"):
        grabber_for(str(tmp_path))


# ------------------------------------------------------------------------------------- recorded sources
def test_video_file_frames_are_stamped_in_scene_time(tmp_path: Path) -> None:
    video = write_video(tmp_path / "clip.avi", [picture(k) for k in range(20)])
    clock = FakeClock()
    capture = Capture(
        VideoCaptureGrabber(str(video), live=False), table_id="T7", clock=clock, wall_clock=clock.wall
    )
    items = list(capture)
    frames = frames_of(items)
    assert len(frames) == 20
    assert items[-1] == SourceEnded(source_id=str(video), frames=20)
    assert [f.seq for f in frames] == list(range(20))
    assert len({f.frame_id for f in frames}) == 20
    assert all(f.frame_id.startswith("T7-20261129T120000Z-") for f in frames)
    assert all(
        f.table_id == "T7" and f.image.shape == (72, 96, 3) and f.image.dtype == np.uint8 for f in frames
    )
    # Scene time: exactly one frame period apart, although the file was read as fast as it decodes.
    np.testing.assert_allclose(np.diff([f.monotonic_s for f in frames]), 1.0 / FPS, rtol=1e-9)
    assert frames[0].captured_at == T0
    assert frames[19].captured_at - T0 == timedelta(seconds=19 / FPS)
    # The pixels are the pictures we wrote (up to JPEG loss).
    for k in (0, 7, 19):
        assert np.abs(frames[k].image.astype(int) - picture(k).astype(int)).mean() < 4.0


def test_unreadable_video_file_fails_to_open(tmp_path: Path) -> None:
    bogus = tmp_path / "broken.mp4"
    bogus.write_bytes(b"this is not a video" * 100)
    with pytest.raises(SourceOpenError, match=r"broken\.mp4"):
        list(open_capture(str(bogus), table_id="T1"))


def test_image_folder_plays_in_name_order_and_converts_grey(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "b.png"), picture(2))
    cv2.imwrite(str(tmp_path / "a.png"), picture(1))
    cv2.imwrite(str(tmp_path / "c.png"), cv2.cvtColor(picture(3), cv2.COLOR_BGR2GRAY))
    (tmp_path / "notes.txt").write_text("not an image")
    items = list(open_capture(str(tmp_path), table_id="T1", fps=10.0))
    frames = frames_of(items)
    assert len(frames) == 3
    np.testing.assert_array_equal(frames[0].image, picture(1))
    np.testing.assert_array_equal(frames[1].image, picture(2))
    assert frames[2].image.shape == (72, 96, 3)  # grey became 3-channel BGR
    np.testing.assert_allclose(frames[2].monotonic_s - frames[0].monotonic_s, 0.2)
    assert isinstance(items[-1], SourceEnded)


def test_corrupt_image_is_a_decode_error_naming_the_file(tmp_path: Path) -> None:
    cv2.imwrite(str(tmp_path / "a.png"), picture(1))
    (tmp_path / "b.png").write_bytes(b"\x89PNG but not really")
    capture = open_capture(str(tmp_path), table_id="T1")
    items: list[object] = []
    with pytest.raises(FrameDecodeError, match=r"b\.png"):
        for item in capture:
            items.append(item)
    assert len(frames_of(items)) == 1  # the good frame before it was delivered


def test_demo_source_renders_throws_with_sensor_noise() -> None:
    grabber = DemoGrabber(throws=1, scene=SceneConfig(width_px=160, height_px=120, die_edge_px=8))
    frames = frames_of(Capture(grabber, table_id="demo"))
    assert grabber.scene is not None
    assert len(frames) == len(grabber.scene.frames) > 100
    assert len(grabber.scene.throws) == 1
    # Like a real camera, no two consecutive frames are bit-identical, even with nothing moving.
    assert not any(np.array_equal(a.image, b.image) for a, b in itertools.pairwise(frames))


def test_demo_source_plays_a_folder_of_clips_back_to_back(tmp_path: Path) -> None:
    write_video(tmp_path / "throw_000.avi", [picture(k) for k in range(5)])
    write_video(tmp_path / "throw_001.avi", [picture(k) for k in range(10, 14)])
    (tmp_path / "video.json").write_text("{}")  # not a video: ignored
    items = list(Capture(DemoGrabber(video_dir=tmp_path, loops=2), table_id="demo"))
    frames = frames_of(items)
    assert len(frames) == 2 * (5 + 4)
    np.testing.assert_allclose(np.diff([f.monotonic_s for f in frames]), 1.0 / FPS, rtol=1e-9)
    assert isinstance(items[-1], SourceEnded)


def test_frozen_section_of_a_recording_is_reported_and_never_delivered(tmp_path: Path) -> None:
    # 10 moving frames, then 45 identical ones (1.5 s: the feed froze), then 10 moving frames.
    images = [picture(k) for k in range(10)] + [picture(10)] * 45 + [picture(k) for k in range(11, 21)]
    video = write_video(tmp_path / "frozen.avi", images)
    capture = Capture(
        VideoCaptureGrabber(str(video), live=False),
        table_id="T1",
        config=CaptureConfig(frozen_after_s=1.0, check_recorded=True),
    )
    items = list(capture)
    frames = frames_of(items)
    assert len(frames) == 10 + 1 + 10  # the first picture of the frozen run is fresh; its repeats are not
    assert capture.repeats_dropped == 44
    lost = [e for e in items if isinstance(e, SourceLost)]
    recovered = [e for e in items if isinstance(e, SourceRecovered)]
    assert len(lost) == 1 and lost[0].kind is LossKind.FROZEN
    assert lost[0].detected_s - lost[0].last_frame_s == pytest.approx(1.0, abs=1.0 / FPS + 1e-9)
    assert len(recovered) == 1 and recovered[0].outage_s == pytest.approx(45 / FPS)
    assert position(items, lost[0]) < position(items, recovered[0]) == position(items, frames[11]) - 1
    assert not any(isinstance(e, Reconnecting) for e in items)  # a recording is not reconnected


# ----------------------------------------------------------------------------------------- live sources
def test_frozen_camera_is_lost_then_recovers() -> None:
    clock = FakeClock()
    script: list[np.ndarray | None] = [picture(0), picture(1), picture(2)]
    script += [picture(2).copy() for _ in range(60)]  # 2 s of the same image, bit for bit
    script += [picture(3), picture(4)]
    capture = scripted_capture(
        clock, script, frozen_after_s=1.0, reconnect_initial_s=0.1, reconnect_max_s=0.4
    )
    items = take(capture, frames=5)
    frames = frames_of(items)
    events = events_of(items)
    assert [f.seq for f in frames] == [0, 1, 2, 3, 4]
    for k, f in enumerate(frames):  # no repeat of a stale picture was ever delivered
        np.testing.assert_array_equal(f.image, picture(k))
    lost = events[0]
    assert isinstance(lost, SourceLost) and lost.kind is LossKind.FROZEN
    assert 1.0 <= lost.detected_s - lost.last_frame_s < 1.0 + 1.5 / FPS
    assert lost.last_frame_s == frames[2].monotonic_s
    reconnects = [e for e in events if isinstance(e, Reconnecting)]
    assert [r.attempt for r in reconnects] == list(range(1, len(reconnects) + 1))
    assert [r.delay_s for r in reconnects][:4] == [0.1, 0.2, 0.4, 0.4]  # doubling, capped
    recovered = events[-1]
    assert isinstance(recovered, SourceRecovered) and recovered.kind is LossKind.FROZEN
    assert recovered.outage_s == pytest.approx(frames[3].monotonic_s - frames[2].monotonic_s)
    assert position(items, recovered) == position(items, frames[3]) - 1


def test_camera_drop_out_reconnects_with_back_off_and_resumes() -> None:
    clock = FakeClock()
    script: list[np.ndarray | None] = [picture(k) for k in range(30)]
    script += [None] * 90  # 3 s of failed reads
    script += [picture(100 + k) for k in range(10)]
    capture = scripted_capture(
        clock, script, opens=[False, True], no_frame_timeout_s=2.0, reconnect_initial_s=0.25
    )
    items = take(capture, frames=40)
    frames = frames_of(items)
    events = events_of(items)
    assert [f.seq for f in frames] == list(range(40))
    assert np.all(np.diff([f.monotonic_s for f in frames]) > 0)
    np.testing.assert_array_equal(frames[30].image, picture(100))  # the first frame after is a fresh one
    lost = events[0]
    assert isinstance(lost, SourceLost) and lost.kind is LossKind.NO_FRAMES
    assert 2.0 <= lost.detected_s - lost.last_frame_s < 2.0 + 1.5 / FPS
    first, second = events[1], events[2]
    assert first == Reconnecting("scripted camera", attempt=1, delay_s=0.25, last_error=None)
    assert isinstance(second, Reconnecting) and second.delay_s == 0.5
    assert second.last_error == "scripted camera: connection refused"  # the failed reopening is reported
    recovered = events[-1]
    assert isinstance(recovered, SourceRecovered) and recovered.kind is LossKind.NO_FRAMES
    assert recovered.outage_s >= 3.0
    assert frames[30].captured_at > frames[29].captured_at + timedelta(seconds=3)


def test_camera_that_never_returns_raises_after_the_last_attempt() -> None:
    clock = FakeClock()
    script: list[np.ndarray | None] = [picture(0), picture(1)]
    capture = scripted_capture(
        clock, script, opens=[False] * 10, no_frame_timeout_s=1.0, max_reconnect_attempts=3
    )
    items: list[object] = []
    with pytest.raises(SourceLostError, match="after 3 reconnection attempts"):
        for item in capture:
            items.append(item)
    assert [type(e).__name__ for e in events_of(items)] == ["SourceLost"] + ["Reconnecting"] * 3


def test_video_file_as_a_live_camera_drops_out_and_comes_back(tmp_path: Path) -> None:
    # A real OpenCV transport: the "camera" is a file; when it ends, reads fail like a dead stream, and
    # reopening it plays it again, like a camera that came back.
    video = write_video(tmp_path / "cam.avi", [picture(k) for k in range(15)])
    clock = FakeClock()

    def ticking() -> float:
        clock.t += 1.0 / FPS
        return clock.t

    capture = Capture(
        VideoCaptureGrabber(str(video), live=True),
        table_id="T1",
        config=CaptureConfig(no_frame_timeout_s=1.0, reconnect_initial_s=0.5),
        clock=ticking,
        wall_clock=clock.wall,
        sleep=clock.sleep,
    )
    items = take(capture, frames=30)
    kinds = [type(e).__name__ for e in events_of(items)]
    assert kinds == ["SourceLost", "Reconnecting", "SourceRecovered"]
    frames = frames_of(items)
    assert len(frames) == 30
    for k in (0, 5, 14):  # the second pass shows the same pictures as the first
        assert np.abs(frames[15 + k].image.astype(int) - frames[k].image.astype(int)).mean() < 1.0


def test_stop_ends_an_endless_source_from_another_thread() -> None:
    capture = Capture(
        DemoGrabber(throws=None, scene=SceneConfig(width_px=160, height_px=120, die_edge_px=8)),
        table_id="demo",
        config=CaptureConfig(realtime=True),
    )
    seen: list[int] = []

    def consume() -> None:
        for item in capture:
            if isinstance(item, CapturedFrame):
                seen.append(item.seq)

    worker = threading.Thread(target=consume)
    worker.start()
    threading.Timer(0.3, capture.stop).start()
    worker.join(timeout=5.0)
    assert not worker.is_alive()
    # Real-time pacing: about 0.3 s of a 30 fps demo, not thousands of frames.
    assert 3 <= len(seen) <= 20


def test_capture_iterates_once() -> None:
    capture = Capture(
        DemoGrabber(throws=1, scene=SceneConfig(width_px=160, height_px=120, die_edge_px=8)), table_id="d"
    )
    iterator: Iterator[object] = iter(capture)
    next(iterator)
    with pytest.raises(RuntimeError, match="only once"):
        next(iter(capture))


# ---------------------------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"no_frame_timeout_s": 0}, "no_frame_timeout_s"),  # a zero timeout would declare every gap a loss
        ({"frozen_after_s": -1}, "frozen_after_s"),  # negative time
        ({"reconnect_initial_s": 2.0, "reconnect_max_s": 1.0}, "reconnect_max_s"),  # ceiling below start
        ({"max_reconnect_attempts": 0}, "max_reconnect_attempts"),  # never even try
        ({"poll_interval_s": -0.1}, "poll_interval_s"),  # negative wait
    ],
)
def test_capture_config_rejects_nonsense(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        CaptureConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("change", "exception", "message"),
    [
        ({"captured_at": datetime(2026, 1, 1)}, ValueError, "timezone-aware"),  # naive time: which zone?
        ({"seq": -1}, ValueError, "seq"),  # sequence numbers start at 0
        ({"image": np.zeros((4, 4), np.uint8)}, ValueError, "uint8 BGR"),  # grey image, not BGR
        ({"image": np.zeros((4, 4, 3), np.float32)}, ValueError, "uint8 BGR"),  # float image
    ],
)
def test_captured_frame_validates(change: dict[str, object], exception: type, message: str) -> None:
    fields: dict[str, object] = {
        "image": np.zeros((4, 4, 3), np.uint8),
        "frame_id": "T1-x-0",
        "table_id": "T1",
        "captured_at": T0,
        "seq": 0,
        "source_id": "test",
        "monotonic_s": 1.0,
    }
    fields.update(change)
    with pytest.raises(exception, match=message):
        CapturedFrame(**fields)  # type: ignore[arg-type]


def test_odd_image_formats_are_converted_or_refused() -> None:
    clock = FakeClock()
    bgra = np.dstack([picture(1), np.full((72, 96), 255, np.uint8)])
    frames = frames_of(take(scripted_capture(clock, [bgra]), frames=1))
    np.testing.assert_array_equal(frames[0].image, picture(1))
    with pytest.raises(CaptureError, match="not an 8-bit image"):
        take(scripted_capture(FakeClock(), [np.zeros((8, 8, 3), np.uint16)]), frames=1)


def test_frames_compare_by_identity_so_events_holding_them_compare() -> None:
    a = CapturedFrame(
        image=picture(1),
        frame_id="T1-x-0",
        table_id="T1",
        captured_at=T0,
        seq=0,
        source_id="t",
        monotonic_s=1.0,
    )
    b = CapturedFrame(
        image=picture(1),
        frame_id="T1-x-0",
        table_id="T1",
        captured_at=T0,
        seq=0,
        source_id="t",
        monotonic_s=1.0,
    )
    assert a == a and a != b
    assert len({a, b}) == 2


def test_realtime_playback_waits_for_each_frame_time(tmp_path: Path) -> None:
    video = write_video(tmp_path / "clip.avi", [picture(k) for k in range(6)])
    clock = FakeClock()
    capture = Capture(
        VideoCaptureGrabber(str(video), live=False),
        table_id="T1",
        config=CaptureConfig(realtime=True),
        clock=clock,
        wall_clock=clock.wall,
        sleep=clock.sleep,
    )
    frames = frames_of(capture)
    assert len(frames) == 6
    # Reading takes no fake time, so the capture sleeps until each frame's time: one period per frame.
    np.testing.assert_allclose(clock.sleeps, [1.0 / FPS] * 5)
    np.testing.assert_allclose(clock.t - 1000.0, 5.0 / FPS)


class DeadCamera:
    """A live camera that delivers one frame and then nothing, and cannot be reopened."""

    live = True
    description = "dead camera"

    def __init__(self) -> None:
        self.reads = 0
        self.opened = 0

    def open(self) -> None:
        self.opened += 1
        if self.opened > 1:
            raise SourceOpenError("dead camera: no such device")

    def read(self) -> Grab | None:
        self.reads += 1
        return Grab(image=picture(0)) if self.reads == 1 else None

    def close(self) -> None:
        pass


def test_stop_interrupts_a_long_reconnect_back_off() -> None:
    # Real clock and real waiting: a service shutting down must not wait out an 8 s back-off.
    capture = Capture(
        DeadCamera(),
        table_id="T1",
        config=CaptureConfig(no_frame_timeout_s=0.05, reconnect_initial_s=8.0, reconnect_max_s=8.0),
    )
    seen: list[str] = []

    def consume() -> None:
        seen.extend(type(item).__name__ for item in capture)

    worker = threading.Thread(target=consume)
    worker.start()
    threading.Timer(0.3, capture.stop).start()
    worker.join(timeout=3.0)
    assert not worker.is_alive()
    assert seen[:3] == ["CapturedFrame", "SourceLost", "Reconnecting"]
