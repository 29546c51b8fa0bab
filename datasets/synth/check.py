"""An independent check of the face-up ground truth against what the renderer draws.

Each die is rendered with one flat colour per face (a colour-id render: no pips, no shading) from a camera
straight above it; the colour at the projected centre of its top face names the face the renderer shows on
top. The ground truth's `face_geometric` must name the same face, and for a die that is not cocked the face
read by the rules (`face`) must equal it. Dice whose top is hidden (under another die) are counted apart.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from datasets.synth.dice import FACE_NORMALS, face_up
from datasets.synth.generator import GeneratorConfig, simulate_scene
from datasets.synth.physics import ChipStack, DiePose
from datasets.synth.render import FLAT_LIGHT, SceneLook, SceneRenderer
from datasets.synth.textures import FACE_ID_COLOURS
from datasets.synth.truth import physical_truth


def colour_id_face(
    renderer: SceneRenderer,
    poses: tuple[DiePose, ...],
    chips: tuple[ChipStack, ...],
    index: int,
    *,
    edge_mm: float,
) -> int | None:
    """The face the renderer shows on top of die `index`, or None when its top face is hidden."""
    pose = poses[index]
    x, y, z = pose.position_mm
    cam = Camera(
        CameraIntrinsics.from_fov(width_px=96, height_px=96, hfov_deg=10.0),
        CameraPose.look_at(eye_mm=(x, y, z + 300.0), target_mm=(x, y, z)),
    )
    out = renderer.render(
        cam,
        dice=poses,
        chips=chips,
        look=SceneLook(("white-black",) * len(poses), "green-0"),
        lighting=FLAT_LIGHT,
        face_id=True,
    )
    rot = pose.rotation
    # The centre of the top face (not the die's centre: a tilted die's top is off-centre in the image).
    top = np.asarray(pose.position_mm) + rot @ (np.asarray(FACE_NORMALS[face_up(rot)]) * edge_mm / 2.0)
    u, v = cam.project(top[None, :])[0]
    row, col = round(float(v)), round(float(u))
    if out.seg[row, col] != out.die_ids[index]:
        return None
    colour = out.image[row, col].astype(np.int32)
    return min(FACE_ID_COLOURS, key=lambda f: int(np.abs(np.asarray(FACE_ID_COLOURS[f]) - colour).sum()))


@dataclass(frozen=True)
class FaceCheck:
    """Counts over the dice checked; `mismatches` lists (scene index, die, truth, rendered)."""

    dice: int
    agree: int
    hidden: int
    cocked_checked: int
    mismatches: tuple[tuple[int, int, int, int], ...]


def check_faces(cfg: GeneratorConfig, indices: list[int], renderer: SceneRenderer) -> FaceCheck:
    """Compare the face-up truth of scenes `indices` of `cfg` with colour-id renders."""
    dice = agree = hidden = cocked = 0
    mismatches: list[tuple[int, int, int, int]] = []
    for index in indices:
        o = simulate_scene(cfg, index)
        for i, (pose, contacts) in enumerate(zip(o.result.poses, o.result.contacts, strict=True)):
            t = physical_truth(pose, contacts, cfg.layout)
            if t.off_table:
                continue
            shown = colour_id_face(renderer, o.result.poses, o.world.chips, i, edge_mm=o.world.die_edge_mm)
            if shown is None:
                hidden += 1
                continue
            dice += 1
            cocked += int(t.cocked)
            ok = shown == t.face_geometric and (t.cocked or t.face == t.face_geometric)
            if ok:
                agree += 1
            else:
                mismatches.append((index, i, t.face_geometric, shown))
    return FaceCheck(dice, agree, hidden, cocked, tuple(mismatches))
