"""Label corrections read by `throwbox lab eval --label-overrides FILE`, never written into a data set.

A data set's own labels stay as they are (../shared is read-only, and a newcomer's clone has the set as
published). Where a label is judged wrong by eye, the correction is a committed JSON file, a list of:

    {"image": "IMG_20191209_095555.jpg", "die": 6, "labelled": 5, "face": 6, "why": "..."}

`die` is the die's place (1-based) among that image's labelled dice, in label-file order; `labelled` must be
the face the set gives it (a file that no longer matches its set is refused, not half applied).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from models.data import LabelledImage


class LabelOverrideError(ValueError):
    """The overrides file is unreadable, or names a die its data set does not have as written."""


@dataclasses.dataclass(frozen=True)
class LabelOverride:
    image: str
    die: int  # 1-based, label-file order
    labelled: int
    face: int
    why: str = ""


def read_overrides(path: Path) -> list[LabelOverride]:
    """The corrections in `path`; a `LabelOverrideError` where it is not a list of them."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise LabelOverrideError(f"{path}: {exc}") from exc
    if not isinstance(raw, list):
        raise LabelOverrideError(f"{path}: a JSON list of corrections expected")
    out = []
    for n, entry in enumerate(raw, start=1):
        try:
            o = LabelOverride(
                image=str(entry["image"]),
                die=int(entry["die"]),
                labelled=int(entry["labelled"]),
                face=int(entry["face"]),
                why=str(entry.get("why", "")),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise LabelOverrideError(f"{path}: entry {n}: {exc!r}") from exc
        if o.die < 1 or not (1 <= o.labelled <= 6 and 1 <= o.face <= 6):
            raise LabelOverrideError(f"{path}: entry {n}: die from 1, faces 1..6")
        out.append(o)
    return out


def apply_overrides(
    items: Sequence[LabelledImage], overrides: Sequence[LabelOverride]
) -> list[LabelledImage]:
    """`items` with the corrected faces (new objects; the others as they were). Every correction must
    find its die with the face it names as labelled, in an image of `items`."""
    by_name = {it.path.name: i for i, it in enumerate(items)}
    out = list(items)
    for o in overrides:
        if o.image not in by_name:
            raise LabelOverrideError(f"{o.image}: not an image of this set (or split)")
        item = out[by_name[o.image]]
        if o.die > len(item.faces):
            raise LabelOverrideError(f"{o.image}: has {len(item.faces)} labelled dice, not {o.die}")
        if int(item.faces[o.die - 1]) != o.labelled:
            raise LabelOverrideError(
                f"{o.image}: die {o.die} is labelled {int(item.faces[o.die - 1])}, not {o.labelled}"
            )
        faces = np.array(item.faces, copy=True)
        faces[o.die - 1] = o.face
        out[by_name[o.image]] = dataclasses.replace(item, faces=faces)
    return out
