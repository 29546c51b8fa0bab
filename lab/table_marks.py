"""How well a table mark tells the empty box from a die lying there: the figures `min_mark_likeness` rests on.

    .venv/bin/python -m lab.table_marks [--offsets-mm 0,5,10,15,20] [--faces 1,6] [--seed 5]

The calibration selftest's table (`calibration.selftest.scenes`: the 600 x 450 mm box with its four corner
markers and printed layout labels, seen by its true 1280x720 camera) is calibrated from one empty frame,
and the committed detector's table marks are found on it (`vision.table.marks.find_table_marks`, as
`throwbox calibrate table` does). Then, for every mark, the frame's likeness to the empty box there
(`calibration.marks.likeness`) is measured:

- on the empty box under the selftest's light changes (new noise; light -25 % with a gradient; +15 % with
  double noise): what a mark looks like when nothing is on it;
- on the empty box from a camera nudged 10 mm or turned 1 degree (the camera-moved trials);
- with one die (each of `--faces`) lying `--offsets-mm` from the mark's centre, along x and along y both
  ways (places where the die would cross a wall are left out): what a die on or beside the mark does;
- with a see-through die on the mark (the die frame blended over the empty one, `--see-through` shares of
  the die), at `--see-through-offsets-mm`: what a translucent die the detector does not box apart does.

The marks include each corner marker's look (`TableMark.marker_id`), as `throwbox calibrate table` keeps
it. `min_mark_likeness` must sit under the empty box and over opaque dice; `sure_mark_likeness` (with a
short count, a set-aside under it is left to a person) over the see-through dice too.

Prints the table and the bar's margin on both sides. Rendering only: no data set is needed.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rich.console import Console
from rich.progress import track

from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.marks import TableMark, likeness
from calibration.selftest.scenes import TableScene, camera_variants, table_camera_pose, table_camera_truth
from calibration.table import calibrate_table
from vision.judge.config import JudgeConfig
from vision.reader import Reader


def _ints(text: str) -> list[int]:
    return [int(v) for v in text.split(",") if v.strip()]


def _floats(text: str) -> list[float]:
    return [float(v) for v in text.split(",") if v.strip()]


@dataclass(frozen=True)
class MarkTrials:
    """The likeness figures: on the empty box, from a moved camera, and with a die at each offset."""

    marks: int
    bar: float
    sure_bar: float
    empty_light_changes: list[float]
    camera_moved: list[float]
    die_at_offset_mm: dict[float, list[float]]
    see_through: dict[float, list[float]]  # share of the die -> likeness over every mark and offset

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "marks": self.marks,
            "bar": self.bar,
            "sure_bar": self.sure_bar,
            "empty_box_light_changes": {
                "n": len(self.empty_light_changes),
                "min": _r(min(self.empty_light_changes)),
            },
            "camera_moved": {"n": len(self.camera_moved), "max": _r(max(self.camera_moved))},
            "die_at_offset_mm": {
                f"{d:g}": {"n": len(v), "max": _r(max(v)), "median": _r(float(np.median(v)))}
                for d, v in self.die_at_offset_mm.items()
                if v
            },
            "see_through": {
                f"{a:g}": {"n": len(v), "max": _r(max(v)), "median": _r(float(np.median(v)))}
                for a, v in self.see_through.items()
                if v
            },
        }


def _r(v: float) -> float:
    return round(float(v), 4)


def measure(
    *,
    offsets_mm: Sequence[float],
    faces: Sequence[int],
    seed: int = 5,
    see_through: Sequence[float] = (),
    see_through_offsets_mm: Sequence[float] = (0.0,),
    printed_boxes: bool = False,
) -> MarkTrials:
    """Likeness of every mark on the empty box (light changes, moved cameras) and with a die near it.

    The marks a detection may be set aside on (found by the detector, and the markers' looks), or with
    `printed_boxes` the printed layout boxes' looks, which are only watched for a change (`changed_marks`).
    """
    layout, markers = ThrowBoxLayout(), CornerMarkers()
    truth = table_camera_truth(width_px=1280, height_px=720)
    scene = TableScene(layout, markers, truth, table_camera_pose(layout), seed=seed)
    empty = scene.frame(noise_seed=1)
    cal = calibrate_table(
        empty, table_id="marks", intrinsics=truth, intrinsics_rms_px=0.0, layout=layout, markers=markers
    )
    every_mark = Reader(threads=1).table_marks_of(cal, [empty])
    marks = [m for m in every_mark if (m.layout_face is not None) == printed_boxes]
    if not marks:
        raise ValueError("the committed detector finds no table mark on the selftest's empty box")
    unmoved: list[float] = []
    moved: list[float] = []
    for i, (_name, _file, really_moved, pose, fx) in enumerate(camera_variants(scene.pose)):
        frame = scene.frame(pose=pose, fx=fx, noise_seed=100 + i)
        (moved if really_moved else unmoved).extend(likeness(frame, m) for m in marks)
    half = layout.die_edge_mm / 2.0

    def inside(x_mm: float, y_mm: float) -> bool:
        return half <= x_mm <= layout.width_mm - half and half <= y_mm <= layout.depth_mm - half

    def centre_mm(mark: TableMark) -> tuple[float, float]:
        cx, cy = (mark.box_xyxy[0] + mark.box_xyxy[2]) / 2, (mark.box_xyxy[1] + mark.box_xyxy[3]) / 2
        x_mm, y_mm = cal.pixel_to_mm(np.array([[cx, cy]]))[0]
        return float(x_mm), float(y_mm)

    directions = ((1, 0), (-1, 0), (0, 1), (0, -1))
    near: dict[float, list[float]] = {d: [] for d in offsets_mm}
    steps = [(m, d, s) for m in marks for d in offsets_mm for s in directions if d > 0 or s == (1, 0)]
    for mark, dist, (sx, sy) in track(steps, description="dice near the marks", console=Console(stderr=True)):
        x_mm, y_mm = centre_mm(mark)
        x_mm, y_mm = x_mm + sx * dist, y_mm + sy * dist
        if not inside(x_mm, y_mm):
            continue
        for face in faces:
            frame = scene.frame(dice=((x_mm, y_mm, face),), noise_seed=9)
            near[dist].append(likeness(frame, mark))
    through: dict[float, list[float]] = {a: [] for a in see_through}
    plain = scene.frame(noise_seed=9).astype(np.float64)
    places = [
        (m, d, s) for m in marks for d in see_through_offsets_mm for s in directions if d > 0 or s == (1, 0)
    ]
    for mark, dist, (sx, sy) in track(places, description="see-through dice", console=Console(stderr=True)):
        x_mm, y_mm = centre_mm(mark)
        x_mm, y_mm = x_mm + sx * dist, y_mm + sy * dist
        if not inside(x_mm, y_mm):
            continue
        die = scene.frame(dice=((x_mm, y_mm, faces[0]),), noise_seed=9).astype(np.float64)
        for share in see_through:
            blend = np.clip(share * die + (1.0 - share) * plain, 0, 255).astype(np.uint8)
            through[share].append(likeness(blend, mark))
    return MarkTrials(
        marks=len(marks),
        bar=JudgeConfig().min_mark_likeness,
        sure_bar=JudgeConfig().sure_mark_likeness,
        empty_light_changes=unmoved,
        camera_moved=moved,
        die_at_offset_mm=near,
        see_through=through,
    )


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print (or `--json`)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--offsets-mm", type=_floats, default=[0.0, 5.0, 10.0, 15.0, 20.0])
    parser.add_argument("--faces", type=_ints, default=[1, 6])
    parser.add_argument("--see-through", type=_floats, default=[0.2, 0.3, 0.5, 0.7])
    parser.add_argument("--see-through-offsets-mm", type=_floats, default=[0.0, 5.0, 10.0])
    parser.add_argument("--seed", type=int, default=5, help="The table's texture seed.")
    parser.add_argument(
        "--layout", action="store_true", help="Measure the printed layout boxes' looks instead of the marks."
    )
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args(argv)
    trials = measure(
        offsets_mm=args.offsets_mm,
        faces=args.faces,
        seed=args.seed,
        see_through=args.see_through,
        see_through_offsets_mm=args.see_through_offsets_mm,
        printed_boxes=args.layout,
    )
    if args.json:
        print(json.dumps(trials.as_dict()))
        return
    print(
        f"{trials.marks} {'printed layout boxes' if args.layout else 'table marks (markers included)'}; "
        f"min_mark_likeness = {trials.bar}, "
        f"sure_mark_likeness = {trials.sure_bar}"
    )
    light, moved = trials.empty_light_changes, trials.camera_moved
    print(
        f"  empty box, light changes: lowest {min(light):.4f} over {len(light)} looks (set aside at the bar)"
    )
    print(f"  camera nudged or turned:  highest {max(moved):.4f} over {len(moved)} looks (counted as dice)")
    for dist, vals in trials.die_at_offset_mm.items():
        if vals:
            print(
                f"  a die {dist:>4g} mm from a mark's centre: highest {max(vals):.4f}, "
                f"median {float(np.median(vals)):.4f} ({len(vals)} looks)"
            )

    for share, vals in trials.see_through.items():
        if vals:
            print(
                f"  a see-through die ({share:g} of the die) on a mark: highest {max(vals):.4f}, "
                f"median {float(np.median(vals)):.4f} ({len(vals)} looks)"
            )


if __name__ == "__main__":
    main()
