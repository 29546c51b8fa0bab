"""Settle detection on synthetic throws whose ground truth is exact (`vision.demo_scene`).

Each test renders a plan (throws, the dealer's hand or stick, dice shuffled on the felt), runs the frames
through the detector and compares with the frame on which the last die really stopped: one read per
throw, never a read while dice move or an intruder is in the box, latency close to `still_s`.
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.capture import (
    Capture,
    CaptureConfig,
    CapturedFrame,
    ClipStarted,
    DemoGrabber,
    Grab,
    SourceLost,
    SourceRecovered,
    open_capture,
)
from vision.demo_scene import (
    Action,
    DemoScene,
    Empty,
    Handling,
    Intruder,
    Jiggle,
    SceneConfig,
    Step,
    Throw,
    demo_plan,
)
from vision.settle import (
    AtRest,
    SettleConfig,
    SettleDetector,
    SettledWithoutThrow,
    SettleState,
    StateChanged,
    settle_stream,
)

FPS = 30.0
SMALL = SceneConfig(width_px=320, height_px=240, die_edge_px=12, fps=FPS)


def scene(seed: int) -> SceneConfig:
    return SceneConfig(width_px=320, height_px=240, die_edge_px=12, fps=FPS, seed=seed)


@dataclass
class Run:
    """What the detector said about a rendered plan, next to the plan's ground truth."""

    frames: list[CapturedFrame]
    reads: list[AtRest]
    settled: list[SettledWithoutThrow]
    states: list[StateChanged]
    truth: DemoScene

    def seq(self, event: AtRest | SettledWithoutThrow) -> int:
        return event.frame.seq


def run_plan(
    plan: tuple[Step, ...],
    *,
    seed: int = 0,
    config: SettleConfig | None = None,
    video: Path | None = None,
) -> Run:
    """Render `plan`; play it from memory, or from an MJPG file written to `video`; detect."""
    grabber = DemoGrabber(scene=scene(seed), plan=plan)
    if video is None:
        capture = Capture(grabber, table_id="T1")
        truth_source = grabber
    else:
        truth_scene = DemoScene(scene(seed))
        writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"MJPG"), FPS, (320, 240))
        for image in truth_scene.render(plan):
            writer.write(image)
        writer.release()
        capture = open_capture(str(video), table_id="T1")
    detector = SettleDetector(config)
    items = list(settle_stream(capture, detector))
    run = Run(
        frames=[i for i in items if isinstance(i, CapturedFrame)],
        reads=[i for i in items if isinstance(i, AtRest)],
        settled=[i for i in items if isinstance(i, SettledWithoutThrow)],
        states=[i for i in items if isinstance(i, StateChanged)],
        truth=truth_scene if video is not None else _scene_of(truth_source),
    )
    assert len(run.frames) == len(run.truth.frames)
    return run


def _scene_of(grabber: DemoGrabber) -> DemoScene:
    assert grabber.scene is not None
    return grabber.scene


def check_one_read_per_throw(run: Run, *, still_s: float = 0.3) -> None:
    """Exactly one read per throw, inside that throw's rest period, `still_s` (+- a frame) after rest."""
    throws = run.truth.throws
    assert len(run.reads) == len(throws), (
        f"{len(run.reads)} reads for {len(throws)} throws: reads at {[run.seq(r) for r in run.reads]}, "
        f"rests at {[(t.rest_frame, t.end_frame) for t in throws]}"
    )
    for read, throw in zip(run.reads, throws, strict=True):
        seq = run.seq(read)
        assert throw.rest_frame <= seq < throw.end_frame, (seq, throw)
        truth = run.truth.frames[seq]
        assert not truth.dice_moving and not truth.intruder_present
        latency_s = read.frame.monotonic_s - run.frames[throw.rest_frame].monotonic_s
        assert still_s - 1.5 / FPS <= latency_s <= still_s + 1.5 / FPS, latency_s
        assert read.still_since_s <= read.frame.monotonic_s - still_s + 1e-9
        assert read.moving_since_s < read.still_since_s
    assert [r.throw_index for r in run.reads] == list(range(len(throws)))
    # Never a read on a frame where something moves or reaches into the box.
    for read in run.reads:
        truth = run.truth.frames[run.seq(read)]
        assert truth.throw_index is not None and not truth.dice_moving and not truth.intruder_present


# ------------------------------------------------------------------------------------ rounds of play
@pytest.mark.parametrize("seed", [0, 1])
def test_one_read_per_throw_in_rounds_of_play(seed: int) -> None:
    # Each round: empty box, the shaker throws ten dice, the dealer's hand moves the winners to the
    # layout, the stick reaches in, the hand clears the box.
    run = run_plan((*demo_plan(2), Empty(0.6)), seed=seed)
    check_one_read_per_throw(run)
    # After the hand moved dice, the box settled again: evidence for the layout check, not a read.
    handled = [s for s in run.settled if s.intruder_seen]
    assert len(handled) >= 2
    first_move_end = run.truth.throws[0].end_frame
    assert any(run.seq(s) > first_move_end for s in handled)
    # The box ends empty after the last clear, and the detector says so.
    assert run.states[-1].current is SettleState.EMPTY


def test_one_read_per_throw_from_a_video_file(tmp_path: Path) -> None:
    run = run_plan(demo_plan(2), seed=5, video=tmp_path / "rounds.avi")
    check_one_read_per_throw(run)


def test_states_go_empty_moving_at_rest() -> None:
    run = run_plan((Empty(0.6), Throw(hold_s=1.0)), seed=3)
    check_one_read_per_throw(run)
    path = [s.current for s in run.states]
    assert path[0] is SettleState.UNKNOWN  # the empty-box model is ready
    assert path[1] is SettleState.EMPTY
    assert SettleState.MOVING in path and path[-1] is SettleState.AT_REST
    at_rest = next(s for s in run.states if s.current is SettleState.AT_REST)
    assert at_rest.frame_id == run.reads[0].frame.frame_id  # the read fires as the box becomes at rest


@pytest.mark.parametrize(
    ("plan", "reads"),
    [
        # The dealer's hand reaches into the empty box and leaves.
        ((Empty(0.6), Handling(Intruder.HAND, Action.VISIT, 1.2), Empty(1.0)), 0),
        # The stick reaches into the empty box and leaves.
        ((Empty(0.6), Handling(Intruder.STICK, Action.VISIT, 1.2), Empty(1.0)), 0),
        # After a throw, the hand drags dice to the Ace box (593.4(e)): only the throw is read.
        ((Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.HAND, Action.MOVE, 1.2), Empty(1.0)), 1),
        # After a throw, the stick pushes a die to the layout.
        ((Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.STICK, Action.MOVE, 1.2), Empty(1.0)), 1),
        # After a throw, the hand takes some dice out of the box.
        ((Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.HAND, Action.COLLECT, 1.2), Empty(1.0)), 1),
        # After a throw, the stick rakes a die out of the box.
        ((Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.STICK, Action.COLLECT, 1.2), Empty(1.0)), 1),
        # After a throw, the hand clears every die.
        ((Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.HAND, Action.CLEAR, 1.2), Empty(1.0)), 1),
        # Motion that never settles: the dice keep shuffling to the end.
        ((Empty(0.6), Throw(hold_s=0.8), Jiggle(3.0)), 1),
        # Dice shuffled in place and stopping again, nothing came in over the edge: not a new throw.
        ((Empty(0.6), Throw(hold_s=0.8), Jiggle(0.6), Empty(1.0)), 1),
        # The Extra Roll (593.4(g)): winners moved to the layout, the rest collected and rethrown.
        (
            (
                Empty(0.6),
                Throw(hold_s=0.8),
                Handling(Intruder.HAND, Action.MOVE, 1.2),
                Handling(Intruder.HAND, Action.COLLECT, 1.2),
                Empty(0.6),
                Throw(hold_s=0.8, n_dice=6),
            ),
            2,
        ),
    ],
    ids=[
        "hand_in_empty_box",
        "stick_in_empty_box",
        "hand_moves_dice",
        "stick_moves_dice",
        "hand_collects_dice",
        "stick_collects_dice",
        "hand_clears_box",
        "motion_never_settles",
        "shuffle_then_stop",
        "extra_roll_593_4_g",
    ],
)
def test_hands_stick_and_shuffling_never_trigger_a_read(plan: tuple[Step, ...], reads: int) -> None:
    run = run_plan(plan, seed=7)
    assert len(run.truth.throws) == reads
    check_one_read_per_throw(run)
    # No read while the intruder is in the box or after it left, until the next throw.
    for read in run.reads:
        assert run.truth.frames[run.seq(read)].throw_index == read.throw_index


def test_motion_that_never_settles_gives_no_settle_event() -> None:
    run = run_plan((Empty(0.6), Throw(hold_s=0.8), Jiggle(3.0)), seed=2)
    end_of_hold = run.truth.throws[0].end_frame
    assert not [s for s in run.settled if run.seq(s) >= end_of_hold]
    assert run.states[-1].current is SettleState.MOVING


def test_a_custom_still_time_delays_the_read() -> None:
    config = SettleConfig(still_s=0.6)
    run = run_plan((Empty(0.6), Throw(hold_s=1.2), Empty(0.2)), seed=4, config=config)
    check_one_read_per_throw(run, still_s=0.6)


# --------------------------------------------------------------------------------- stale frames, loss
def _frames(plan: tuple[Step, ...], seed: int) -> tuple[list[CapturedFrame], DemoScene]:
    grabber = DemoGrabber(scene=scene(seed), plan=plan)
    frames = [i for i in Capture(grabber, table_id="T1") if isinstance(i, CapturedFrame)]
    return frames, _scene_of(grabber)


@pytest.mark.parametrize("how", ["reset_on_source_lost", "gap_in_time_stamps"])
def test_a_throw_not_watched_to_rest_is_never_read(how: str) -> None:
    plan = (Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.HAND, Action.CLEAR, 1.0), Empty(0.5), Throw(0.8))
    frames, truth = _frames(plan, seed=1)
    first = truth.throws[0]
    cut = range(first.release_frame + 8, first.rest_frame + 4)  # the camera misses the dice stopping
    detector = SettleDetector()
    assert len(cut) / FPS > detector.config.max_frame_gap_s
    reads: list[int] = []
    for f in frames:
        if f.seq in cut:
            continue
        if f.seq == cut.stop and how == "reset_on_source_lost":
            detector.reset()
        reads += [f.seq for e in detector.update(f) if isinstance(e, AtRest)]
    second = truth.throws[1]
    assert len(reads) == 1 and second.rest_frame <= reads[0] < second.end_frame


class FreezingCamera:
    """A live camera replaying rendered frames, whose feed freezes (repeats one frame) mid-throw."""

    live = True
    description = "freezing camera"

    def __init__(self, frames: list[np.ndarray], *, freeze_at: int, freeze_frames: int, clock: list[float]):
        self.frames = frames
        self.freeze_at = freeze_at
        self.freeze_frames = freeze_frames
        self.clock = clock
        self.pos = 0
        self.repeats = 0
        self.open_ = False

    def open(self) -> None:
        self.open_ = True

    def read(self) -> Grab | None:
        if not self.open_:
            return None
        self.clock[0] += 1.0 / FPS
        if self.pos >= len(self.frames):
            return None
        if self.pos == self.freeze_at and self.repeats < self.freeze_frames:
            self.repeats += 1
            return Grab(image=self.frames[self.pos - 1])
        image = self.frames[self.pos]
        self.pos += 1
        return Grab(image=image)

    def close(self) -> None:
        self.open_ = False


def test_frozen_feed_mid_throw_never_yields_a_read() -> None:
    # Without the capture's freeze check, 60 repeats of a mid-roll frame look like dice at rest for 2 s.
    scene_ = DemoScene(scene(6))
    images = list(scene_.render((Empty(0.6), Throw(hold_s=1.0), Handling(Intruder.HAND, Action.CLEAR, 1.2))))
    throw = scene_.throws[0]
    clock = [1000.0]

    def sleep(seconds: float) -> None:
        clock[0] += seconds

    camera = FreezingCamera(images, freeze_at=throw.release_frame + 10, freeze_frames=60, clock=clock)
    capture = Capture(
        camera,
        table_id="T1",
        config=CaptureConfig(frozen_after_s=1.0, reconnect_initial_s=0.05, reconnect_max_s=0.05),
        clock=lambda: clock[0],
        sleep=sleep,
    )
    items = list(itertools.islice(settle_stream(capture, SettleDetector()), 5000))
    assert any(isinstance(i, SourceLost) for i in items)
    assert any(isinstance(i, SourceRecovered) for i in items)
    assert not [i for i in items if isinstance(i, AtRest)]

    # Why the capture must drop repeats: handed on as new frames, the stale picture looks like dice at rest.
    camera = FreezingCamera(images, freeze_at=throw.release_frame + 10, freeze_frames=60, clock=clock)
    camera.open()
    detector = SettleDetector()
    stale: list[AtRest] = []
    seq = 0
    while (grab := camera.read()) is not None and not stale:
        frame = CapturedFrame(
            image=grab.image,
            frame_id=f"raw-{seq}",
            table_id="T1",
            seq=seq,
            source_id="raw",
            monotonic_s=clock[0],
        )
        stale += [e for e in detector.update(frame) if isinstance(e, AtRest)]
        seq += 1
    freeze_at = throw.release_frame + 10
    assert scene_.frames[freeze_at - 1].dice_moving  # the frozen picture shows dice rolling
    assert stale and freeze_at <= stale[0].frame.seq < freeze_at + 60  # ...and was read as "at rest"


# ------------------------------------------------------------------------- synthetic throw clips (demo)
def write_synth_style_clip(folder: Path, *, seed: int) -> tuple[int, int]:
    """A clip in the `datasets/synth` video layout (release to rest, then still; throw.mp4 + video.json),
    drawn by the demo scene; returns (frame of rest, number of frames).
    """
    clip_scene = DemoScene(scene(seed))
    images = list(clip_scene.render((Throw(hold_s=0.6, show_shaker=False),)))
    folder.mkdir(parents=True)
    writer = cv2.VideoWriter(str(folder / "throw.mp4"), cv2.VideoWriter.fourcc(*"mp4v"), FPS, (320, 240))
    for image in images:
        writer.write(image)
    writer.release()
    rest = clip_scene.throws[0].rest_frame
    frames = [
        {"file": f"frames/f{k:04d}.jpg", "t_s": k / FPS, "moving": k < rest} for k in range(len(images))
    ]
    doc = {"format": "throwbox-video/1", "fps": FPS, "frames": frames, "at_rest_frame": rest, "settled": True}
    (folder / "video.json").write_text(json.dumps({**doc, "mp4": "throw.mp4"}))
    return rest, len(images)


def test_demo_of_throw_clips_reads_each_clip_once(tmp_path: Path) -> None:
    # `throwbox watch demo:DIR` on clips that start at the release: each cut starts a throw afresh.
    clips = [write_synth_style_clip(tmp_path / "videos" / f"v{k:04d}", seed=30 + k) for k in range(3)]
    capture = Capture(DemoGrabber(video_dir=tmp_path / "videos", loops=1), table_id="demo")
    items = list(settle_stream(capture, SettleDetector()))
    cuts = [i for i in items if isinstance(i, ClipStarted)]
    assert [Path(c.clip).parent.name for c in cuts] == ["v0000", "v0001", "v0002"]
    reads = [i for i in items if isinstance(i, AtRest)]
    assert len(reads) == 3
    first_frames = [0, *itertools.accumulate(n for _, n in clips[:-1])]
    for read, first, (rest, n) in zip(reads, first_frames, clips, strict=True):
        assert first + rest <= read.frame.seq < first + n  # in its own clip, after the dice stopped
        assert 0.2 <= (read.frame.seq - first - rest) / FPS <= 0.45


# ------------------------------------------------------------------------------- set-up and validation
def test_given_empty_box_image_skips_learning() -> None:
    frames, truth = _frames((Empty(0.3), Throw(hold_s=0.8)), seed=8)
    empty = DemoScene(SceneConfig(width_px=320, height_px=240, die_edge_px=12, seed=8, noise_sigma=0.0))
    empty_box = next(iter(empty.render((Empty(0.1),))))
    detector = SettleDetector(empty_box=empty_box)
    events = [e for f in frames for e in detector.update(f)]
    assert not any(isinstance(e, StateChanged) and e.previous is SettleState.LEARNING for e in events)
    reads = [e for e in events if isinstance(e, AtRest)]
    assert len(reads) == 1 and truth.throws[0].rest_frame <= reads[0].frame.seq


def test_a_region_of_interest_limits_the_box() -> None:
    frames, truth = _frames(
        (Empty(0.6), Throw(hold_s=0.8), Handling(Intruder.HAND, Action.MOVE, 1.2)), seed=9
    )
    roi = np.array([[2, 2], [317, 2], [317, 237], [2, 237]], dtype=np.float64)
    detector = SettleDetector(roi_xy=roi)
    reads = [e for f in frames for e in detector.update(f) if isinstance(e, AtRest)]
    assert len(reads) == 1 and truth.throws[0].rest_frame <= reads[0].frame.seq < truth.throws[0].end_frame


def test_frames_must_keep_their_size_and_order() -> None:
    frames, _ = _frames((Empty(0.5),), seed=0)
    detector = SettleDetector()
    detector.update(frames[0])
    with pytest.raises(ValueError, match="not later than"):
        detector.update(frames[0])
    smaller = CapturedFrame(
        image=np.zeros((120, 160, 3), np.uint8),
        frame_id="x",
        table_id="T1",
        captured_at=frames[1].captured_at,
        seq=1,
        source_id="t",
        monotonic_s=frames[1].monotonic_s,
    )
    with pytest.raises(ValueError, match="set up for"):
        detector.update(smaller)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"still_s": 0.0}, "still_s"),  # a zero hold would read dice mid-roll
        ({"min_still_frames": 1}, "min_still_frames"),  # one frame cannot show stillness
        ({"blur_px": 4}, "blur_px"),  # Gaussian kernels are odd
        ({"motion_threshold": 0}, "motion_threshold"),  # noise would count as motion
        ({"foreground_threshold": 255}, "foreground_threshold"),  # nothing could ever be foreground
        ({"intrusion_edge_fraction": 1.5}, "intrusion_edge_fraction"),  # a share of the box, not > 1
        ({"background_frames": 0}, "background_frames"),  # the model needs a frame
        ({"background_alpha": 1.0}, "background_alpha"),  # alpha 1 would swallow the dice at once
        ({"max_frame_gap_s": 0.0}, "max_frame_gap_s"),  # every frame would be a gap
        ({"work_width_px": 10}, "work_width_px"),  # too small to see a die
    ],
)
def test_settle_config_rejects_nonsense(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SettleConfig(**kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("roi", "message"),
    [
        (np.array([[0, 0], [10, 10]], dtype=np.float64), "at least 3 points"),  # a line, not an outline
        (np.array([[900, 900], [950, 900], [950, 950]], dtype=np.float64), "no pixel"),  # outside the frame
    ],
)
def test_bad_region_of_interest(roi: np.ndarray, message: str) -> None:
    frames, _ = _frames((Empty(0.1),), seed=0)
    with pytest.raises(ValueError, match=message):
        SettleDetector(roi_xy=roi).update(frames[0])
