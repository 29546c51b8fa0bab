"""Is the frame fit to be read at all? A frame washed out or too dark for its dice to be seen.

Under a clipped light (a lamp knocked, a camera's iris or gain gone wrong) or a dim one, the detector
takes texture for dice and the face model gives faces it should not (`throwbox stress`, docs/reader.md,
"Under changed photos": twice the light left the webcam photos' detection precision at 15.3 %). Such a
frame is judged by no rule: the roll goes to a person (`no_decision`, reason `frame_exposure`), with the
measure that failed, so the camera or the light can be fixed. The two measures, on the frame's grey levels
(every fourth pixel each way: the share of a frame, not its detail):

- the share of pixels clipped white (grey 250 or more), against `JudgeConfig.max_clipped_share`;
- the grey level under which 99 % of pixels lie, against `JudgeConfig.min_bright_level` (the frame's dice
  and print are its brightest parts; a frame whose brightest hundredth is dark shows none of them).

Hand-written on OpenCV's histogram: two percentiles of one frame, no library names them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np

from vision.judge.config import JudgeConfig
from vision.types import Finding, ImageArray, Verdict

FRAME_EXPOSURE = "frame_exposure"  # the reason of a frame washed out or too dark
CLIPPED_GREY = 250  # a grey level this high or higher is taken as clipped white
STRIDE = 4  # every fourth pixel of every fourth row


@dataclass(frozen=True)
class FrameExposure:
    """The two measures of a frame's exposure."""

    clipped_share: float  # of its pixels at grey CLIPPED_GREY or more, 0..1
    bright_level: int  # the grey level under which 99 % of its pixels lie (0..255)


def measure_exposure(image_bgr: ImageArray) -> FrameExposure:
    """The frame's clipped share and 99th-percentile grey level (BGR or grey uint8)."""
    if image_bgr.ndim not in (2, 3) or image_bgr.size == 0:
        raise ValueError(f"an image is needed, got shape {image_bgr.shape}")
    # Nearest-neighbour scaling takes every STRIDE-th pixel, as slicing would where the sides divide by
    # STRIDE (nearly so elsewhere), at a quarter of the cost of copying a strided slice (0.17 against
    # 0.66 ms for 1280x960, a throwaway timing; `python -m models.exposure_scan` prints the measure's median).
    h, w = image_bgr.shape[:2]
    size = (max(1, w // STRIDE), max(1, h // STRIDE))
    small = cv2.resize(image_bgr, size, interpolation=cv2.INTER_NEAREST)
    grey = small if small.ndim == 2 else cv2.cvtColor(small, cv2.COLOR_BGR2GRAY)
    counts = cv2.calcHist([grey], [0], None, [256], [0, 256]).ravel().cumsum()
    total = float(counts[-1])
    clipped = 1.0 - float(counts[CLIPPED_GREY - 1]) / total
    bright = int(np.searchsorted(counts, 0.99 * total))
    return FrameExposure(clipped_share=max(0.0, clipped), bright_level=bright)


def exposure_findings(exposure: FrameExposure, config: JudgeConfig) -> tuple[Finding, ...]:
    """A `frame_exposure` finding for each bar the frame fails (none when both are off or both pass)."""
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
    return tuple(
        Finding(
            verdict=Verdict.NO_DECISION,
            reason=FRAME_EXPOSURE,
            die_ids=(),
            detail=f"the frame is {why}; no rule reads a roll from it: fix the light or the camera's "
            "exposure, and a person decides this roll",
        )
        for why in failed
    )


def exposure_failure(findings: Iterable[Finding]) -> Finding | None:
    """The first `frame_exposure` finding of a roll's (or a frame's) findings; None when the frame is fit."""
    return next((f for f in findings if f.reason == FRAME_EXPOSURE), None)
