"""Measure enrollment on a dice style the face model never saw: enroll N of its labelled dice, read the rest.

    python -m lab.enroll_study MODEL.onnx [--dice 60] [--seed 0] [--synth DIR]

The style is matteop65's (white dice, black pips, a wooden desk, a webcam at an angle): MODEL must be trained
with `throwbox train faces --leave-out matteop65`. The N dice come from its train folder (balanced over the
faces, drawn by `--seed`); the figures are the classifier alone on every labelled die of its valid folder,
cut as the reader cuts them, with the shipped head and with the table's correction.

With `--synth DIR`, a rendered set of one dice style (`throwbox lab synth ... --die-style NAME`; MODEL trained
with `throwbox train faces --leave-out-style NAME`): the N dice are drawn from DIR's dice, and the figures are
on all the others of DIR. A model with no embedding output cannot be enrolled: its shipped head's figure
alone is given. The report also gives the enrollment's own cross-validated verdict on the N dice
(`vision.pips.enroll.Validation`): whether `throwbox enroll` would store it or refuse it (`stored_by_guard`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from models.data import SHARED_REAL, load_synth, load_yolo_folder
from models.train_faces import accuracy, labelled_crops
from vision.onnx_session import ModelSpec, OnnxModel, sha256_of
from vision.pips.enroll import EnrollDataError, enroll_table
from vision.pips.enrolled import EnrolledModel


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("onnx", type=Path)
    parser.add_argument("--dice", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--real", type=Path, default=SHARED_REAL)
    parser.add_argument("--synth", type=Path, default=None, help="A rendered set of one dice style.")
    args = parser.parse_args()
    spec = ModelSpec(
        name="pips",
        file=args.onnx.name,
        sha256=sha256_of(args.onnx),
        version="study",
        input_size_hw=(64, 64),
        labels=tuple("123456"),
    )
    model = OnnxModel(spec, models_dir=args.onnx.parent)
    rng = np.random.default_rng(args.seed)
    per_face = args.dice // 6
    if args.synth is not None:
        crops, faces = labelled_crops(load_synth(args.synth))
        chosen = np.concatenate(
            [rng.permutation(np.flatnonzero(faces == f))[:per_face] for f in range(1, 7)]
        ).tolist()
        rest = sorted(set(range(len(crops))) - set(chosen))
        test_crops, test_faces = [crops[i] for i in rest], faces[rest]
        where = f"{args.synth.name} (the {len(rest)} dice not enrolled)"
    else:
        root = args.real / "d6-webcam-matteop65"
        crops, faces = labelled_crops(load_yolo_folder(root / "train", box_kind="top"))
        chosen = np.concatenate(
            [rng.permutation(np.flatnonzero(faces == f))[:per_face] for f in range(1, 7)]
        ).tolist()
        test_crops, test_faces = labelled_crops(load_yolo_folder(root / "valid", box_kind="top"))
        where = "matteop65 valid"
    report: dict[str, object] = {
        "model": spec.tag,
        "sha256": spec.sha256,
        "seed": args.seed,
        "test_set": where,
        "shipped_head": accuracy(lambda b: model.run(b)[0], test_crops, test_faces),
    }
    try:
        result = enroll_table(model, "study", [(crops[i], int(faces[i])) for i in chosen])
    except EnrollDataError as exc:
        report["enrolled"] = f"not enrolled: {exc}"
    else:
        enrolled = EnrolledModel(model, result.enrollment)
        report["enrolled_dice"] = result.dice
        report["enroll_seconds"] = round(result.seconds, 2)
        report["enrolled"] = accuracy(lambda b: enrolled.run(b)[0], test_crops, test_faces)
        report["cross_validated"] = result.validation.document()
        report["stored_by_guard"] = result.validation.helps
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
