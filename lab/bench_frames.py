"""The benchmark frames: 1280x960, each with 10 real dice cut from the committed fixture photos on a felt.

`throwbox lab bench` times the reader on them and `python -m lab.quantize --time` feeds the models what
the reader feeds them for one; here, not in the command line, so a training-side tool need not import it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from models.data import DatasetError

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "vision" / "fixtures"


def bench_frames(n: int, *, seed: int = 0) -> list[NDArray[np.uint8]]:
    """`n` 1280x960 frames, each with 10 real dice (cut from the committed fixtures) on a random felt.

    Raises:
        DatasetError: a fixture photo is unreadable or there are none.
    """
    import cv2

    from models.augment import paste_dice, random_background
    from models.data import load_yolo_folder

    items = load_yolo_folder(FIXTURES, box_kind="die")
    patches: list[tuple[NDArray[np.uint8], int]] = []
    for it in items:
        img = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if img is None:
            raise DatasetError(f"unreadable fixture {it.path}")
        for b, f in zip(it.boxes_xyxy, it.faces, strict=True):
            x0, y0, x1, y1 = (round(float(v)) for v in b)
            patches.append((np.asarray(img[y0:y1, x0:x1], np.uint8).copy(), int(f)))
    if not patches:
        raise DatasetError(f"no fixture dice in {FIXTURES}")
    rng = np.random.default_rng(seed)
    frames = []
    for _ in range(n):
        while True:
            picks = [patches[int(i)] for i in rng.integers(0, len(patches), size=10)]
            frame, boxes, _ = paste_dice(
                random_background(960, 1280, rng), picks, rng, size_range_px=(50, 80)
            )
            if len(boxes) == 10:
                frames.append(frame)
                break
    return frames
