"""Detector stage 11's training options: `camera_light` (exposure and sensor noise) and the photo repeats."""

from __future__ import annotations

import numpy as np
import pytest

from models.augment import CAMERA_GAIN, CAMERA_READ_NOISE, camera_light
from models.train_detector import Sampler


def _grey(level: int) -> np.ndarray:
    return np.full((128, 128, 3), level, np.uint8)


def test_it_keeps_shape_and_type_and_repeats_with_its_seed() -> None:
    img = _grey(120)
    a = camera_light(img, np.random.default_rng(3))
    b = camera_light(img, np.random.default_rng(3))
    assert a.shape == img.shape and a.dtype == np.uint8
    assert np.array_equal(a, b)


def test_the_light_stays_within_its_gain_range() -> None:
    """The mean of a mid-grey patch moves by the gain (noise averages out), never past the range's ends."""
    means = [float(camera_light(_grey(100), np.random.default_rng(s)).mean()) for s in range(200)]
    assert min(means) >= 100 * CAMERA_GAIN[0] - 3
    assert max(means) <= min(255.0, 100 * CAMERA_GAIN[1]) + 3
    assert min(means) < 50 < 150 < max(means)  # both darker and brighter frames are drawn


def test_it_adds_noise_that_grows_with_the_read_noise_drawn() -> None:
    stds = [float(camera_light(_grey(128), np.random.default_rng(s))[:, :, 0].std()) for s in range(200)]
    assert max(stds) > 0.6 * CAMERA_READ_NOISE[1]
    assert min(stds) < 0.25 * CAMERA_READ_NOISE[1]


def test_the_sampler_applies_it_to_the_share_asked() -> None:
    """With a share of 0 the sampler's draws are those of a sampler without the option; with 1 they differ."""
    rng = np.random.default_rng(0)
    img = rng.integers(0, 255, (200, 200, 3), dtype=np.uint8)
    scenes = [(img, np.array([[40, 40, 80, 80]], np.float32), np.array([2]))]
    plain = Sampler(scenes, 5, hard_share=0.0).sample()
    off = Sampler(scenes, 5, hard_share=0.0, camera_light_share=0.0).sample()
    on = Sampler(scenes, 5, hard_share=0.0, camera_light_share=1.0).sample()
    assert np.array_equal(plain[0], off[0]) and np.array_equal(plain[1], off[1])
    assert np.array_equal(plain[1], on[1])  # the boxes are untouched
    assert not np.array_equal(plain[0], on[0])


@pytest.mark.parametrize("level", [0, 255])
def test_black_and_white_stay_in_range(level: int) -> None:
    out = camera_light(_grey(level), np.random.default_rng(1))
    assert out.min() >= 0 and out.max() <= 255


def test_the_real_and_webcam_photos_are_repeated_apart() -> None:
    """--real-repeat and --webcam-repeat: nellbyler first, synthetic scenes once, matteop65 last."""
    from models.train_detector import repeat_sources

    seq = ["n1", "n2", "s1", "s2", "s3", "m1"]
    assert repeat_sources(seq, 2, 5, 1, 1) == seq
    assert repeat_sources(seq, 2, 5, 2, 3) == ["n1", "n2", "n1", "n2", "s1", "s2", "s3", "m1", "m1", "m1"]
    assert repeat_sources(seq, 0, 6, 3, 3) == seq  # no real photos, no webcam photos
    with pytest.raises(ValueError, match="n_real <= n_synth"):
        repeat_sources(seq, 4, 3, 1, 1)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--camera-light", "1.5"], "--camera-light is a share of the samples, 0 to 1: got 1.5"),
        (["--real", "/nonexistent/nellbyler"], "the real photo sets live in"),
    ],
)
def test_the_training_command_refuses_bad_options_with_a_clear_error(args: list[str], said: str) -> None:
    """A share out of range, or a clone without the real photo sets: exit 2 and one line, no traceback."""
    pytest.importorskip("torch", reason="training only: pip install -e '.[train]'")
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "models.train_detector", "--minutes", "0.01", "--no-register", *args],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 2, out.stderr
    assert said in out.stderr and "Traceback" not in out.stderr
