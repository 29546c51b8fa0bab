"""A contact sheet: sample scenes with their ground truth drawn on, so a person can check labels by eye."""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from datasets.format import SceneTruth

ImageArray = NDArray[np.uint8]

_VERDICT_BGR = {"valid": (60, 200, 60), "invalid": (40, 40, 230), "void": (0, 200, 255)}


def annotate(image: ImageArray, truth: SceneTruth) -> ImageArray:
    """Draw each die's box (green; red when stacked/off table; orange when cocked), top quad, face."""
    out = image.copy()
    scale = max(out.shape[:2]) / 1280.0
    thick = max(1, round(2 * scale))
    for d in truth.dice:
        if not d.in_image:
            continue
        colour = (60, 220, 60)
        if d.cocked:
            colour = (0, 165, 255)
        if d.stacked or d.off_table:
            colour = (40, 40, 240)
        x0, y0, x1, y1 = (round(v) for v in d.box_xyxy)
        cv2.rectangle(out, (x0, y0), (x1, y1), colour, thick)
        quad = np.round(np.asarray(d.top_quad)).astype(np.int32)
        cv2.polylines(out, [quad], True, (255, 255, 0), max(1, thick - 1), cv2.LINE_AA)
        label = "?" if d.face is None else str(d.face)
        if d.kept:
            label += "k"
        cv2.putText(
            out,
            label,
            (x0, max(0, y0 - 4)),
            cv2.FONT_HERSHEY_SIMPLEX,
            0.8 * scale,
            colour,
            thick,
            cv2.LINE_AA,
        )
    banner = f"{truth.scenario}: {truth.verdict} {' '.join(truth.reasons)}"
    cv2.rectangle(out, (0, 0), (out.shape[1], round(34 * scale)), (0, 0, 0), -1)
    cv2.putText(
        out,
        banner,
        (8, round(25 * scale)),
        cv2.FONT_HERSHEY_SIMPLEX,
        0.8 * scale,
        _VERDICT_BGR[truth.verdict],
        thick,
        cv2.LINE_AA,
    )
    return out


def contact_sheet(
    items: list[tuple[ImageArray, SceneTruth]], *, cols: int = 3, tile_w: int = 640
) -> ImageArray:
    """Annotated scenes in a grid of `cols` columns, each tile `tile_w` px wide (4:3)."""
    if not items:
        raise ValueError("a contact sheet needs at least one scene")
    tile_h = tile_w * 3 // 4
    rows = (len(items) + cols - 1) // cols
    sheet = np.full((rows * tile_h, cols * tile_w, 3), 255, dtype=np.uint8)
    for i, (img, truth) in enumerate(items):
        ann = cv2.resize(annotate(img, truth), (tile_w, tile_h), interpolation=cv2.INTER_AREA)
        r, c = divmod(i, cols)
        sheet[r * tile_h : (r + 1) * tile_h, c * tile_w : (c + 1) * tile_w] = ann
    return sheet


def write_contact_sheet(root: Path, truths: list[SceneTruth], out: Path, *, cols: int = 3) -> Path:
    """Read the images of `truths` under `root`, draw them, write the sheet to `out`."""
    return write_contact_sheet_multi([(root, t) for t in truths], out, cols=cols)


def write_contact_sheet_multi(scenes: list[tuple[Path, SceneTruth]], out: Path, *, cols: int = 3) -> Path:
    """Like `write_contact_sheet`, each scene with its own data set root."""
    items = []
    for root, t in scenes:
        img = cv2.imread(str(root / t.image), cv2.IMREAD_COLOR)
        if img is None:
            raise FileNotFoundError(f"cannot read image {root / t.image}")
        items.append((np.asarray(img, dtype=np.uint8), t))
    out.parent.mkdir(parents=True, exist_ok=True)
    if not cv2.imwrite(str(out), contact_sheet(items, cols=cols)):
        raise OSError(f"cannot write {out}")
    return out
