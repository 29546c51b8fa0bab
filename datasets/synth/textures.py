"""Textures and meshes for the renderer: dice styles, felt with the printed layout, written as OBJ + MTL.

pybullet caches meshes by file name and never frees a texture, so every texture gets its own OBJ + MTL
pair and the palette is small and fixed (the domain randomisation picks from it and tints the image
afterwards). Drawing is done with OpenCV.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.layout import LAYOUT_LABELS, ThrowBoxLayout
from datasets.synth.dice import FACES, face_corners_local

ImageArray = NDArray[np.uint8]
FloatArray = NDArray[np.float64]
BGR = tuple[int, int, int]

FACE_TEX_PX = 128  # one face of the die in the texture atlas
SIDE_GHOST_SHIFT = 0.25  # a side face's pip seen through the top: inward by this share of its depth
ATLAS_COLS, ATLAS_ROWS = 3, 2

# Pip centres on a unit face, per face value (standard layout).
_PIPS: dict[int, tuple[tuple[float, float], ...]] = {
    1: ((0.5, 0.5),),
    2: ((0.27, 0.27), (0.73, 0.73)),
    3: ((0.27, 0.27), (0.5, 0.5), (0.73, 0.73)),
    4: ((0.27, 0.27), (0.73, 0.27), (0.27, 0.73), (0.73, 0.73)),
    5: ((0.27, 0.27), (0.73, 0.27), (0.5, 0.5), (0.27, 0.73), (0.73, 0.73)),
    6: ((0.27, 0.25), (0.27, 0.5), (0.27, 0.75), (0.73, 0.25), (0.73, 0.5), (0.73, 0.75)),
}

# Flat, well separated colours for the colour-id render that checks the ground truth (BGR).
FACE_ID_COLOURS: dict[int, BGR] = {
    1: (0, 0, 255),
    2: (0, 255, 0),
    3: (255, 0, 0),
    4: (0, 255, 255),
    5: (255, 0, 255),
    6: (255, 255, 0),
}


@dataclass(frozen=True)
class DieStyle:
    """How a die looks: body and pip colour (BGR), translucency look, pip size."""

    name: str
    body_bgr: BGR
    pip_bgr: BGR
    translucent: bool
    pip_radius: float = 0.09  # fraction of the face edge
    face_id: bool = False  # flat colour per face, no pips: used only to check the ground truth


DIE_STYLES: tuple[DieStyle, ...] = (
    DieStyle("casino-red", (40, 30, 200), (245, 245, 245), True),
    DieStyle("casino-red-dark", (30, 20, 150), (240, 240, 240), True),
    DieStyle("casino-red-light", (70, 60, 225), (250, 250, 250), True),
    DieStyle("casino-green", (70, 140, 30), (245, 245, 245), True),
    DieStyle("casino-blue", (170, 80, 20), (245, 245, 245), True),
    DieStyle("white-black", (235, 235, 235), (25, 25, 25), False, 0.1),
    DieStyle("ivory-black", (200, 225, 235), (30, 30, 30), False, 0.1),
    DieStyle("black-white", (35, 35, 35), (235, 235, 235), False, 0.1),
    DieStyle("red-white", (40, 40, 190), (235, 235, 235), False, 0.1),
)
CASINO_STYLES: tuple[str, ...] = ("casino-red", "casino-red-dark", "casino-red-light")
FACE_ID_STYLE = DieStyle("face-id", (0, 0, 0), (0, 0, 0), False, face_id=True)

FELT_COLOURS: tuple[tuple[str, BGR], ...] = (
    ("green", (45, 110, 25)),
    ("dark-green", (30, 70, 20)),
    ("blue", (110, 60, 20)),
    ("burgundy", (40, 25, 110)),
    ("black", (30, 30, 30)),
    ("grey", (95, 90, 85)),
)
INK_COLOURS: tuple[BGR, ...] = ((235, 235, 235), (60, 190, 230))  # white, gold


def face_texture(style: DieStyle, face: int, rng_seed: int = 0, *, see_through: float = 0.0) -> ImageArray:
    """One face of a die as a square BGR image.

    `see_through` (0 to 1; used only for translucent styles): how strongly the pips of the die's other faces
    show through its body (`ghost_pips`); 0 draws the face alone, as every data set before 2026-12-02 did.
    """
    n = FACE_TEX_PX
    if style.face_id:
        return np.full((n, n, 3), FACE_ID_COLOURS[face], dtype=np.uint8)
    img = np.zeros((n, n, 3), dtype=np.float32)
    img[:] = style.body_bgr
    if style.translucent:
        # Translucent dice look lighter in the middle and darker at the edges (light through the body).
        yy, xx = np.mgrid[0:n, 0:n].astype(np.float32) / (n - 1)
        r = np.sqrt((xx - 0.5) ** 2 + (yy - 0.5) ** 2) / 0.707
        img *= (1.25 - 0.45 * r)[..., None]
    rad = max(2, round(style.pip_radius * n))
    if style.translucent and see_through > 0:
        alpha = ghost_pips(face, n, rad, strength=see_through)
        img += alpha[..., None] * (np.asarray(style.pip_bgr, np.float32) - img)
    # A thin darker border marks the die's edges.
    cv2.rectangle(img, (0, 0), (n - 1, n - 1), tuple(0.6 * c for c in style.body_bgr), 3)
    for cx, cy in _PIPS[face]:
        centre = (round(cx * (n - 1)), round(cy * (n - 1)))
        shade = tuple(0.5 * c for c in style.body_bgr)
        cv2.circle(img, centre, rad + 2, shade, -1, lineType=cv2.LINE_AA)
        cv2.circle(img, centre, rad, style.pip_bgr, -1, lineType=cv2.LINE_AA)
    return np.clip(img, 0, 255).astype(np.uint8)


def _face_frame(face: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """`face`'s centre, and its u and v axes (unit length), on the unit die (edge 2, centre 0).

    As `write_die_mesh` maps the texture: corner (-1, -1) of `face_corners_local` at the cell's bottom
    left, u running across and v up the face (the texture's rows run down).
    """
    c = face_corners_local(face, 2.0)  # corners (-1,-1), (1,-1), (1,1), (-1,1) in (u, v)
    return c.mean(axis=0), (c[1] - c[0]) / 2.0, (c[3] - c[0]) / 2.0


def _texture_point(face: int, a: float, b: float) -> FloatArray:
    """The point of the unit die at texture fraction (a across, b down) of `face` (`_face_frame`)."""
    centre, u_axis, v_axis = _face_frame(face)
    return np.asarray(centre + (2 * a - 1) * u_axis + (1 - 2 * b) * v_axis, dtype=np.float64)


def ghost_pips(face: int, n: int, pip_radius_px: int, *, strength: float) -> NDArray[np.float32]:
    """Where, and how strongly (0..1), the other faces' pips show through a translucent die's `face`.

    Seen through a clear body, the opposite face's pips appear mirrored where they project straight onto
    this face. A side face's pips project onto the shared edge; a camera a little off the die's axis sees
    them inside the face, the deeper the further in (by a quarter of their depth here: about what a camera
    20 degrees off axis sees through a body of refractive index 1.5), as streaks along the edge (their
    disks stand on edge). The deeper a pip lies, the fainter and more blurred it is (light scattered in the
    body). A texture-level approximation, as the renderer has no refraction: every side face's ghosts are
    shifted inward at once, which no single camera sees (from straight above a real die shows them on the
    edges), and a side face seen at a slant shows its ghosts flattened with its texture.
    """
    _, u_axis, v_axis = _face_frame(face)
    normal = np.cross(u_axis, v_axis)
    out = np.zeros((n, n), np.float32)
    for other in FACES:
        if other == face:
            continue
        other_normal = np.asarray(_face_frame(other)[0], dtype=np.float64)  # its centre, on the unit die
        side = abs(float(other_normal @ normal)) < 0.5
        for pa, pb in _PIPS[other]:
            p = _texture_point(other, pa, pb)
            depth = (1.0 - float(p @ normal)) / 2.0  # 0 on this face, 1 on the opposite one
            a, b = (float(p @ u_axis) + 1) / 2, (1 - float(p @ v_axis)) / 2
            if side:  # seen inside the face, away from the shared edge (texture rows run down)
                a -= SIDE_GHOST_SHIFT * depth * float(other_normal @ u_axis)
                b += SIDE_GHOST_SHIFT * depth * float(other_normal @ v_axis)
            layer = np.zeros((n, n), np.float32)
            centre = (round(a * (n - 1)), round(b * (n - 1)))
            if side:
                # The streak lies along the shared edge: the direction in this face's plane that is
                # perpendicular to the side face's normal.
                edge_dir = np.cross(other_normal, normal)
                angle = float(np.degrees(np.arctan2(-(edge_dir @ v_axis), edge_dir @ u_axis)))
                axes = (pip_radius_px, max(1, round(0.35 * pip_radius_px)))
                cv2.ellipse(layer, centre, axes, angle, 0, 360, 1.0, -1, lineType=cv2.LINE_AA)
            else:
                cv2.circle(layer, centre, pip_radius_px, 1.0, -1, lineType=cv2.LINE_AA)
            sigma = 1.0 + 3.0 * depth * n / 128
            blurred = np.asarray(cv2.GaussianBlur(layer, (0, 0), sigma), np.float32)
            out = np.maximum(out, blurred * np.float32(strength * (1.0 - 0.4 * depth)))
    return np.clip(out, 0.0, 1.0)


def die_atlas(style: DieStyle, *, see_through: float = 0.0) -> ImageArray:
    """All six faces in a 3 x 2 atlas: face k at column (k-1) % 3, row (k-1) // 3."""
    n = FACE_TEX_PX
    atlas = np.zeros((ATLAS_ROWS * n, ATLAS_COLS * n, 3), dtype=np.uint8)
    for face in FACES:
        col, row = (face - 1) % ATLAS_COLS, (face - 1) // ATLAS_COLS
        atlas[row * n : (row + 1) * n, col * n : (col + 1) * n] = face_texture(
            style, face, see_through=see_through
        )
    return atlas


def _write_obj(
    path: Path,
    *,
    texture: str,
    verts: list[tuple[float, float, float]],
    uvs: list[tuple[float, float]],
    quads: list[tuple[int, int, int, int]],
) -> None:
    """An OBJ with one textured material; quads index verts and uvs together (1-based)."""
    mtl = path.with_suffix(".mtl")
    mtl.write_text(
        f"newmtl m\nKa 1 1 1\nKd 1 1 1\nKs 0.3 0.3 0.3\nNs 40\nmap_Kd {texture}\n", encoding="ascii"
    )
    lines = [f"mtllib {mtl.name}", "o body"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in verts]
    lines += [f"vt {u:.6f} {v:.6f}" for u, v in uvs]
    lines.append("usemtl m")
    for a, b, c, d in quads:
        lines.append(f"f {a}/{a} {b}/{b} {c}/{c}")
        lines.append(f"f {a}/{a} {c}/{c} {d}/{d}")
    path.write_text("\n".join(lines) + "\n", encoding="ascii")


def write_die_mesh(folder: Path, style: DieStyle, *, edge_m: float, see_through: float = 0.0) -> Path:
    """Write the die's atlas texture and a cube OBJ (metres) mapping each face to its atlas cell."""
    folder.mkdir(parents=True, exist_ok=True)
    tex = folder / f"die-{style.name}.png"
    cv2.imwrite(str(tex), die_atlas(style, see_through=see_through))
    verts: list[tuple[float, float, float]] = []
    uvs: list[tuple[float, float]] = []
    quads: list[tuple[int, int, int, int]] = []
    inset = 1.0 / FACE_TEX_PX  # keep samples inside the cell so neighbours do not bleed in
    for face in FACES:
        col, row = (face - 1) % ATLAS_COLS, (face - 1) // ATLAS_COLS
        u0, u1 = col / ATLAS_COLS + inset, (col + 1) / ATLAS_COLS - inset
        # OBJ texture v runs bottom-up; atlas rows run top-down.
        v1, v0 = 1.0 - row / ATLAS_ROWS - inset, 1.0 - (row + 1) / ATLAS_ROWS + inset
        corners = face_corners_local(face, edge_m)
        base = len(verts) + 1
        for (x, y, z), uv in zip(corners, ((u0, v0), (u1, v0), (u1, v1), (u0, v1)), strict=True):
            verts.append((float(x), float(y), float(z)))
            uvs.append(uv)
        quads.append((base, base + 1, base + 2, base + 3))
    path = folder / f"die-{style.name}.obj"
    _write_obj(path, texture=tex.name, verts=verts, uvs=uvs, quads=quads)
    return path


def felt_texture(
    layout: ThrowBoxLayout,
    *,
    felt_bgr: BGR,
    ink_bgr: BGR,
    px_per_mm: float = 2.0,
    pattern: Callable[[int, int], NDArray[np.float32]] | None = None,
) -> ImageArray:
    """The felt of the throw box with the labelled layout boxes printed on it (image row 0 = y max).

    `pattern(h, w)`: a brightness factor per texel laid over the felt under the print (the wide style's
    weaves, stripes and wear, `datasets.synth.wide`); None: the plain felt of every usual set.
    """
    w = round(layout.width_mm * px_per_mm)
    h = round(layout.depth_mm * px_per_mm)
    rng = np.random.default_rng(7)  # fixed: the felt's weave is part of the palette, not of a scene
    img = np.empty((h, w, 3), dtype=np.float32)
    img[:] = felt_bgr
    img += rng.normal(0.0, 6.0, size=(h, w, 1)).astype(np.float32)
    if pattern is not None:
        img *= pattern(h, w)[..., None]
    img8 = np.clip(img, 0, 255).astype(np.uint8)

    def to_px(x_mm: float, y_mm: float) -> tuple[int, int]:
        return (round(x_mm * px_per_mm), round((layout.depth_mm - y_mm) * px_per_mm))

    thick = max(2, round(1.5 * px_per_mm))
    for face, rect in layout.layout_boxes().items():
        cv2.rectangle(img8, to_px(rect.x0, rect.y1), to_px(rect.x1, rect.y0), ink_bgr, thick, cv2.LINE_AA)
        label = LAYOUT_LABELS[face].upper()
        # Fit the label to 70 % of the box width (and at most a third of its depth).
        (tw1, th1), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_DUPLEX, 1.0, thick)
        box_w_px = (rect.x1 - rect.x0) * px_per_mm
        box_h_px = (rect.y1 - rect.y0) * px_per_mm
        scale = min(0.7 * box_w_px / tw1, box_h_px / 3.0 / th1)
        (tw, th), _ = cv2.getTextSize(label, cv2.FONT_HERSHEY_DUPLEX, scale, thick)
        cx, cy = to_px(*rect.centre)
        cv2.putText(
            img8,
            label,
            (cx - tw // 2, cy + th // 2),
            cv2.FONT_HERSHEY_DUPLEX,
            scale,
            ink_bgr,
            thick,
            cv2.LINE_AA,
        )
    # The line between the layout strip and the throw area.
    ta = layout.throw_area
    cv2.line(img8, to_px(0.0, ta.y0), to_px(layout.width_mm, ta.y0), ink_bgr, thick, cv2.LINE_AA)
    return img8


def write_felt_mesh(
    folder: Path,
    name: str,
    layout: ThrowBoxLayout,
    *,
    felt_bgr: BGR,
    ink_bgr: BGR,
    pattern: Callable[[int, int], NDArray[np.float32]] | None = None,
) -> Path:
    """Write the felt texture and a quad OBJ (metres) covering the throw box floor at z = 0."""
    folder.mkdir(parents=True, exist_ok=True)
    tex = folder / f"felt-{name}.png"
    cv2.imwrite(str(tex), felt_texture(layout, felt_bgr=felt_bgr, ink_bgr=ink_bgr, pattern=pattern))
    w, d = layout.width_mm / 1000.0, layout.depth_mm / 1000.0
    verts = [(0.0, 0.0, 0.0), (w, 0.0, 0.0), (w, d, 0.0), (0.0, d, 0.0)]
    uvs = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)]
    path = folder / f"felt-{name}.obj"
    _write_obj(path, texture=tex.name, verts=verts, uvs=uvs, quads=[(1, 2, 3, 4)])
    return path
