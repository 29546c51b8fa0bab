"""Read a labelled set once into risk records (lab/risk.py): the reader with its sure bar at 0.

The I/O half of `throwbox lab risk`: the reader is built from a manifest with the judge's `min_confidence`
at 0 and the manifest's sure bar set aside (its temperature kept), and every image read once; the detections
are matched to the labels as `throwbox lab eval` matches them (lab/evaluate.py), then loosely (`_truths`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from lab.evaluate import match
from lab.risk import DieRecord, RollRecord
from models.data import LabelledImage
from vision.judge.validity import ValidityConfig
from vision.onnx_session import MANIFEST_PATH, load_manifest
from vision.reader import Reader, ReaderConfig


@dataclass(frozen=True)
class ReaderOptions:
    """What reader is read (READER_OPTS of `throwbox lab risk`)."""

    manifest: Path = MANIFEST_PATH
    turns_check: bool = False  # read the eight turns of every crop (the record's `turns_agree`)
    threads: int = 1


def shipped_bar(options: ReaderOptions) -> float:
    """The sure bar this reader gives faces at: the manifest's face model's `sure_bar`, else the judge's."""
    bar = load_manifest(options.manifest)["pips"].sure_bar
    return ValidityConfig().min_confidence if bar is None else bar


def open_reader(options: ReaderOptions) -> Reader:
    """The reader with its bar at 0 (every bar is swept afterwards), its calibration's temperature kept."""
    spec = load_manifest(options.manifest)["pips"]
    config = ReaderConfig(
        # The bar at 0 and no second opinion heeded: each is a filter over the records (lab/risk.py).
        validity=replace(
            ValidityConfig(),
            min_confidence=0.0,
            require_turns_agree=False,
            require_pip_agree=False,
            require_whole_die=False,
            require_peer_agree=False,
            require_apart=False,
        ),
        turns_check=options.turns_check,
        manifest_calibration=False,
    )
    reader = Reader(threads=options.threads, config=config, manifest_path=options.manifest)
    if spec.temperature is not None:  # the temperature, without the manifest's bar
        reader.faces.temperature = spec.temperature
    return reader  # a second face model (`pips_peer`) is read at its own temperature, its bar swept too


def unscored_dice(path: Path) -> dict[str, NDArray[np.float32]]:
    """A rendered set's dice in the picture that its labels do not score, by image name (boxes xyxy): dice
    under 30 % visible (`models.data.load_synth` leaves them out) and dice with no face by the rules (off the
    table, void). A detection on one of them is a die, not a box where there is no die, and is not scored.
    Empty for photos (every die in them is labelled)."""
    from datasets import loaders

    if not (path / "labels").is_dir():
        return {}
    out = {}
    for scene in loaders.load_synth(path, min_visible=0.0):
        left = [d.box_xyxy for d in scene.dice if d.visible_fraction < 0.3 or d.face is None]
        if left:
            out[scene.image_path.name] = np.asarray(left, np.float32).reshape(-1, 4)
    return out


def _truths(
    pred: NDArray[np.float32], scores: NDArray[np.float32], gt: NDArray[np.float32], *, box_kind: str
) -> dict[int, int]:
    """Detection index -> labelled die index: `throwbox lab eval`'s matching, then, among the detections
    and dice left, a label's centre inside a detection (a die boxed loosely is still a die, not a box where
    there is no die)."""
    pairs = dict(match(pred, scores, gt, box_kind=box_kind))
    if box_kind == "top":
        return pairs
    free_p = [p for p in range(len(pred)) if p not in pairs]
    free_g = [g for g in range(len(gt)) if g not in pairs.values()]
    if free_p and free_g:
        loose = match(pred[free_p], scores[free_p], gt[free_g], box_kind="top")
        pairs.update({free_p[p]: free_g[g] for p, g in loose})
    return pairs


def read_records(
    reader: Reader,
    items: Sequence[LabelledImage],
    *,
    calibrated: bool = False,
    unscored: Mapping[str, NDArray[np.float32]] | None = None,
    progress: Callable[[Sequence[LabelledImage]], Iterable[LabelledImage]] = lambda xs: xs,
) -> tuple[list[DieRecord], list[RollRecord], int]:
    """Each image read once: its die records, its roll record, and the count of labelled dice. A detection
    matched to no labelled die but to one of `unscored` (`unscored_dice`) gets `truth` 0: not scored."""
    from calibration.layout import ThrowBoxLayout
    from vision.image import load_image
    from vision.table.geometry import TableGeometry
    from vision.types import Frame

    layout = ThrowBoxLayout()
    dice: list[DieRecord] = []
    rolls: list[RollRecord] = []
    labelled = 0
    for item in progress(items):
        image = load_image(item.path)
        geometry = TableGeometry(camera=item.camera, layout=layout) if calibrated and item.camera else None
        expected = len(item.faces) or None
        roll = reader.read(
            Frame(image=image, frame_id=item.path.name), expected_dice=expected, geometry=geometry
        )
        pred = np.array([d.candidate.box_xyxy for d in roll.dice], np.float32).reshape(-1, 4)
        scores = np.array([d.candidate.score for d in roll.dice], np.float32)
        truth_of = _truths(pred, scores, item.boxes_xyxy, box_kind=item.box_kind)
        free = [i for i in range(len(pred)) if i not in truth_of]
        others = (unscored or {}).get(item.path.name)
        on_other = set()
        if free and others is not None and len(others):
            on_other = {free[p] for p, _ in _truths(pred[free], scores[free], others, box_kind="die").items()}
        first = len(dice)
        for i, d in enumerate(roll.dice):
            g = truth_of.get(i)
            truth = 0 if i in on_other else (None if g is None else int(item.faces[g]))
            dice.append(
                DieRecord(
                    image=item.path.name,
                    truth=truth,
                    face=d.face,
                    confidence=round(d.confidence, 6),
                    turns_agree=d.turns_agree,
                    pip_count=d.pip_count,
                    whole_die=d.whole_die,
                    peer_face=d.peer_face,
                    peer_confidence=None if d.peer_confidence is None else round(d.peer_confidence, 6),
                    overlap=None if d.overlap is None else round(d.overlap, 4),
                )
            )
        labelled += len(item.faces)
        rolls.append(
            RollRecord(
                image=item.path.name,
                labelled_faces=tuple(int(f) for f in item.faces),
                valid=roll.verdict.value == "valid",
                dice=tuple(range(first, len(dice))),
            )
        )
    return dice, rolls, labelled
