"""A frame washed out or too dark is judged by no rule, and, with the grain bars set (off by default), a
grainy one is read smoothed (vision/judge/exposure.py): measures, findings, the reader's verdict, and the
judge's records (`throwbox lab eval --verdicts`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api.read_document import winner_and_count
from tests.vision.drawn import draw_die, plain
from tests.vision.fakes import FakeDetectorSession, FakeFaceSession, factory, one_hot, write_manifest
from vision.judge.config import JudgeConfig
from vision.judge.exposure import (
    FRAME_SMOOTHED,
    FrameExposure,
    exposure_failure,
    exposure_findings,
    grain_bars_set,
    measure_exposure,
    smoothed,
    smoothing_sigma,
)
from vision.judge.validity import ValidityConfig, judge
from vision.reader import Reader, ReaderConfig
from vision.types import DieCandidate, FaceReading, Finding, Frame, Verdict

FACES = (6, 6, 2)
# The grain bars as the rule chose them on tuning photos (refused on held-out ones, so off by default).
GRAINY = JudgeConfig(smooth_noise_above=6.0, max_noise_level=24.0)


def test_the_measures_read_the_share_clipped_and_the_brightest_hundredth() -> None:
    grey = np.full((400, 400, 3), 128, np.uint8)
    assert measure_exposure(grey) == FrameExposure(clipped_share=0.0, bright_level=128, noise_level=0.0)
    half = grey.copy()
    half[:, :200] = 255
    washed = measure_exposure(half)
    assert washed.clipped_share == pytest.approx(0.5, abs=0.01) and washed.bright_level == 255
    edge = np.full((400, 400, 3), 249, np.uint8)  # 249 is not clipped, 250 is
    assert measure_exposure(edge).clipped_share == 0.0
    edge[:200] = 250
    assert measure_exposure(edge).clipped_share == pytest.approx(0.5, abs=0.01)
    spread = np.repeat(np.arange(100, dtype=np.uint8), 400).reshape(200, 200)  # each level 0..99 once a 100th
    assert measure_exposure(spread).bright_level in (98, 99)  # the 99th percentile, not the 95th nor the max
    dark = np.full((400, 400), 20, np.uint8)  # a grey frame is measured too
    dark[:2, :] = 200  # a thin bright line: under a hundredth of the frame
    assert measure_exposure(dark).bright_level == 20
    with pytest.raises(ValueError, match="an image is needed"):
        measure_exposure(np.zeros((0, 0, 3), np.uint8))


def test_a_frame_fails_each_bar_with_its_own_reason_and_passes_when_it_is_off() -> None:
    config = JudgeConfig()
    assert exposure_findings(FrameExposure(0.03, 84), config) == ()  # the rendered tuning frames' worst
    (washed,) = exposure_findings(FrameExposure(0.4, 255), config)
    assert (washed.verdict, washed.reason, washed.die_ids) == (Verdict.NO_DECISION, "frame_exposure", ())
    assert "washed out: 40 % of it clipped white (limit 15 %)" in washed.detail
    (dark,) = exposure_findings(FrameExposure(0.0, 41), config)
    assert "too dark: 99 % of it at or under grey level 41 (limit 60)" in dark.detail
    off = JudgeConfig(max_clipped_share=None, min_bright_level=None)
    assert exposure_findings(FrameExposure(0.9, 10), off) == ()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_clipped_share": 0.0}, "max_clipped_share"),
        ({"max_clipped_share": 1.0}, "max_clipped_share"),
        ({"min_bright_level": 0.0}, "min_bright_level"),
        ({"min_bright_level": 300.0}, "min_bright_level"),
    ],
)
def test_the_bars_are_checked(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        JudgeConfig(**kwargs)  # type: ignore[arg-type]


def test_no_rule_outweighs_a_frame_unfit_to_read() -> None:
    # A rethrow found with the frame (here a stand-in invalid finding) would win over no_decision by the
    # usual precedence; a washed-out frame leaves the roll to a person all the same, every finding listed.
    box = (10.0, 10.0, 50.0, 50.0)
    candidate = DieCandidate(box_xyxy=box, top_quad=((10, 10), (50, 10), (50, 50), (10, 50)), score=0.9)
    reading = FaceReading(face_probs=one_hot(3), pip_count=3)
    rethrow = Finding(verdict=Verdict.INVALID, reason="die_off_table", die_ids=(), detail="stand-in")
    plain_judgement = judge(
        (candidate,), (reading,), expected_dice=1, config=ValidityConfig(), frame_findings=(rethrow,)
    )
    assert plain_judgement.verdict is Verdict.INVALID
    exposure = exposure_findings(FrameExposure(0.5, 255), JudgeConfig())
    both = judge(
        (candidate,),
        (reading,),
        expected_dice=1,
        config=ValidityConfig(),
        frame_findings=(*exposure, rethrow),
    )
    assert both.verdict is Verdict.NO_DECISION
    assert {f.reason for f in both.findings} >= {"frame_exposure", "die_off_table"}


def _scene() -> tuple[np.ndarray, list[tuple[float, float, float, float]]]:
    img = plain(480, 640)
    boxes = [draw_die(img, face=f, centre_xy=(120 + 180 * i, 240), edge_px=70) for i, f in enumerate(FACES)]
    return img, boxes


def test_the_reader_leaves_a_washed_out_frame_to_a_person(tmp_path: Path) -> None:
    img, boxes = _scene()
    washed = np.clip(img.astype(np.int16) + 230, 0, 255).astype(np.uint8)  # the felt clipped white
    assert measure_exposure(washed).clipped_share > 0.5

    def reader(config: ReaderConfig, sub: str) -> Reader:
        (tmp_path / sub).mkdir()
        sessions = factory(FakeDetectorSession(boxes), FakeFaceSession([one_hot(f) for f in FACES]))
        return Reader(manifest_path=write_manifest(tmp_path / sub), session_factory=sessions, config=config)

    shipped = reader(ReaderConfig(), "a")
    assert shipped.read(Frame(image=img), expected_dice=3).verdict is Verdict.VALID
    roll = shipped.read(Frame(image=washed), expected_dice=3)
    assert roll.verdict is Verdict.NO_DECISION
    assert any("washed out" in r for r in roll.reasons), roll.reasons
    assert winner_and_count(roll) == (None, None)  # nothing settled from it
    off = ReaderConfig(validity=ValidityConfig(judge=JudgeConfig(max_clipped_share=None)))
    # With the bar off the same dice (the fakes read them whatever the picture) would be read valid.
    assert reader(off, "b").read(Frame(image=washed), expected_dice=3).verdict is Verdict.VALID


def test_exposure_failure_finds_the_frame_finding_among_others() -> None:
    other = Finding(verdict=Verdict.NO_DECISION, reason="face_uncertain", die_ids=(2,), detail="unsure")
    (dark,) = exposure_findings(FrameExposure(clipped_share=0.0, bright_level=20), JudgeConfig())
    assert exposure_failure([other, dark]) is dark
    assert exposure_failure([other]) is None
    assert exposure_failure([]) is None


def _grainy(image: np.ndarray, sigma: float, seed: int = 0) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(0.0, sigma, image.shape)
    return np.clip(image.astype(np.float32) + noise + 0.5, 0, 255).astype(np.uint8)


def test_the_noise_level_reads_a_cameras_grain_and_not_the_scene() -> None:
    flat = np.full((480, 640), 120, np.uint8)
    assert measure_exposure(flat).noise_level == 0.0
    assert measure_exposure(_grainy(flat, 10.0), noise=False).noise_level is None  # not measured
    assert not grain_bars_set(JudgeConfig()) and grain_bars_set(GRAINY)
    for sigma in (4.0, 10.0, 20.0):  # grey noise of that deviation is read as it
        assert measure_exposure(_grainy(flat, sigma)).noise_level == pytest.approx(sigma, rel=0.1)
    # Noise drawn in each colour channel apart is partly averaged out in grey (x0.67 for independent BGR).
    colour = _grainy(np.full((480, 640, 3), 120, np.uint8), 12.0)
    assert measure_exposure(colour).noise_level == pytest.approx(12.0 * 0.668, rel=0.1)
    # Dice, their pips, wood and felt are edges and texture, not grain: the committed real photos (their JPEG
    # and sensor noise in) read under 1.5, the same photos under noise of 8 per channel 5.3-6 (5.34 in grey,
    # and a little of the photo's own texture on top).
    import cv2

    for path in sorted((Path(__file__).resolve().parent / "fixtures").glob("IMG_*.jpg")):
        photo = cv2.imread(str(path))
        clean = measure_exposure(photo).noise_level
        assert clean is not None and clean < 1.5, path.name
        assert measure_exposure(_grainy(photo, 8.0)).noise_level == pytest.approx(8.0 * 0.668, rel=0.15)
    # The measure saturates at 63 (|response| is taken in 8 bits): no bar over 60 is accepted.
    assert measure_exposure(_grainy(flat, 120.0)).noise_level == pytest.approx(63.01, abs=0.01)


def test_a_grainy_frame_is_smoothed_with_a_note_and_one_past_the_bar_left_to_a_person() -> None:
    assert JudgeConfig().smooth_noise_above is None and JudgeConfig().max_noise_level is None  # refused: off
    assert exposure_findings(FrameExposure(0.0, 200, noise_level=30.0), JudgeConfig()) == ()
    config = GRAINY
    # The rendered tuning frames' grainiest measure 5.19: not smoothed.
    assert exposure_findings(FrameExposure(0.0, 200, noise_level=5.19), config) == ()
    (note,) = exposure_findings(FrameExposure(0.0, 200, noise_level=10.6), config)
    assert (note.verdict, note.reason, note.die_ids) == (Verdict.VALID, FRAME_SMOOTHED, ())
    assert "noise about 11 grey levels)" in note.detail and "blur of 0.9 px" in note.detail
    # A bar set on a frame whose grain was not measured is an error, not a clean frame.
    with pytest.raises(ValueError, match="not measured"):
        exposure_findings(FrameExposure(0.0, 200), config)
    assert exposure_findings(FrameExposure(0.0, 200), JudgeConfig()) == ()  # the bars off: not needed
    assert smoothing_sigma(FrameExposure(0.0, 200, noise_level=9.0), config) == 0.75  # level / 12
    low = replace(GRAINY, smooth_noise_above=2.0)
    assert smoothing_sigma(FrameExposure(0.0, 200, noise_level=3.0), low) == 0.5  # the least blur
    assert smoothing_sigma(FrameExposure(0.0, 200, noise_level=60.0), config) == 2.5  # the most
    unfit, noted = exposure_findings(FrameExposure(0.0, 200, noise_level=30.0), config)
    assert (unfit.verdict, unfit.reason) == (Verdict.NO_DECISION, "frame_exposure")
    assert "too grainy: its noise about 30 grey levels (limit 24)" in unfit.detail
    assert noted.reason == FRAME_SMOOTHED
    assert exposure_failure([noted]) is None and exposure_failure([noted, unfit]) is unfit


def test_smoothed_gives_the_frame_itself_unless_it_is_grainy() -> None:
    img, _ = _scene()
    clean = measure_exposure(img)
    assert smoothed(img, clean, GRAINY) is img  # not a copy: a clean frame is read as it is
    grainy = _grainy(img, 16.0)
    measured = measure_exposure(grainy)
    assert smoothed(grainy, measured, JudgeConfig()) is grainy  # the shipped reader: the bar is off
    out = smoothed(grainy, measured, GRAINY)
    assert out.shape == grainy.shape and out.dtype == np.uint8
    after, before = measure_exposure(out).noise_level, measured.noise_level
    assert after is not None and before is not None and after < before / 2.5


@pytest.mark.parametrize("name", ["smooth_noise_above", "max_noise_level"])
@pytest.mark.parametrize("level", [0.0, -1.0, 61.0, 300.0])
def test_the_noise_bars_are_checked(name: str, level: float) -> None:
    with pytest.raises(ValueError, match=name):
        JudgeConfig(**{name: level})  # type: ignore[arg-type]


def test_the_noise_bars_are_in_order_and_each_works_alone() -> None:
    with pytest.raises(ValueError, match="at least smooth_noise_above"):
        JudgeConfig(smooth_noise_above=10.0, max_noise_level=8.0)
    grainy = FrameExposure(0.0, 200, noise_level=30.0)
    only_smooth = JudgeConfig(smooth_noise_above=6.0)
    assert [f.reason for f in exposure_findings(grainy, only_smooth)] == [FRAME_SMOOTHED]
    only_most = JudgeConfig(max_noise_level=24.0)
    assert [f.reason for f in exposure_findings(grainy, only_most)] == ["frame_exposure"]
    assert smoothing_sigma(grainy, only_most) is None  # not smoothed: only left to a person


class _SeeingDetector(FakeDetectorSession):
    """The fake detector, keeping the grain of the first input it is given (a flat corner of the felt)."""

    seen_grain: float | None = None

    def run(self, output_names: Any, input_feed: Any) -> list[Any]:
        (x,) = input_feed.values()
        if self.seen_grain is None:
            self.seen_grain = float(np.diff(x[0, :, 5:40, 5:40], axis=2).std())  # pixel to pixel, a corner
        return super().run(output_names, input_feed)


def test_the_reader_reads_a_grainy_frame_smoothed_and_says_so(tmp_path: Path) -> None:
    img, boxes = _scene()
    grainy = _grainy(img, 16.0)

    def read(config: ReaderConfig, sub: str) -> tuple[Any, float]:
        (tmp_path / sub).mkdir()
        detector = _SeeingDetector(boxes)
        sessions = factory(detector, FakeFaceSession([one_hot(f) for f in FACES]))
        reader = Reader(manifest_path=write_manifest(tmp_path / sub), session_factory=sessions, config=config)
        roll = reader.read(Frame(image=grainy), expected_dice=3)
        assert detector.seen_grain is not None
        return roll, detector.seen_grain

    roll, grain = read(ReaderConfig(validity=ValidityConfig(judge=GRAINY)), "a")
    assert roll.verdict is Verdict.VALID and roll.faces == FACES  # the note does not change the verdict
    assert [f.reason for f in roll.findings if f.reason == FRAME_SMOOTHED] == [FRAME_SMOOTHED]
    assert any("smoothed" in r for r in roll.reasons), roll.reasons
    roll_off, grain_off = read(ReaderConfig(), "b")  # the shipped reader: read as it comes
    assert not any(f.reason == FRAME_SMOOTHED for f in roll_off.findings)
    assert grain < grain_off / 2  # the detector was given the smoothed frame
