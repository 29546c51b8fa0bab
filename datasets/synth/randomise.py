"""Domain randomisation: the camera, the look and the light drawn per scene, and the image degradations.

Everything is drawn from a numpy Generator the caller seeds per scene, so a scene's look depends only on
(seed, index). The degradations (colour cast, glare, focus and motion blur, sensor noise, JPEG) are done with
OpenCV on the rendered image; they do not move any die, so the ground truth is unchanged by them.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.layout import ThrowBoxLayout
from datasets.synth.blur import motion_kernel
from datasets.synth.render import Lighting
from datasets.synth.textures import CASINO_STYLES, DIE_STYLES

ImageArray = NDArray[np.uint8]

CHIP_COLOURS: tuple[tuple[float, float, float, float], ...] = (
    (0.85, 0.1, 0.1, 1.0),  # red $5
    (0.1, 0.55, 0.15, 1.0),  # green $25
    (0.08, 0.08, 0.08, 1.0),  # black $100
    (0.45, 0.15, 0.6, 1.0),  # purple $500
    (0.92, 0.92, 0.9, 1.0),  # white $1
    (0.95, 0.75, 0.1, 1.0),  # yellow
)


@dataclass(frozen=True)
class Degradation:
    """Image degradations for one scene (all drawn per scene)."""

    gain: float
    channel_gain: tuple[float, float, float]
    glare: tuple[float, float, float, float] | None  # centre x, y (fraction), radius (fraction), strength
    defocus_sigma_px: float
    motion_px: int
    motion_angle_deg: float
    noise_sigma: float
    jpeg_quality: int

    def as_dict(self) -> dict[str, Any]:
        """For the ground truth's `render` record (JSON types: lists, not tuples)."""
        out: dict[str, Any] = json.loads(json.dumps(asdict(self)))
        return out


def sample_camera(
    rng: np.random.Generator, layout: ThrowBoxLayout, *, width_px: int, height_px: int, oblique: bool
) -> Camera:
    """A camera above the box: top-down with jitter, or oblique from the dealer's or the players' side."""
    cx, cy = layout.width_mm / 2.0, layout.depth_mm / 2.0
    hfov = float(rng.uniform(38.0, 55.0))
    intr = CameraIntrinsics.from_fov(width_px=width_px, height_px=height_px, hfov_deg=hfov)
    margin = float(rng.uniform(40.0, 110.0))
    half_w = max(layout.width_mm / 2.0, layout.depth_mm / 2.0 * width_px / height_px) + margin
    dist = half_w / np.tan(np.radians(hfov) / 2.0)
    target = (cx + float(rng.normal(0, 15)), cy + float(rng.normal(0, 15)), 0.0)
    roll = float(rng.normal(0.0, 2.5))
    if oblique:
        tilt = np.radians(rng.uniform(15.0, 40.0))
        side = -1.0 if rng.random() < 0.7 else 1.0  # mostly from the dealer's side
        dist *= float(rng.uniform(0.95, 1.1))
        eye = (
            target[0] + float(rng.normal(0, 40)),
            target[1] + side * dist * np.sin(tilt),
            dist * np.cos(tilt),
        )
        up_y = 1.0 if side < 0 else -1.0
    else:
        dist *= float(rng.uniform(0.97, 1.05))
        eye = (target[0] + float(rng.normal(0, 20)), target[1] + float(rng.normal(0, 20)), dist)
        up_y = 1.0
    r = np.radians(roll)
    up = (float(np.sin(r)) * up_y, float(np.cos(r)) * up_y, 0.0)
    pose = CameraPose.look_at(eye_mm=(float(eye[0]), float(eye[1]), float(eye[2])), target_mm=target, up=up)
    return Camera(intr, pose)


def sample_die_styles(rng: np.random.Generator, n: int) -> tuple[str, ...]:
    """Mostly one casino style for the whole set (as on a table), sometimes other common dice or a mix."""
    u = rng.random()
    if u < 0.65:
        return (str(rng.choice(CASINO_STYLES)),) * n
    names = [s.name for s in DIE_STYLES]
    if u < 0.9:
        return (str(rng.choice(names)),) * n
    return tuple(str(rng.choice(names)) for _ in range(n))


def sample_lighting(rng: np.random.Generator) -> Lighting:
    """Light from somewhere above, of random strength and tint."""
    az = rng.uniform(0, 2 * np.pi)
    el = rng.uniform(np.radians(35), np.radians(88))
    direction = (float(np.cos(az) * np.cos(el)), float(np.sin(az) * np.cos(el)), float(np.sin(el)))
    tint = rng.uniform(0.85, 1.0, size=3)
    return Lighting(
        direction=direction,
        colour=(float(tint[0]), float(tint[1]), float(tint[2])),
        ambient=float(rng.uniform(0.4, 0.75)),
        diffuse=float(rng.uniform(0.3, 0.65)),
        specular=float(rng.uniform(0.05, 0.5)),
        shadow=bool(rng.random() < 0.85),
    )


def sample_degradation(rng: np.random.Generator) -> Degradation:
    """Colour cast, glare, blur, noise and JPEG quality for one image."""
    cg = rng.uniform(0.92, 1.08, size=3)
    glare = None
    if rng.random() < 0.3:
        glare = (
            float(rng.uniform(0.1, 0.9)),
            float(rng.uniform(0.1, 0.9)),
            float(rng.uniform(0.05, 0.25)),
            float(rng.uniform(0.2, 0.7)),
        )
    return Degradation(
        gain=float(rng.uniform(0.8, 1.2)),
        channel_gain=(float(cg[0]), float(cg[1]), float(cg[2])),
        glare=glare,
        defocus_sigma_px=float(rng.uniform(0.4, 1.6)) if rng.random() < 0.35 else 0.0,
        motion_px=int(rng.integers(3, 10)) if rng.random() < 0.15 else 0,
        motion_angle_deg=float(rng.uniform(0, 180)),
        noise_sigma=float(rng.uniform(0.5, 6.0)),
        jpeg_quality=int(rng.integers(60, 96)),
    )


# The wide style (issue 48, `throwbox lab synth --style wide`): the looks below reach past what the usual
# samplers above draw, each range written beside the usual one it widens; the cameras are the usual ones
# (`sample_camera`), so a wide set shows the same throws from the same cameras as the usual set of its seed.


def colour_temperature_rgb(kelvin: float) -> tuple[float, float, float]:
    """The RGB tint (largest channel 1) of a black body at `kelvin` (1,000-40,000 K).

    Tanner Helland's fit to the CIE 1964 black-body colours, written out (eight lines) rather than pulling
    in a colour-science library for one curve.
    """
    t = float(np.clip(kelvin, 1000.0, 40000.0)) / 100.0
    if t <= 66:
        r = 255.0
        g = 99.4708025861 * np.log(t) - 161.1195681661
        b = 0.0 if t <= 19 else 138.5177312231 * np.log(t - 10) - 305.0447927307
    else:
        r = 329.698727446 * (t - 60) ** -0.1332047592
        g = 288.1221695283 * (t - 60) ** -0.0755148492
        b = 255.0
    rgb = np.clip(np.array([r, g, b], dtype=np.float64), 0.0, 255.0)
    rgb /= rgb.max()
    return (float(rgb[0]), float(rgb[1]), float(rgb[2]))


# Colour temperature of the wide style's light (K): from candle-warm tungsten to a cold overcast daylight;
# the usual light is a near-white tint (each channel 0.85-1.0).
WIDE_KELVIN = (2200.0, 9000.0)


def sample_wide_die_styles(rng: np.random.Generator, n: int) -> tuple[str, ...]:
    """Dice of the wide palette (`datasets.synth.wide`): one style for the set, sometimes a mix."""
    from datasets.synth.wide import WIDE_DIE_STYLES

    names = [s.name for s in WIDE_DIE_STYLES]
    if rng.random() < 0.8:
        return (str(rng.choice(names)),) * n
    return tuple(str(rng.choice(names)) for _ in range(n))


def sample_wide_lighting(rng: np.random.Generator) -> tuple[Lighting, float, str]:
    """Light of the wide style, its colour temperature (K) and its kind ("hard" or "soft").

    Wider than `sample_lighting` in colour (2,200-9,000 K against a near-white tint), direction (from 20
    degrees above the felt, against 35), intensity and hardness: a hard light is one strong lamp (little
    ambient light, strong diffuse and specular, always a shadow), a soft one a diffuse room light (much
    ambient light, little diffuse or specular, a shadow one time in three).
    """
    az = rng.uniform(0, 2 * np.pi)
    el = rng.uniform(np.radians(20), np.radians(89))
    direction = (float(np.cos(az) * np.cos(el)), float(np.sin(az) * np.cos(el)), float(np.sin(el)))
    kelvin = float(rng.uniform(*WIDE_KELVIN))
    tint = colour_temperature_rgb(kelvin)
    if rng.random() < 0.5:
        kind = "hard"
        light = Lighting(
            direction=direction,
            colour=tint,
            ambient=float(rng.uniform(0.2, 0.45)),
            diffuse=float(rng.uniform(0.6, 0.95)),
            specular=float(rng.uniform(0.3, 0.9)),
            shadow=True,
        )
    else:
        kind = "soft"
        light = Lighting(
            direction=direction,
            colour=tint,
            ambient=float(rng.uniform(0.7, 1.0)),
            diffuse=float(rng.uniform(0.05, 0.3)),
            specular=float(rng.uniform(0.0, 0.15)),
            shadow=bool(rng.random() < 1 / 3),
        )
    return light, kelvin, kind


def sample_wide_degradation(rng: np.random.Generator) -> Degradation:
    """The wide style's image: exposure 0.55-1.5 (usual 0.8-1.2), white balance off by up to 20 % a
    channel (usual 8 %), glare half the time (usual 30 %), defocus and camera shake more often and
    stronger, sensor noise sd 2-14 (usual 0.5-6), JPEG quality 35-95 (usual 60-95)."""
    cg = rng.uniform(0.8, 1.2, size=3)
    glare = None
    if rng.random() < 0.5:
        glare = (
            float(rng.uniform(0.1, 0.9)),
            float(rng.uniform(0.1, 0.9)),
            float(rng.uniform(0.05, 0.35)),
            float(rng.uniform(0.2, 0.9)),
        )
    return Degradation(
        gain=float(rng.uniform(0.55, 1.5)),
        channel_gain=(float(cg[0]), float(cg[1]), float(cg[2])),
        glare=glare,
        defocus_sigma_px=float(rng.uniform(0.4, 2.4)) if rng.random() < 0.5 else 0.0,
        motion_px=int(rng.integers(3, 14)) if rng.random() < 0.25 else 0,
        motion_angle_deg=float(rng.uniform(0, 180)),
        noise_sigma=float(rng.uniform(2.0, 14.0)),
        jpeg_quality=int(rng.integers(35, 96)),
    )


def sample_wide_chip_colour(rng: np.random.Generator) -> tuple[float, float, float, float]:
    """Any chip colour (the usual chips take one of six)."""
    c = rng.uniform(0.05, 0.95, size=3)
    return (float(c[0]), float(c[1]), float(c[2]), 1.0)


def degrade(image: ImageArray, deg: Degradation, rng: np.random.Generator) -> ImageArray:
    """Apply the degradations except JPEG (the writer encodes with `deg.jpeg_quality`).

    Done in uint8 with OpenCV's saturating arithmetic (about 4x faster than float numpy at 1280x960); the
    glare is computed on a 1/8 grid and upsampled (it is smooth), and the noise is a crop of a fixed bank at
    an offset drawn from the scene's stream, so the result stays a function of the scene.
    """
    g = deg.gain
    cg = deg.channel_gain
    gains = np.array([g * cg[0], g * cg[1], g * cg[2]], dtype=np.float32)
    lut = np.clip(np.arange(256, dtype=np.float32)[:, None] * gains + 0.5, 0, 255).astype(np.uint8)
    img = cv2.LUT(image, lut.reshape(256, 1, 3))
    h, w = img.shape[:2]
    if deg.glare is not None:
        gx, gy, gr, gs = deg.glare
        sh, sw = max(2, h // 8), max(2, w // 8)
        yy, xx = np.mgrid[0:sh, 0:sw].astype(np.float32)
        r2 = ((xx * w / sw - gx * w) ** 2 + (yy * h / sh - gy * h) ** 2) / (gr * max(w, h)) ** 2
        small = (255.0 * gs * np.exp(-r2)).astype(np.float32)
        glare = np.clip(cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR), 0, 255).astype(np.uint8)
        img = cv2.add(img, cv2.merge([glare, glare, glare]))
    if deg.defocus_sigma_px > 0:
        img = cv2.GaussianBlur(img, (0, 0), deg.defocus_sigma_px)
    if deg.motion_px > 1:
        img = cv2.filter2D(img, -1, motion_kernel(deg.motion_px, deg.motion_angle_deg))
    if deg.noise_sigma > 0:
        bank = _noise_bank(h, w)
        oy, ox = (int(v) for v in rng.integers(0, _NOISE_PAD, size=2))
        noise = bank[oy : oy + h, ox : ox + w]
        img = cv2.addWeighted(img, 1.0, noise, deg.noise_sigma / _NOISE_SD, 0.0, dtype=cv2.CV_8U)
    return np.asarray(img, dtype=np.uint8)


_NOISE_SD = 32.0
_NOISE_PAD = 97
_NOISE: dict[str, NDArray[np.int16]] = {}


def _noise_bank(h: int, w: int) -> NDArray[np.int16]:
    """Gaussian sensor noise (sd 32) drawn once per process, cropped at a random offset per image.

    Drawing 3.7 million normal numbers costs about 25 ms, a tenth of a scene; a crop of a fixed bank costs
    nothing and stays a function of the scene's stream.
    """
    bank = _NOISE.get("bank")
    if bank is None or bank.shape[0] < h + _NOISE_PAD or bank.shape[1] < w + _NOISE_PAD:
        hh = max(h, 960) + _NOISE_PAD
        ww = max(w, 1280) + _NOISE_PAD
        draw = np.random.default_rng(12345).standard_normal((hh, ww, 3), dtype=np.float32) * _NOISE_SD
        bank = np.clip(draw, -32000, 32000).astype(np.int16)
        _NOISE["bank"] = bank
    return bank


def encode_jpeg(image: ImageArray, quality: int) -> bytes:
    """JPEG bytes of a BGR image."""
    ok, buf = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError("OpenCV could not encode the image as JPEG")
    return bytes(buf.tobytes())
