"""Ground truth from the final physics state: each die's face by the rules, its flags, and the verdict.

The regulations (58 Pa. Code 675a.4(b) and (c), same text in 593.4):
- a roll is invalid if any die goes off the table or one die comes to rest on top of another;
- a die that does not land flat (cocked, e.g. an edge resting on a stack of chips) is read by the side
  directly opposite the side resting on the chips or other object;
- if more than one side of a die rests on chips or another object, the roll is void (rethrown).

Interpretation written down here: a die "rests on top of another" (stacked) when it touches a die whose
centre is more than half an edge lower; a die leaning on a neighbouring die is cocked on "another object"
and read by the rule. Flat means tilted at most COCKED_TILT_DEG.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera
from calibration.layout import ThrowBoxLayout
from datasets.format import DieTruth, RestsOn, SceneVerdict
from datasets.synth.dice import cube_corners_local, face_corners_local, face_up, opposite, tilt_deg
from datasets.synth.physics import COCKED_TILT_DEG, DieContacts, DiePose

FloatArray = NDArray[np.float64]


@dataclass(frozen=True)
class PhysicalTruth:
    """What the physics says about one die, independent of any camera."""

    face: int | None
    face_geometric: int
    tilt_deg: float
    rests_on: RestsOn
    cocked: bool
    stacked: bool
    off_table: bool
    sides_resting: int  # sides resting on chips / walls / dice (for a cocked die)
    layout_box: int | None


def physical_truth(pose: DiePose, contacts: DieContacts, layout: ThrowBoxLayout) -> PhysicalTruth:
    """Apply 675a.4(b)-(c) to one resting die."""
    rot = pose.rotation
    geo = face_up(rot)
    tilt = tilt_deg(rot)
    x, y, _ = pose.position_mm
    off = not layout.box.contains(x, y)
    stacked = bool(contacts.supported_by_die)
    objects = contacts.side_kinds
    cocked = (not off) and tilt > COCKED_TILT_DEG and bool(objects)
    sides = len(contacts.side_faces) if cocked else 0
    face: int | None
    if off:
        face = None
    elif cocked:
        face = opposite(next(iter(contacts.side_faces))) if sides == 1 else None
    else:
        face = geo
    rests: RestsOn
    if stacked:
        rests = "die"
    elif off:
        rests = "outside"
    elif cocked:
        rests = "chips" if "chips" in objects else ("die" if "die" in objects else "wall")
    elif "felt" not in contacts.touches and "chips" in contacts.touches:
        rests = "chips"
    else:
        rests = "felt"
    return PhysicalTruth(
        face=face,
        face_geometric=geo,
        tilt_deg=tilt,
        rests_on=rests,
        cocked=cocked,
        stacked=stacked,
        off_table=off,
        sides_resting=sides,
        layout_box=None if off else layout.layout_box_at(x, y),
    )


def scene_verdict(
    dice: list[PhysicalTruth], *, expected: int, missing: int
) -> tuple[SceneVerdict, tuple[str, ...]]:
    """valid / invalid / void with machine-readable reasons (invalid wins over void: both mean rethrow)."""
    reasons: list[str] = []
    if any(d.off_table for d in dice):
        reasons.append("off_table")
    if missing > 0 or len(dice) < expected:
        reasons.append("missing")
    if any(d.stacked for d in dice):
        reasons.append("stacked")
    invalid = bool(reasons)
    if any(d.cocked and d.sides_resting > 1 for d in dice):
        reasons.append("cocked_multi_side")
    if invalid:
        return "invalid", tuple(reasons)
    if reasons:
        return "void", tuple(reasons)
    return "valid", ()


def _clockwise_from_top_left(pts: FloatArray) -> FloatArray:
    """Order 4 image points clockwise (y down) starting from the one nearest the top-left."""
    c = pts.mean(axis=0)
    ang = np.arctan2(pts[:, 1] - c[1], pts[:, 0] - c[0])
    ordered = pts[np.argsort(ang)]
    start = int(np.argmin(ordered[:, 0] + ordered[:, 1]))
    return np.roll(ordered, -start, axis=0)


def image_truth(
    *,
    die_id: int,
    pose: DiePose,
    phys: PhysicalTruth,
    camera: Camera,
    seg: NDArray[np.int32],
    seg_id: int,
    edge_mm: float,
    kept: bool,
    style: str,
) -> DieTruth:
    """Where the die is in the image: box, top-face quad, outline, visible fraction."""
    rot = pose.rotation
    centre = np.asarray(pose.position_mm, dtype=np.float64)
    corners = centre + cube_corners_local(edge_mm) @ rot.T
    px = camera.project(corners).astype(np.float32)
    hull = cv2.convexHull(px).reshape(-1, 2)
    area = float(cv2.contourArea(hull))
    w, h = camera.intrinsics.width_px, camera.intrinsics.height_px
    visible = int(np.count_nonzero(seg == seg_id))
    frac = min(1.0, visible / area) if area > 1.0 else 0.0
    x0, y0 = np.clip(hull.min(axis=0), 0, [w - 1, h - 1])
    x1, y1 = np.clip(hull.max(axis=0), 0, [w - 1, h - 1])
    top = centre + face_corners_local(phys.face_geometric, edge_mm) @ rot.T
    quad = _clockwise_from_top_left(camera.project(top))
    q = [(float(p[0]), float(p[1])) for p in quad]
    return DieTruth(
        id=die_id,
        face=phys.face,
        face_geometric=phys.face_geometric,
        tilt_deg=phys.tilt_deg,
        rests_on=phys.rests_on,
        cocked=phys.cocked,
        stacked=phys.stacked,
        off_table=phys.off_table,
        visible_fraction=frac,
        box_xyxy=(float(x0), float(y0), float(x1), float(y1)),
        top_quad=(q[0], q[1], q[2], q[3]),
        polygon=tuple((float(p[0]), float(p[1])) for p in hull),
        position_mm=pose.position_mm,
        quat_xyzw=pose.quat_xyzw,
        layout_box=phys.layout_box,
        kept=kept,
        style=style,
    )
