"""How the reader holds up when a labelled photo is changed the way other cameras and rooms change it.

    throwbox lab stress DATASET [--split test] [--kinds smaller,defocus,...] [--json] [--plot PNG]
        [--sheet JPG]

The reader is to be judged on photos unlike any it has seen (other dice, other backgrounds, hand-held shots;
issue 4), and the real sets here are few. This measure takes each labelled photo of a set and reads it again
under one change at a time, at three strengths, each change made by OpenCV with the labels carried along:

`KINDS` below names each change, what it stands for and its levels: a smaller photo (a camera farther
off), defocus, camera shake, sensor noise, JPEG, too little and too much light, other colours (hue turned)
and a camera leaning from straight down (`tilt`: the photo's plane seen by a camera turned about the
horizontal axis, focal length the photo's long side, fitted back into the frame).

`tilt` warps a plane: it places and foreshortens the dice as a leaning camera would, but shows none of
their sides (the photo is flat). In-plane rotation is not a kind: the real photos already hold dice at every
turn, and a rotated label box no longer fits its die.

Every condition is scored as `throwbox lab eval` scores a set (`lab.evaluate.Tally`: detection recall and
precision at IoU >= 0.5, or the label's centre for top-face labels; faces; rolls read exactly and rolls read
valid that settle wrong), with the labelled number of dice as the expected count. The random draws (noise,
the shake's angle) come from `--seed`, the photo's place in the set and the strength (so each strength of a
shake has its own direction): a run is repeatable. A figure read
on a test split is a held-out figure: nothing may be tuned on it (tune on a train split).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.synth.blur import motion_kernel
from vision.types import ImageArray

Boxes = NDArray[np.float32]


@dataclass(frozen=True)
class Kind:
    """One kind of change: what it stands for, its unit and its three strengths, mildest first."""

    name: str
    stands_for: str
    unit: str
    levels: tuple[float, ...]


KINDS: tuple[Kind, ...] = (
    Kind("smaller", "a camera farther off: the photo scaled down", "scale", (0.75, 0.5, 0.35)),
    Kind("defocus", "a lens out of focus: Gaussian blur", "sigma px", (1.0, 2.0, 3.0)),
    Kind("shake", "a hand-held or knocked camera: motion blur", "length px", (5.0, 9.0, 15.0)),
    Kind("noise", "a small sensor in a dim room: Gaussian noise", "sigma grey levels", (8.0, 16.0, 32.0)),
    Kind("jpeg", "a compressed stream: JPEG", "quality", (40.0, 20.0, 10.0)),
    Kind("dim", "too little light: exposure", "times", (0.5, 0.3, 0.15)),
    Kind("glare", "too much light: exposure, clipped", "times", (1.5, 2.0, 3.0)),
    # OpenCV's 8-bit hue runs in 2-degree steps: 45 is turned by 44.
    Kind("hue", "other dice and felt colours: hue turned", "degrees", (45.0, 90.0, 180.0)),
    Kind("tilt", "a camera leaning from straight down (a plane warp)", "degrees", (15.0, 30.0, 45.0)),
)
KIND_NAMES: tuple[str, ...] = tuple(k.name for k in KINDS)


def kind_named(name: str) -> Kind:
    """The kind of that name; a ValueError naming the kinds there are otherwise."""
    for kind in KINDS:
        if kind.name == name:
            return kind
    raise ValueError(f"no change kind {name!r}; the kinds are {', '.join(KIND_NAMES)}")


def parse_kinds(text: str) -> tuple[Kind, ...]:
    """A comma-separated list of kind names (`all` for every kind), in the order given, each once."""
    names = [n.strip() for n in text.split(",") if n.strip()]
    if names == ["all"]:
        return KINDS
    if not names:
        raise ValueError("no change kind given")
    kinds = tuple(kind_named(n) for n in names)
    if len(set(names)) != len(names):
        raise ValueError(f"a change kind is named twice in {text!r}")
    return kinds


def _scale(image: ImageArray, boxes: Boxes, factor: float) -> tuple[ImageArray, Boxes]:
    h, w = image.shape[:2]
    size = (max(1, round(w * factor)), max(1, round(h * factor)))
    out = cv2.resize(image, size, interpolation=cv2.INTER_AREA if factor < 1 else cv2.INTER_LINEAR)
    sx, sy = size[0] / w, size[1] / h
    return np.asarray(out, np.uint8), (boxes * np.array([sx, sy, sx, sy], np.float32)).astype(np.float32)


def _exposure(image: ImageArray, times: float) -> ImageArray:
    return np.asarray(np.clip(image.astype(np.float32) * times + 0.5, 0, 255), np.uint8)


def _hue(image: ImageArray, degrees: float) -> ImageArray:
    hsv = cv2.cvtColor(image, cv2.COLOR_BGR2HSV)  # OpenCV's 8-bit hue runs 0..179 (2 degrees a step)
    hsv[..., 0] = ((hsv[..., 0].astype(np.int32) + round(degrees / 2.0)) % 180).astype(np.uint8)
    return np.asarray(cv2.cvtColor(hsv, cv2.COLOR_HSV2BGR), np.uint8)


def _jpeg(image: ImageArray, quality: float) -> ImageArray:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:
        raise RuntimeError("OpenCV could not encode the image as JPEG")
    return np.asarray(cv2.imdecode(data, cv2.IMREAD_COLOR), np.uint8)


def tilt_homography(width: int, height: int, degrees: float) -> NDArray[np.float64]:
    """The plane warp of a camera turned by `degrees` about the photo's horizontal axis (focal length the
    long side, centred), scaled and moved so the whole warped photo fits the same width and height."""
    f = float(max(width, height))
    k = np.array([[f, 0, width / 2.0], [0, f, height / 2.0], [0, 0, 1]], np.float64)
    a = -np.radians(degrees)  # the top of the photo leans away: its far side, drawn narrower
    r = np.array([[1, 0, 0], [0, np.cos(a), -np.sin(a)], [0, np.sin(a), np.cos(a)]], np.float64)
    h = k @ r @ np.linalg.inv(k)
    corners = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float64)
    warped = cv2.perspectiveTransform(corners[None], h)[0]
    lo, hi = warped.min(axis=0), warped.max(axis=0)
    fit = min(width / (hi[0] - lo[0]), height / (hi[1] - lo[1]))
    # Scale about the warped photo's corner, then centre it in the frame.
    offset = (np.array([width, height]) - fit * (hi - lo)) / 2.0 - fit * lo
    place = np.array([[fit, 0, offset[0]], [0, fit, offset[1]], [0, 0, 1]], np.float64)
    return np.asarray(place @ h, np.float64)


def warp_boxes(boxes: Boxes, homography: NDArray[np.float64]) -> Boxes:
    """Each xyxy box's four corners through the warp, and the box around them."""
    if len(boxes) == 0:
        return boxes.reshape(0, 4).astype(np.float32)
    x0, y0, x1, y1 = boxes[:, 0], boxes[:, 1], boxes[:, 2], boxes[:, 3]
    corners = np.stack(
        [np.stack([x0, y0], 1), np.stack([x1, y0], 1), np.stack([x1, y1], 1), np.stack([x0, y1], 1)], 1
    )
    moved = cv2.perspectiveTransform(corners.reshape(1, -1, 2).astype(np.float64), homography)[0].reshape(
        -1, 4, 2
    )
    return np.concatenate([moved.min(axis=1), moved.max(axis=1)], axis=1).astype(np.float32)


def _tilt(image: ImageArray, boxes: Boxes, degrees: float) -> tuple[ImageArray, Boxes]:
    h, w = image.shape[:2]
    homography = tilt_homography(w, h, degrees)
    # The frame outside the warped photo takes the photo's median colour (its felt or table), not black:
    # a hard black edge is nothing a leaning camera shows.
    fill = tuple(float(v) for v in np.median(image.reshape(-1, 3), axis=0))
    out = cv2.warpPerspective(image, homography, (w, h), flags=cv2.INTER_LINEAR, borderValue=fill)
    return np.asarray(out, np.uint8), warp_boxes(boxes, homography)


def change(
    image: ImageArray, boxes: Boxes, kind: str, level: float, rng: np.random.Generator
) -> tuple[ImageArray, Boxes]:
    """The photo under one change at one strength, and its label boxes where the change puts them."""
    boxes = np.asarray(boxes, np.float32).reshape(-1, 4)
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(f"a BGR uint8 image is needed, got {image.dtype} {image.shape}")
    if kind == "smaller":
        return _scale(image, boxes, level)
    if kind == "tilt":
        return _tilt(image, boxes, level)
    out: ImageArray
    if kind == "defocus":
        out = np.asarray(cv2.GaussianBlur(image, (0, 0), sigmaX=level), np.uint8)
    elif kind == "shake":
        kernel = motion_kernel(int(level), float(rng.uniform(0.0, 180.0)))
        out = np.asarray(cv2.filter2D(image, -1, kernel), np.uint8)
    elif kind == "noise":
        noise = rng.normal(0.0, level, image.shape).astype(np.float32)
        out = np.asarray(np.clip(image.astype(np.float32) + noise + 0.5, 0, 255), np.uint8)
    elif kind == "jpeg":
        out = _jpeg(image, level)
    elif kind in ("dim", "glare"):
        out = _exposure(image, level)
    elif kind == "hue":
        out = _hue(image, level)
    else:
        kind_named(kind)  # raises, naming the kinds
        raise AssertionError(kind)  # pragma: no cover - every named kind is handled above
    return out, boxes.copy()


def condition_rng(seed: int, image_index: int, kind: str, level_index: int) -> np.random.Generator:
    """The draws of one photo under one condition: the same on every run with the same seed."""
    return np.random.default_rng([seed, image_index, KIND_NAMES.index(kind), level_index])


def conditions(kinds: Iterable[Kind]) -> list[tuple[str, float, int]]:
    """(kind, level, level index) of every condition to read, the unchanged photos first ("none", 0, 0)."""
    out: list[tuple[str, float, int]] = [("none", 0.0, 0)]
    for kind in kinds:
        out += [(kind.name, level, i + 1) for i, level in enumerate(kind.levels)]
    return out


def headline(summary: dict[str, Any]) -> dict[str, Any]:
    """The figures of one condition that the table, the plot and the README quote, from `Tally.summary`."""
    faces, rolls = summary["face_accuracy_pct"], summary["rolls"]
    return {
        "images": summary["images"],
        "dice": summary["gt_dice"],
        "recall_pct": summary["detection"]["recall_pct"],
        "precision_pct": summary["detection"]["precision_pct"],
        "face_learned_of_matched_pct": faces["learned_of_matched"],
        "face_given_right_pct": faces["final_of_certain"],
        "uncertain_of_matched_pct": faces["uncertain_of_matched"],
        "rolls_exact_pct": rolls["exact_valid_pct"],
        "rolls_read_valid": rolls["read_valid"],
        "rolls_read_valid_settled_wrong": rolls["read_valid_settled_wrong"],
        "settled_wrong_images": rolls["settled_wrong_images"],
    }


def plot(report: dict[str, Any], path: Any) -> None:
    """One panel per kind: recall, precision, face accuracy (learned, of matched dice) and photos read
    exactly against the level, the unchanged photos at level 0."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["conditions"]
    base = next(r for r in rows if r["kind"] == "none")
    kinds = list(report["kinds"])
    cols = min(3, len(kinds)) or 1
    lines = -(-len(kinds) // cols) or 1
    fig, axes = plt.subplots(lines, cols, figsize=(4.2 * cols, 3.2 * lines), squeeze=False)
    series = (
        ("recall_pct", "dice found (recall)"),
        ("precision_pct", "boxes on a die (precision)"),
        ("face_learned_of_matched_pct", "faces right (learned, of found)"),
        ("rolls_exact_pct", "photos read exactly"),
    )
    for ax, kind in zip(axes.ravel(), kinds, strict=False):
        mine = [base] + [r for r in rows if r["kind"] == kind["name"]]
        xs = list(range(len(mine)))
        for key, label in series:
            ax.plot(
                xs, [r[key] if r[key] is not None else float("nan") for r in mine], marker="o", label=label
            )
        ax.set_xticks(xs, ["none"] + [f"{lv:g}" for lv in kind["levels"]])
        ax.set_title(f"{kind['name']} ({kind['unit']})", fontsize=10)
        ax.set_ylim(0, 102)
        ax.grid(alpha=0.3)
    for ax in axes.ravel()[len(kinds) :]:
        ax.axis("off")
    axes.ravel()[0].legend(fontsize=7, loc="lower left")
    fig.suptitle(
        f"{report['dataset_name']} ({report['split']}): the reader under changed photos", fontsize=11
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
