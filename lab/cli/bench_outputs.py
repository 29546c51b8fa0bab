"""`throwbox lab bench --outputs FILE` / `--check-against FILE`: proof a speed change did not change a read.

`write_outputs` reads a fixed set of images (the benchmark frames, the committed fixture photos, and any
labelled dataset given) and writes one JSON line per image: the reader's JSON document without its timings,
plus the unrounded floats (boxes, quads, scores, face probabilities, die-state confidence, tilt). Run it
before a change; after it, `compare_outputs` re-reads the very same images and sorts each into:

- identical: the document and every unrounded float are equal;
- within tolerance: verdict, finding codes and their dice, every die's face, pip count, state, cocked /
  stacked / off-table flags and uncertainty are equal, every box has IoU >= `MIN_BOX_IOU` with its old
  one and no probability moved by more than `MAX_PROB_DIFF` (float rounding from a different order of
  operations);
- changed: anything else (a different reading).

The reference records the model tags: comparing reads made with other weights is refused (it would
measure the weights, not the code).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MIN_BOX_IOU = 0.99
MAX_PROB_DIFF = 1e-3
BENCH_PREFIX = "bench-frame:"
REPO = Path(__file__).resolve().parent.parent.parent
FIXTURE_DIRS = (REPO / "tests" / "vision" / "fixtures", REPO / "tests" / "vision" / "fixtures" / "judge")
BENCH_FRAMES = 10


class OutputsError(Exception):
    """The reference file is missing, malformed, or was written with other model weights."""


@dataclass
class Comparison:
    """How the new reads compare with the reference, image by image."""

    images: int = 0
    identical: int = 0
    within_tolerance: int = 0
    changed: list[dict[str, Any]] = field(default_factory=list)
    min_box_iou: float = 1.0
    max_prob_diff: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready summary (the first 20 changed images with what changed)."""
        return {
            "images": self.images,
            "identical": self.identical,
            "within_tolerance": self.within_tolerance,
            "changed": len(self.changed),
            "min_box_iou": round(self.min_box_iou, 6),
            "max_prob_diff": self.max_prob_diff,
            "tolerance": {"min_box_iou": MIN_BOX_IOU, "max_prob_diff": MAX_PROB_DIFF},
            "changed_images": self.changed[:20],
        }


def image_name(path: Path) -> str:
    """How a reference names an image file: relative to the repository (`../shared/...` for shared data)."""
    return os.path.relpath(path.resolve(), REPO)


def image_path(name: str) -> Path:
    """The file a reference's image name stands for (names are relative to the repository)."""
    return REPO / name


def default_images() -> list[str]:
    """The benchmark frames (by index; regenerated from seed 0) and the committed fixture photos."""
    names = [f"{BENCH_PREFIX}{i}" for i in range(BENCH_FRAMES)]
    for folder in FIXTURE_DIRS:
        names += [image_name(p) for p in sorted(folder.glob("*.jpg"))]
    return names


def dataset_images(dataset: Path, *, split: str, limit: int) -> list[str]:
    """The image paths of a labelled dataset (nellbyler, YOLO folder or synthetic scenes), first `limit`."""
    from models.data import load_dataset

    items = load_dataset(dataset, split=split)
    if limit:
        items = items[:limit]
    return [image_name(it.path) for it in items]


def _images(names: list[str]) -> Iterator[tuple[str, Any]]:
    from lab.cli.bench import bench_frames
    from vision.image import load_image

    frames = bench_frames(BENCH_FRAMES) if any(n.startswith(BENCH_PREFIX) for n in names) else []
    for name in names:
        if name.startswith(BENCH_PREFIX):
            yield name, frames[int(name.removeprefix(BENCH_PREFIX))]
        else:
            yield name, load_image(image_path(name))


def _document(roll: Any) -> dict[str, Any]:
    from api.read_document import read_document

    doc: dict[str, Any] = read_document(roll)
    doc.pop("timing_ms")
    doc["raw"] = {
        "box_xyxy": [list(d.candidate.box_xyxy) for d in roll.dice],
        "top_quad": [[list(p) for p in d.candidate.top_quad] for d in roll.dice],
        "score": [d.candidate.score for d in roll.dice],
        "face_probs": [list(d.face_probs) for d in roll.dice],
        "state_confidence": [d.state_confidence for d in roll.dice],
        "tilt_deg": [d.tilt_deg for d in roll.dice],
    }
    return doc


def read_documents(names: list[str], *, reader: Any) -> Iterator[dict[str, Any]]:
    """One document per image name, in order: the reader's JSON without timings, plus unrounded floats."""
    from vision.types import Frame

    for name, image in _images(names):
        roll = reader.read(Frame(image=image, frame_id=Path(name).name))
        yield {"image": name, **_document(roll)}


def load_reference(path: Path) -> list[dict[str, Any]]:
    """The documents of a reference file written by `throwbox lab bench --outputs`."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as exc:
        raise OutputsError(f"cannot read reference {path}: {exc.strerror or exc}") from exc
    docs = []
    for no, line in enumerate(lines, start=1):
        try:
            doc = json.loads(line)
        except json.JSONDecodeError as exc:
            raise OutputsError(f"{path}:{no}: not a JSON line ({exc.msg})") from exc
        if not isinstance(doc, dict) or "image" not in doc or "raw" not in doc or "models" not in doc:
            raise OutputsError(f"{path}:{no}: not a document written by `throwbox lab bench --outputs`")
        docs.append(doc)
    if not docs:
        raise OutputsError(f"reference {path} is empty")
    return docs


def box_iou(a: list[float], b: list[float]) -> float:
    """IoU of two xyxy boxes (0 when they do not overlap)."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


_DIE_KEYS = ("face", "pip_count", "uncertain", "state", "cocked", "stacked", "off_table", "layout_box")


def _what_changed(old: dict[str, Any], new: dict[str, Any]) -> tuple[list[str], float, float]:
    """Differences that are more than float rounding, the smallest box IoU and the largest prob change."""
    what: list[str] = []
    if old["verdict"] != new["verdict"]:
        what.append(f"verdict {old['verdict']} -> {new['verdict']}")
    codes_old = [(f["verdict"], f["reason"], f["dice"]) for f in old["findings"]]
    codes_new = [(f["verdict"], f["reason"], f["dice"]) for f in new["findings"]]
    if codes_old != codes_new:
        what.append(f"findings {codes_old} -> {codes_new}")
    if len(old["dice"]) != len(new["dice"]):
        what.append(f"{len(old['dice'])} dice -> {len(new['dice'])}")
        return what, 0.0, 1.0
    min_iou, max_diff = 1.0, 0.0
    for i, (d_old, d_new) in enumerate(zip(old["dice"], new["dice"], strict=True)):
        for key in _DIE_KEYS:
            if d_old.get(key) != d_new.get(key):
                what.append(f"die {i + 1} {key} {d_old.get(key)} -> {d_new.get(key)}")
        min_iou = min(min_iou, box_iou(old["raw"]["box_xyxy"][i], new["raw"]["box_xyxy"][i]))
        probs = list(zip(old["raw"]["face_probs"][i], new["raw"]["face_probs"][i], strict=True))
        for key in ("score", "state_confidence"):
            a, b = old["raw"][key][i], new["raw"][key][i]
            if a is not None and b is not None:
                probs.append((a, b))
            elif a != b:
                what.append(f"die {i + 1} {key} {a} -> {b}")
        max_diff = max([max_diff, *(abs(a - b) for a, b in probs)])
    if min_iou < MIN_BOX_IOU:
        what.append(f"box IoU {min_iou:.4f} < {MIN_BOX_IOU}")
    if max_diff > MAX_PROB_DIFF:
        what.append(f"a probability moved by {max_diff:.2e} > {MAX_PROB_DIFF}")
    return what, min_iou, max_diff


def compare_outputs(reference: list[dict[str, Any]], *, reader: Any) -> Comparison:
    """Re-read every image of the reference with `reader` and compare document by document.

    Raises:
        OutputsError: the reference was written with other model weights than `reader` runs, or
            names an image file that is not here.
    """
    models_old = reference[0]["models"]
    if models_old != reader.models:
        raise OutputsError(
            f"the reference was read with models {models_old}, this reader runs {reader.models}: "
            "pin the reference's weights with --manifest"
        )
    names = [str(doc["image"]) for doc in reference]
    missing = [n for n in names if not n.startswith(BENCH_PREFIX) and not image_path(n).is_file()]
    if missing:
        raise OutputsError(f"{len(missing)} image(s) of the reference are not here, e.g. {missing[0]}")
    result = Comparison()
    for old, new in zip(reference, read_documents(names, reader=reader), strict=True):
        result.images += 1
        if old == json.loads(json.dumps(new)):
            result.identical += 1
            continue
        what, iou, diff = _what_changed(old, new)
        result.min_box_iou = min(result.min_box_iou, iou)
        result.max_prob_diff = max(result.max_prob_diff, diff)
        if what:
            result.changed.append({"image": old["image"], "what": what})
        else:
            result.within_tolerance += 1
    return result
