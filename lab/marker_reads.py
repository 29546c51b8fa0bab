"""How the reader does on a table that keeps its corner markers and print in view: random throws, read whole.

    .venv/bin/python -m lab.marker_reads [--reads 100] [--dice 10] [--seed 0] [--json]

The calibration selftest's table (`calibration.selftest.scenes`: the 600 x 450 mm box, its four ArUco corner
markers and printed layout labels, its true 1280x720 camera) is calibrated from an empty frame as `throwbox
calibrate table` does it, table marks and the markers' looks included. Then `--reads` frames, each with
`--dice` dice lying flat at random places in the throw area (no two closer than a die and a half; one in
four frames with a die within a die's width of a corner marker's sticker) under one of the selftest's three
lights, are read through the calibration with the game's count. Reported: the verdicts, how many frames
count every die once and nothing else, read every face right, call the camera moved, and set aside a
detection within half a die of a real die (a die taken for part of the table: what must never happen).

The renderer draws each die's top face only (a white square with pips at die height, no sides), so these
are easy dice; the figures measure what the markers, the table marks and the camera check do to a read,
not the models. Rendering only: no data set is needed.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np
from rich.console import Console
from rich.progress import track

from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.selftest.scenes import Finish, TableScene, table_camera_pose, table_camera_truth
from calibration.table import calibrate_table
from vision.reader import Reader
from vision.table.geometry import TableGeometry
from vision.types import FindingReason, Frame

LIGHTS = (Finish(), Finish(gain=0.75, offset=6.0, gradient=0.25), Finish(gain=1.15, noise_sigma=4.0))


@dataclass
class MarkerReads:
    """What the reads came to."""

    reads: int = 0
    verdicts: Counter[str] = field(default_factory=Counter)
    counted_right: int = 0  # every die found once, nothing else counted
    faces_right: int = 0  # valid, and the faces read are the faces placed
    camera_moved: int = 0  # a `camera_moved` finding on an unmoved camera
    die_set_aside: int = 0  # a detection within half a die of a placed die set aside as part of the table
    near_marker_frames: int = 0
    reasons: Counter[str] = field(default_factory=Counter)

    def as_dict(self) -> dict[str, object]:
        """JSON-ready summary."""
        return {
            "reads": self.reads,
            "verdicts": dict(self.verdicts),
            "counted_right": self.counted_right,
            "faces_right": self.faces_right,
            "camera_moved": self.camera_moved,
            "die_set_aside": self.die_set_aside,
            "near_marker_frames": self.near_marker_frames,
            "reasons": dict(self.reasons.most_common()),
        }


def _places(
    rng: np.random.Generator, layout: ThrowBoxLayout, markers: CornerMarkers, n: int, *, near_marker: bool
) -> list[tuple[float, float]]:
    """`n` die centres in the throw area, apart; with `near_marker`, the first beside a marker's sticker."""
    area, edge = layout.throw_area, layout.die_edge_mm
    out: list[tuple[float, float]] = []
    if near_marker:
        quad = markers.corners_mm(layout)[int(rng.integers(len(markers.ids)))]
        cx, cy = layout.width_mm / 2.0, layout.depth_mm / 2.0
        corner = quad[np.argmin(np.hypot(quad[:, 0] - cx, quad[:, 1] - cy))]
        toward = np.sign([cx - corner[0], cy - corner[1]])
        gap = markers.inset_mm + float(rng.uniform(0.0, edge))  # on or just past the sticker's edge
        x, y = corner + toward * (edge / 2.0 + gap) * np.array([1.0, float(rng.uniform(0.2, 1.0))])
        out.append((float(x), float(y)))
    while len(out) < n:
        x = float(rng.uniform(area.x0 + edge, area.x1 - edge))
        y = float(rng.uniform(area.y0 + edge, area.y1 - edge))
        if all(np.hypot(x - a, y - b) > 1.5 * edge for a, b in out):
            out.append((x, y))
    return out


def measure(*, reads: int, dice: int, seed: int = 0) -> MarkerReads:
    """Read `reads` random throws over the selftest table through its calibration."""
    layout, markers = ThrowBoxLayout(), CornerMarkers()
    truth = table_camera_truth(width_px=1280, height_px=720)
    scene = TableScene(layout, markers, truth, table_camera_pose(layout), seed=seed)
    empty = scene.frame(noise_seed=1)
    reader = Reader(threads=1)
    cal = calibrate_table(
        empty,
        table_id="marker-reads",
        intrinsics=truth,
        intrinsics_rms_px=0.0,
        layout=layout,
        markers=markers,
    )
    cal = replace(cal, marks=reader.table_marks_of(cal, [empty]))
    geometry = TableGeometry.from_calibration(cal)
    rng = np.random.default_rng(seed)
    out = MarkerReads()
    half_px = 0.5 * float(np.median(geometry.die_edges_px([[600.0, 300.0, 620.0, 320.0]])))
    for i in track(range(reads), description="marker-table reads", console=Console(stderr=True)):
        near = i % 4 == 0
        places = _places(rng, layout, markers, dice, near_marker=near)
        faces = [int(f) for f in rng.integers(1, 7, size=dice)]
        frame = scene.frame(
            dice=[(x, y, f) for (x, y), f in zip(places, faces, strict=True)],
            fx=LIGHTS[i % len(LIGHTS)],
            noise_seed=1000 + i,
        )
        roll = reader.read(Frame(image=frame, frame_id=f"m{i}"), expected_dice=dice, geometry=geometry)
        truth_px = geometry.camera.project(np.array([[x, y, layout.die_edge_mm] for x, y in places]))
        centres = np.array(
            [
                [(d.candidate.box_xyxy[0] + d.candidate.box_xyxy[2]) / 2, d.candidate.box_xyxy[3]]
                for d in roll.dice
            ]
        ).reshape(-1, 2)
        found_once = (
            all(int((np.hypot(*(centres - t).T) < 2.0 * half_px).sum()) == 1 for t in truth_px)
            and len(roll.dice) == dice
        )
        aside = np.array(
            [
                [(a.box_xyxy[0] + a.box_xyxy[2]) / 2, (a.box_xyxy[1] + a.box_xyxy[3]) / 2]
                for a in roll.set_aside
            ]
        ).reshape(-1, 2)
        out.reads += 1
        out.near_marker_frames += int(near)
        out.verdicts[roll.verdict.value] += 1
        out.counted_right += int(found_once)
        out.faces_right += int(roll.verdict.value == "valid" and sorted(roll.faces) == sorted(faces))
        out.camera_moved += int(any(f.reason == FindingReason.CAMERA_MOVED for f in roll.findings))
        out.die_set_aside += int(
            any(np.hypot(*(aside - t).T).min() < 2.0 * half_px for t in truth_px) if len(aside) else False
        )
        out.reasons.update({f.reason for f in roll.findings})
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Measure and print (or `--json`)."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reads", type=int, default=100)
    parser.add_argument("--dice", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0, help="The table's texture and the throws' seed.")
    parser.add_argument("--json", action="store_true", help="Print the figures as JSON.")
    args = parser.parse_args(argv)
    result = measure(reads=args.reads, dice=args.dice, seed=args.seed)
    if args.json:
        print(json.dumps(result.as_dict()))
        return
    n = max(result.reads, 1)
    near = result.near_marker_frames
    print(
        f"{result.reads} reads of {args.dice} dice on the selftest table ({near} with a die beside a marker)"
    )
    print(f"  verdicts: {dict(result.verdicts)}")
    counted = result.counted_right
    print(f"  every die counted once, nothing else: {counted} ({100 * counted / n:.1f} %)")
    print(f"  valid with every face right: {result.faces_right} ({100 * result.faces_right / n:.1f} %)")
    print(f"  camera called moved (it never is): {result.camera_moved}")
    print(f"  a die set aside as part of the table: {result.die_set_aside}")
    print(f"  findings: {dict(result.reasons.most_common())}")


if __name__ == "__main__":
    main()
