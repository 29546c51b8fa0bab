"""Augmentation and domain randomisation shared by the training scripts (numpy + OpenCV, no torch).

The reader is judged on dice and backgrounds it has never seen (translucent casino dice on felt, trays,
hand-held shots), so training images are pushed far from the one real set: random scale, flips and quarter
turns, hue rotation, colour inversion, grey, blur, noise, JPEG, and dice pasted onto random textured
backgrounds (felt-like, wood-like, gradients, noise) with soft shadows.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.synth.blur import motion_kernel

U8 = NDArray[np.uint8]
Boxes = NDArray[np.float32]


def photometric(img: U8, rng: np.random.Generator, *, strong: bool = True) -> U8:
    """Colour, contrast, blur, noise and JPEG changes; geometry untouched."""
    out: NDArray[Any] = img
    if rng.random() < 0.8:
        hsv = cv2.cvtColor(out, cv2.COLOR_BGR2HSV).astype(np.int16)
        if rng.random() < (0.5 if strong else 0.2):
            hsv[..., 0] = (hsv[..., 0] + int(rng.integers(0, 180))) % 180
        hsv[..., 1] = np.clip(hsv[..., 1] * rng.uniform(0.5, 1.5), 0, 255)
        hsv[..., 2] = np.clip(hsv[..., 2] * rng.uniform(0.6, 1.4) + rng.uniform(-30, 30), 0, 255)
        out = cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2BGR)
    if rng.random() < 0.3:
        out = out[:, :, rng.permutation(3)]
    if rng.random() < 0.1:
        out = cv2.cvtColor(cv2.cvtColor(out, cv2.COLOR_BGR2GRAY), cv2.COLOR_GRAY2BGR)
    if strong and rng.random() < 0.05:
        out = 255 - out
    f: NDArray[Any] = out.astype(np.float32)
    if rng.random() < 0.5:  # contrast / gamma
        f = np.clip((f - 128) * rng.uniform(0.6, 1.4) + 128, 0, 255)
        f = 255 * (f / 255) ** rng.uniform(0.7, 1.4)
    if rng.random() < 0.3:  # colour cast (tungsten, daylight, green felt bounce)
        f = f * rng.uniform(0.75, 1.25, size=3)
    if rng.random() < 0.3:
        f = f + rng.normal(0, rng.uniform(2, 12), size=f.shape)
    out = np.clip(f, 0, 255).astype(np.uint8)
    if rng.random() < 0.3:
        k = int(rng.choice([3, 5]))
        out = cv2.GaussianBlur(out, (k, k), 0)
    if rng.random() < 0.1:  # motion blur
        k = int(rng.integers(3, 8))
        kernel = np.zeros((k, k), np.float32)
        kernel[k // 2, :] = 1.0 / k
        m = cv2.getRotationMatrix2D((k / 2 - 0.5, k / 2 - 0.5), float(rng.uniform(0, 180)), 1.0)
        out = cv2.filter2D(out, -1, cv2.warpAffine(kernel, m, (k, k)))
    if rng.random() < 0.3:
        ok, enc = cv2.imencode(".jpg", out, [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(30, 90))])
        decoded = cv2.imdecode(enc, cv2.IMREAD_COLOR) if ok else None
        if decoded is not None:
            out = decoded
    return np.asarray(out, np.uint8)


# Camera shake as the generator draws it (datasets.synth.randomise.sample_degradation): a line of 3-9 px
# over frames whose dice are about 20-45 px across, so 0.07-0.45 of a die's side; defocus of sigma 0.4-1.6
# px (about 0.02-0.08 of a side) on a third of them. Set against the die's size in the crop, so a die cut
# from a large photo is smeared as much as a small one in a 640x480 frame.
SHAKE_OF_SIDE = (0.07, 0.45)
DEFOCUS_OF_SIDE = (0.02, 0.08)


def camera_shake(img: U8, die_px: float, rng: np.random.Generator) -> U8:
    """Blur a die crop as a shaken (and sometimes defocused) camera does, scaled to the die's side in it
    (`die_px`); the direction is random. Colour and geometry are left as they are."""
    out: NDArray[Any] = img
    if rng.random() < 0.35:
        out = cv2.GaussianBlur(out, (0, 0), max(0.3, die_px * float(rng.uniform(*DEFOCUS_OF_SIDE))))
    length = max(2, round(die_px * float(rng.uniform(*SHAKE_OF_SIDE))))
    out = cv2.filter2D(out, -1, motion_kernel(length, float(rng.uniform(0, 180))))
    return np.asarray(out, np.uint8)


# A camera's light beyond `photometric`: the exposure times 0.2-1.7 (log-uniform; clipped where it
# saturates), then sensor noise: read noise of 0-20 grey levels and shot noise growing with the light. The
# range is throwbox lab stress's "dim", "glare" and "noise" changes at their mild and middle strengths, where
# the detector's precision fell (docs/history/reader.md, detector stage 11). Half the draws are grey noise
# (the same in each channel), half colour noise, as sensors and their JPEG streams give.
CAMERA_GAIN = (0.2, 1.7)
CAMERA_READ_NOISE = (0.0, 20.0)
CAMERA_SHOT_NOISE = (0.0, 1.2)


def camera_light(img: U8, rng: np.random.Generator) -> U8:
    """A camera's exposure and sensor noise (see CAMERA_GAIN): geometry untouched."""
    f = img.astype(np.float32) * float(np.exp(rng.uniform(np.log(CAMERA_GAIN[0]), np.log(CAMERA_GAIN[1]))))
    f = np.minimum(f, 255.0)
    read = float(rng.uniform(*CAMERA_READ_NOISE))
    shot = float(rng.uniform(*CAMERA_SHOT_NOISE))
    shape = (*f.shape[:2], 1) if rng.random() < 0.5 else f.shape
    noise = rng.standard_normal(shape).astype(np.float32)
    f = f + noise * np.sqrt(read * read + shot * f)
    return np.asarray(np.clip(f + 0.5, 0, 255), np.uint8)


def random_background(h: int, w: int, rng: np.random.Generator) -> U8:
    """A random surface: felt, wood-ish stripes, gradients, blotches and fine noise."""
    palette = [
        (40, 110, 30),  # green felt (BGR)
        (30, 30, 140),  # red felt
        (120, 60, 20),  # blue felt
        (40, 80, 140),  # wood
        (70, 120, 180),  # light wood
        (30, 30, 30),  # black
        (200, 200, 200),  # grey/white
        (90, 90, 90),
    ]
    if rng.random() < 0.7:
        base: NDArray[Any] = np.array(palette[int(rng.integers(len(palette)))], np.float32)
        base = base * rng.uniform(0.6, 1.4) + rng.uniform(-25, 25, size=3)
    else:
        base = rng.uniform(0, 255, size=3).astype(np.float32)
    img: NDArray[Any] = np.empty((h, w, 3), np.float32)
    img[:] = base
    # Low-frequency blotches (uneven light, felt texture at scale).
    small = rng.normal(0, 1, size=(int(rng.integers(2, 8)), int(rng.integers(2, 8)), 3)).astype(np.float32)
    img += cv2.resize(small, (w, h), interpolation=cv2.INTER_CUBIC) * rng.uniform(3, 25)
    if rng.random() < 0.4:  # wood-like stripes
        freq = rng.uniform(0.02, 0.2)
        yy = np.arange(h, dtype=np.float32)[:, None] + rng.uniform(0, 20) * np.sin(
            np.arange(w, dtype=np.float32)[None, :] * rng.uniform(0.005, 0.03)
        )
        img += (np.sin(yy * freq)[..., None] * rng.uniform(5, 25)).astype(np.float32)
        if rng.random() < 0.5:
            img = np.ascontiguousarray(np.rot90(img)) if h == w else img
    if rng.random() < 0.5:  # linear light gradient
        gx, gy = rng.uniform(-1, 1, size=2)
        ramp = (np.arange(w)[None, :] * gx / w + np.arange(h)[:, None] * gy / h).astype(np.float32)
        img += ramp[..., None] * rng.uniform(10, 60)
    img += rng.normal(0, rng.uniform(1, 10), size=img.shape).astype(np.float32)  # fibres / sensor noise
    return np.asarray(np.clip(img, 0, 255), np.uint8)


def paste_dice(
    background: U8,
    patches: list[tuple[U8, int]],
    rng: np.random.Generator,
    *,
    size_range_px: tuple[float, float],
) -> tuple[U8, Boxes, NDArray[np.int64]]:
    """Paste die patches (image, face) onto `background` without overlap; return image, boxes, faces."""
    out = background.copy()
    h, w = out.shape[:2]
    boxes: list[list[float]] = []
    faces: list[int] = []
    occupied = np.zeros((h, w), bool)
    for patch, face in patches:
        size = float(np.exp(rng.uniform(np.log(size_range_px[0]), np.log(size_range_px[1]))))
        ph, pw = patch.shape[:2]
        sc = size / max(ph, pw)
        nw, nh = max(4, round(pw * sc)), max(4, round(ph * sc))
        if nw >= w - 2 or nh >= h - 2:
            continue
        p = cv2.resize(patch, (nw, nh), interpolation=cv2.INTER_AREA if sc < 1 else cv2.INTER_LINEAR)
        k = int(rng.integers(4))
        p = np.ascontiguousarray(np.rot90(p, k))
        nh, nw = p.shape[:2]
        for _ in range(10):
            x = int(rng.integers(0, w - nw))
            y = int(rng.integers(0, h - nh))
            if not occupied[max(0, y - 2) : y + nh + 2, max(0, x - 2) : x + nw + 2].any():
                break
        else:
            continue
        occupied[y : y + nh, x : x + nw] = True
        # Soft shadow down-right, then the die with feathered corners (dice are rounded).
        if rng.random() < 0.6:
            sh = max(1, int(0.12 * nw))
            y2, x2 = min(h, y + nh + sh), min(w, x + nw + sh)
            region = out[y + sh : y2, x + sh : x2].astype(np.float32)
            out[y + sh : y2, x + sh : x2] = (region * rng.uniform(0.5, 0.85)).astype(np.uint8)
        mask = np.zeros((nh, nw), np.float32)
        r = max(1, int(0.18 * min(nw, nh)))
        cv2.rectangle(mask, (r // 2, r // 2), (nw - 1 - r // 2, nh - 1 - r // 2), 1.0, thickness=-1)
        mask = cv2.GaussianBlur(mask, (0, 0), max(0.5, r / 2.5))[..., None]
        region = out[y : y + nh, x : x + nw].astype(np.float32)
        out[y : y + nh, x : x + nw] = (mask * p + (1 - mask) * region).astype(np.uint8)
        boxes.append([x, y, x + nw, y + nh])
        faces.append(face)
    return out, np.asarray(boxes, np.float32).reshape(-1, 4), np.asarray(faces, np.int64)


def flip_rotate(img: U8, boxes: Boxes, rng: np.random.Generator) -> tuple[U8, Boxes]:
    """Random horizontal/vertical flips and a transpose (the 8 symmetries of the square)."""
    h, w = img.shape[:2]
    b = boxes.copy()
    if rng.random() < 0.5:
        img = img[:, ::-1]
        b[:, [0, 2]] = w - b[:, [2, 0]]
    if rng.random() < 0.5:
        img = img[::-1]
        b[:, [1, 3]] = h - b[:, [3, 1]]
    if rng.random() < 0.5:
        img = img.transpose(1, 0, 2)
        b = b[:, [1, 0, 3, 2]]
    return np.ascontiguousarray(img), b
