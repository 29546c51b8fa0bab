"""Is the frame fit to be read at all? A frame washed out, too dark or too grainy for its dice to be seen.

Under a clipped light (a lamp knocked, a camera's iris or gain gone wrong) or a dim one, the detector
takes texture for dice and the face model gives faces it should not (`throwbox stress`, docs/reader.md,
"Under changed photos": twice the light left the webcam photos' detection precision at 15.3 %). Such a
frame is judged by no rule: the roll goes to a person (`no_decision`, reason `frame_exposure`), with the
measure that failed, so the camera or the light can be fixed. The two measures, on the frame's grey levels
(every fourth pixel each way: the share of a frame, not its detail):

- the share of pixels clipped white (grey 250 or more), against `JudgeConfig.max_clipped_share`;
- the grey level under which 99 % of pixels lie, against `JudgeConfig.min_bright_level` (the frame's dice
  and print are its brightest parts; a frame whose brightest hundredth is dark shows none of them).

A third measure, of the same pixels, is the frame's grain: the standard deviation of its sensor noise in grey
levels, estimated as Immerkaer's ("Fast noise variance estimation", 1996) 3x3 operator, which cancels any
plane and most smooth shading, taken at its median (robust to the edges and pips that make up a minority of
a frame) over every fourth pixel each way (independent noise keeps its deviation under that sampling). A
camera's noise grows in a dim room as its gain rises. `throwbox stress` showed the reader losing most photos
under noise of 16 grey levels (the webcam photos' detection precision at 74 %), and trained on no such frames
(the rendered tuning frames measure at most 5.19). So a frame grainier than `JudgeConfig.smooth_noise_above`
can be smoothed (`smoothed`: a Gaussian blur whose sigma grows with the noise) before any model reads it,
with a `frame_smoothed` note in the roll's reasons (its verdict unchanged); one grainier than
`JudgeConfig.max_noise_level` is then `frame_exposure` like a dark one. Both bars are off by default:
chosen on tuning photos (6.0 and 24), they failed their rule on the held-out photos (docs/history/reader.md,
"A grainy frame, smoothed"), so the reader reads every frame as it comes unless a config turns them on.

Hand-written on OpenCV's histogram and filter: percentiles and a median of one frame. scikit-image's
`estimate_sigma` (a wavelet median) would bring a dependency for one number; Immerkaer's operator is one
3x3 filter on pixels already taken.
"""

from __future__ import annotations

from collections.abc import Iterable

import cv2
import numpy as np

from vision.judge.config import JudgeConfig
from vision.types import Finding, FindingReason, FrameExposure, ImageArray, Verdict

FRAME_EXPOSURE = FindingReason.FRAME_EXPOSURE  # the reason of a frame washed out, too dark or too grainy
FRAME_SMOOTHED = FindingReason.FRAME_SMOOTHED  # a grainy frame smoothed before it was read (valid)
CLIPPED_GREY = 250  # a grey level this high or higher is taken as clipped white
STRIDE = 4  # every fourth pixel of every fourth row
# Immerkaer's operator: the difference of two Laplacians, zero on any plane; its response to white noise of
# deviation s has deviation 6 s (the root of the sum of its squared weights, 36).
NOISE_KERNEL = np.array([[1, -2, 1], [-2, 4, -2], [1, -2, 1]], np.float32)
MAD_TO_SIGMA = 1.4826  # a normal variable's deviation over its median absolute value
# The blur of a grainy frame: sigma (px of the frame) = its noise level / SMOOTH_LEVELS_PER_PX, within
# SMOOTH_SIGMA_PX. Chosen on tuning photos (docs/history/reader.md, "A grainy frame, smoothed"): noise of 16
# per channel (11 grey levels) takes 0.9 px, of 32 (21 grey levels) 1.8 px; level / 8 read more rolls
# exactly on the webcam photos but settled more wrong.
SMOOTH_LEVELS_PER_PX = 12.0
SMOOTH_SIGMA_PX = (0.5, 2.5)


def measure_exposure(image_bgr: ImageArray, *, noise: bool = True) -> FrameExposure:
    """The frame's clipped share, 99th-percentile grey level and noise level (BGR or grey uint8).

    `noise=False` leaves the noise level unmeasured (None; 0.13 against 0.50 ms for a 1280x960 frame, p50 of
    300, a throwaway timing at load 8). The reader measures both on every frame, and its `Roll` carries them
    (`Roll.exposure`): the live loop's grain alert reads them there instead of measuring the frame again."""
    if image_bgr.ndim not in (2, 3) or image_bgr.size == 0:
        raise ValueError(f"an image is needed, got shape {image_bgr.shape}")
    # Nearest-neighbour scaling takes every STRIDE-th pixel, as slicing would where the sides divide by
    # STRIDE (nearly so elsewhere), at a quarter of the cost of copying a strided slice (0.17 against
    # 0.66 ms for 1280x960, a throwaway timing; `python -m lab.exposure_scan` prints the measure's median).
    h, w = image_bgr.shape[:2]
    size = (max(1, w // STRIDE), max(1, h // STRIDE))
    small = cv2.resize(image_bgr, size, interpolation=cv2.INTER_NEAREST)
    grey = np.asarray(small if small.ndim == 2 else cv2.cvtColor(small, cv2.COLOR_BGR2GRAY), np.uint8)
    counts = cv2.calcHist([grey], [0], None, [256], [0, 256]).ravel().cumsum()
    total = float(counts[-1])
    clipped = 1.0 - float(counts[CLIPPED_GREY - 1]) / total
    bright = int(np.searchsorted(counts, 0.99 * total))
    level = _noise_level(grey) if noise else None
    return FrameExposure(clipped_share=max(0.0, clipped), bright_level=bright, noise_level=level)


def grain_bars_set(config: JudgeConfig) -> bool:
    """Does either grain bar (`smooth_noise_above`, `max_noise_level`) need the frame's noise level?"""
    return config.smooth_noise_above is not None or config.max_noise_level is not None


def _noise_level(grey: ImageArray) -> float:
    """The noise deviation of a grey image: the median of |Immerkaer's operator| over its inner pixels, / 6
    and scaled to a deviation (0.25 grey levels a step: the operator's response is a whole number)."""
    if grey.shape[0] < 3 or grey.shape[1] < 3:
        return 0.0
    response = cv2.filter2D(grey, cv2.CV_16S, NOISE_KERNEL)[1:-1, 1:-1]
    magnitude = cv2.convertScaleAbs(response)  # |response|, saturating at 255 (far past any median here)
    counts = cv2.calcHist([magnitude], [0], None, [256], [0, 256]).ravel().cumsum()
    median = int(np.searchsorted(counts, 0.5 * float(counts[-1])))
    return MAD_TO_SIGMA * median / 6.0


def _measured_noise(exposure: FrameExposure) -> float:
    if exposure.noise_level is None:
        raise ValueError(
            "a grain bar is set, but the frame's noise was not measured (measure_exposure(noise=False))"
        )
    return exposure.noise_level


def smoothing_sigma(exposure: FrameExposure, config: JudgeConfig) -> float | None:
    """The blur (sigma, px) a frame this grainy is read through; None when it is not grainy enough (or the
    bar is off). A ValueError when the bar is set and the noise was not measured."""
    bar = config.smooth_noise_above
    if bar is None:
        return None
    level = _measured_noise(exposure)
    if level <= bar:
        return None
    low, high = SMOOTH_SIGMA_PX
    return min(high, max(low, level / SMOOTH_LEVELS_PER_PX))


def smoothed(image_bgr: ImageArray, exposure: FrameExposure, config: JudgeConfig) -> ImageArray:
    """The frame the models read: itself (the same array) unless it is grainier than
    `JudgeConfig.smooth_noise_above`, then blurred by `smoothing_sigma`."""
    sigma = smoothing_sigma(exposure, config)
    if sigma is None:
        return image_bgr
    return np.asarray(cv2.GaussianBlur(image_bgr, (0, 0), sigmaX=sigma), np.uint8)


def exposure_findings(exposure: FrameExposure, config: JudgeConfig) -> tuple[Finding, ...]:
    """A `frame_exposure` finding for each bar the frame fails (none when the bars are off or all pass),
    then the `frame_smoothed` note of a grainy frame that was smoothed before it was read."""
    failed = []
    if config.max_clipped_share is not None and exposure.clipped_share > config.max_clipped_share:
        failed.append(
            f"washed out: {100 * exposure.clipped_share:.0f} % of it clipped white "
            f"(limit {100 * config.max_clipped_share:g} %)"
        )
    if config.min_bright_level is not None and exposure.bright_level < config.min_bright_level:
        failed.append(
            f"too dark: 99 % of it at or under grey level {exposure.bright_level} "
            f"(limit {config.min_bright_level:g})"
        )
    if config.max_noise_level is not None and _measured_noise(exposure) > config.max_noise_level:
        failed.append(
            f"too grainy: its noise about {exposure.noise_level:.0f} grey levels "
            f"(limit {config.max_noise_level:g})"
        )
    unfit = tuple(
        Finding(
            verdict=Verdict.NO_DECISION,
            reason=FRAME_EXPOSURE,
            die_ids=(),
            detail=f"the frame is {why}; no rule reads a roll from it: fix the light or the camera's "
            "exposure, and a person decides this roll",
        )
        for why in failed
    )
    sigma = smoothing_sigma(exposure, config)
    return unfit if sigma is None else (*unfit, smoothed_note(exposure, sigma))


def smoothed_note(exposure: FrameExposure, sigma: float) -> Finding:
    """The `frame_smoothed` note of a frame read through a blur of `sigma` px (its verdict valid)."""
    return Finding(
        verdict=Verdict.VALID,
        reason=FRAME_SMOOTHED,
        die_ids=(),
        detail=f"the frame is grainy (noise about {_measured_noise(exposure):.0f} grey levels): it was "
        f"smoothed (blur of {sigma:.1f} px) before its dice were read; more light or less camera gain would "
        "give a cleaner picture",
    )


def exposure_failure(findings: Iterable[Finding]) -> Finding | None:
    """The first `frame_exposure` finding of a roll's (or a frame's) findings; None when the frame is fit."""
    return next((f for f in findings if f.reason == FRAME_EXPOSURE), None)
