"""The wide style's palette (issue 48): dice and felts the usual style never draws.

`throwbox lab synth --style wide` draws its scenes' dice, felts, light and camera noise from wider ranges than
the usual style every training set was made with (`datasets.synth.randomise.sample_wide_*`), to measure how
the reader holds up on looks it has not been trained on. Its dice and felts are palette entries of their own,
none shared with the usual palette (`datasets.synth.textures`): other body and pip colours, translucent and
opaque, other pip sizes; felts of other colours with a weave, pinstripes, a check, mottling or wear, printed
in other inks. They live in a renderer world of their own (`datasets.synth.render`), so a usual set's images
are the same as before the wide style existed (the renderer's shadows depend on every body of its world).
"""

from __future__ import annotations

from collections.abc import Callable

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.synth.textures import BGR, DieStyle

STYLES: tuple[str, ...] = ("usual", "wide")

# Body and pip colours (BGR), translucency and pip size; none of them is in the usual palette.
WIDE_DIE_STYLES: tuple[DieStyle, ...] = (
    DieStyle("wide-yellow-black", (40, 205, 240), (20, 20, 20), False, 0.1),
    DieStyle("wide-orange-white", (30, 120, 245), (245, 245, 245), True, 0.085),
    DieStyle("wide-purple-gold", (140, 40, 110), (60, 190, 230), True, 0.09),
    DieStyle("wide-smoke-white", (70, 70, 75), (240, 240, 240), True, 0.08),
    DieStyle("wide-amber-black", (20, 140, 220), (25, 25, 25), True, 0.095),
    DieStyle("wide-teal-white", (150, 140, 20), (245, 245, 245), False, 0.1),
    DieStyle("wide-pink-black", (180, 140, 245), (30, 30, 30), False, 0.11),
    DieStyle("wide-white-red", (240, 240, 240), (30, 30, 200), False, 0.1),
    DieStyle("wide-white-blue", (235, 235, 230), (170, 60, 20), False, 0.075),
    DieStyle("wide-navy-gold", (90, 30, 20), (60, 190, 230), False, 0.1),
    DieStyle("wide-iceblue-navy", (230, 190, 140), (110, 40, 10), True, 0.09),
    DieStyle("wide-lime-black", (50, 220, 160), (25, 25, 25), False, 0.09),
    DieStyle("wide-brown-cream", (40, 70, 110), (200, 230, 240), False, 0.1),
    DieStyle("wide-red-black", (40, 30, 200), (20, 20, 20), True, 0.09),
)


def _weave(h: int, w: int) -> NDArray[np.float32]:
    """A coarse cloth: a fine crossing of threads and a stronger grain than the usual felt."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    threads = 0.06 * np.sin(xx * 1.9) * np.sin(yy * 1.9)
    grain = np.random.default_rng(11).normal(0.0, 0.07, size=(h, w)).astype(np.float32)
    return np.asarray(1.0 + threads + grain, np.float32)


def _pinstripe(h: int, w: int) -> NDArray[np.float32]:
    """Thin lighter stripes across the box every 12 mm (at 2 px/mm)."""
    xx = np.arange(w, dtype=np.float32)[None, :].repeat(h, 0)
    return np.asarray(np.where((xx % 24) < 2, 1.35, 1.0), np.float32)


def _check(h: int, w: int) -> NDArray[np.float32]:
    """A faint check of 40 mm squares."""
    yy, xx = np.mgrid[0:h, 0:w]
    return np.asarray(np.where(((xx // 80) + (yy // 80)) % 2 == 0, 1.12, 0.9), np.float32)


def _mottled(h: int, w: int) -> NDArray[np.float32]:
    """Blotches a few centimetres wide, as on a felt that has been brushed unevenly."""
    small = np.random.default_rng(13).normal(0.0, 1.0, size=(max(2, h // 40), max(2, w // 40)))
    smooth = cv2.resize(small.astype(np.float32), (w, h), interpolation=cv2.INTER_CUBIC)
    return np.asarray(1.0 + 0.18 * np.tanh(smooth), np.float32)


def _worn(h: int, w: int) -> NDArray[np.float32]:
    """Worn lighter in the middle of the box, where the dice land, darker toward the walls."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    r2 = ((xx - w / 2) / (w / 2)) ** 2 + ((yy - h * 0.6) / (h / 2)) ** 2
    return np.asarray(0.85 + 0.35 * np.exp(-r2 * 1.5), np.float32)


FELT_PATTERNS: dict[str, Callable[[int, int], NDArray[np.float32]]] = {
    "weave": _weave,
    "pinstripe": _pinstripe,
    "check": _check,
    "mottled": _mottled,
    "worn": _worn,
}

# (name, felt colour BGR, pattern, ink colour BGR): colours, textures and inks the usual felts have none of.
WIDE_FELTS: tuple[tuple[str, BGR, str, BGR], ...] = (
    ("wide-teal-weave", (120, 115, 20), "weave", (235, 235, 235)),
    ("wide-tan-worn", (140, 175, 200), "worn", (40, 40, 40)),
    ("wide-purple-mottled", (100, 35, 80), "mottled", (60, 190, 230)),
    ("wide-red-pinstripe", (40, 40, 165), "pinstripe", (235, 235, 235)),
    ("wide-navy-check", (85, 35, 20), "check", (60, 190, 230)),
    ("wide-rust-weave", (40, 85, 160), "weave", (30, 30, 30)),
    ("wide-lightgrey-mottled", (170, 170, 165), "mottled", (140, 40, 20)),
    ("wide-olive-worn", (40, 105, 95), "worn", (235, 235, 235)),
    ("wide-cream-check", (205, 220, 225), "check", (30, 30, 160)),
    ("wide-green-pinstripe", (50, 140, 40), "pinstripe", (20, 20, 20)),
    ("wide-slate-weave", (110, 95, 80), "weave", (60, 190, 230)),
    ("wide-black-mottled", (25, 25, 25), "mottled", (30, 30, 190)),
)


def wide_felt_names() -> tuple[str, ...]:
    """Every felt of the wide palette."""
    return tuple(name for name, _, _, _ in WIDE_FELTS)
