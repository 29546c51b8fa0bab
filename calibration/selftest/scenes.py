"""Synthetic calibration scenes with exact camera truth, and the end-to-end check that uses them.

Rendering is exact inverse projection: for every (super-sampled) output pixel, the lens distortion is undone
to convergence (`cv2.undistortPoints` with tight criteria), the ray is intersected with each textured plane
(z = const in the world frame of `calibration.camera`), and the texture is sampled with `cv2.remap`. So the
true pixel of any world point is `Camera.project` of the true camera, with no approximation in the scene
geometry; only sampling, blur and noise separate the image from the truth, as with a real sensor.

Scenes:
- ChArUco (or chessboard) board views from one camera at varied poses (for intrinsics),
- the empty throw box on felt: printed layout boxes with their labels (Ace..Two, 593.1(b)(4)) and ArUco
  corner markers on white stickers; optionally dice tops (white squares with pips at die height),
- the same box from a camera displaced by 1 cm or rotated by 1 degree, or with a change of light.

Simplification: the box walls are not modelled in 3D; the rail outside the felt is drawn on the felt plane.

`calibration.selftest.evaluate` runs the whole calibration on such scenes and compares it with the truth
(`throwbox calibrate selftest`). Here, in `calibration/`, and not with the dice generator (`datasets/`):
the self-test is the product's (the command), and it renders the calibration's own scenes with OpenCV alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.board import BoardSpec
from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.layout import LAYOUT_LABELS, ThrowBoxLayout
from calibration.markers import CornerMarkers

if TYPE_CHECKING:
    pass

FloatArray = NDArray[np.float64]
UInt8Image = NDArray[np.uint8]

_UNDISTORT_CRITERIA = (cv2.TERM_CRITERIA_COUNT | cv2.TERM_CRITERIA_EPS, 60, 1e-13)

FELT_BGR = (38, 104, 30)
RAIL_BGR = (40, 62, 96)
PRINT_BGR = (225, 230, 230)
DIE_BGR = (235, 238, 240)


@dataclass(frozen=True)
class PlaneLayer:
    """A textured rectangle lying in the horizontal plane z = `z_mm`.

    Texture pixel (0, 0)'s outer corner sits at world `origin_mm`; texture columns run along world x and rows
    along world y, `mm_per_px` apart. `alpha` (same size, 0..255) makes parts transparent.
    """

    texture: UInt8Image
    origin_mm: tuple[float, float]
    mm_per_px: float
    z_mm: float = 0.0
    alpha: UInt8Image | None = None

    @cached_property
    def bgra(self) -> UInt8Image:
        """Texture and alpha as one BGRA image (what the renderer samples)."""
        tex = self.texture if self.texture.ndim == 3 else cv2.cvtColor(self.texture, cv2.COLOR_GRAY2BGR)
        alpha = self.alpha if self.alpha is not None else np.full(tex.shape[:2], 255, np.uint8)
        return np.ascontiguousarray(np.dstack([tex, alpha]), dtype=np.uint8)


class SceneRenderer:
    """Renders planes through one camera's intrinsics; the per-pixel ray table is computed once."""

    def __init__(self, intrinsics: CameraIntrinsics, *, supersample: int = 2) -> None:
        if supersample < 1:
            raise ValueError("supersample must be >= 1")
        self.intrinsics = intrinsics
        self.supersample = supersample
        w, h = intrinsics.resolution_wh
        s = supersample
        # Sample positions symmetric about each pixel centre, so averaging them adds no shift.
        us = (np.arange(w * s) + 0.5) / s - 0.5
        vs = (np.arange(h * s) + 0.5) / s - 0.5
        uu, vv = np.meshgrid(us, vs)
        pts = np.stack([uu.ravel(), vv.ravel()], axis=1).reshape(-1, 1, 2)
        rays = cv2.undistortPoints(
            pts, intrinsics.matrix, intrinsics.dist_coeffs, None, None, None, _UNDISTORT_CRITERIA
        )
        # float32 is ample here (1e-7 in normalised coordinates, 1e-4 px) and halves the per-frame work.
        self._rays = np.asarray(rays, dtype=np.float32).reshape(h * s, w * s, 2)

    def _window(self, pose: CameraPose, layer: PlaneLayer) -> tuple[int, int, int, int]:
        """Super-sampled pixel window (x0, y0, x1, y1) that can contain the layer; the frame if unsure."""
        w, h = self.intrinsics.resolution_wh
        s = self.supersample
        full = (0, 0, w * s, h * s)
        th, tw = layer.texture.shape[:2]
        x0, y0 = layer.origin_mm
        x1, y1 = x0 + tw * layer.mm_per_px, y0 + th * layer.mm_per_px
        k = np.linspace(0.0, 1.0, 24)
        edge = np.concatenate(
            [
                np.stack([x0 + k * (x1 - x0), np.full_like(k, y0)], 1),
                np.stack([x0 + k * (x1 - x0), np.full_like(k, y1)], 1),
                np.stack([np.full_like(k, x0), y0 + k * (y1 - y0)], 1),
                np.stack([np.full_like(k, x1), y0 + k * (y1 - y0)], 1),
            ]
        )
        pts = np.concatenate([edge, np.full((edge.shape[0], 1), layer.z_mm)], axis=1)
        depth = (pose.rotation @ pts.T).T[:, 2] + pose.tvec[2]
        if np.any(depth <= 0):
            return full
        px = Camera(self.intrinsics, pose).project(pts)
        pad = 4
        u0 = max(0, int(np.floor(px[:, 0].min())) - pad) * s
        v0 = max(0, int(np.floor(px[:, 1].min())) - pad) * s
        u1 = min(w, int(np.ceil(px[:, 0].max())) + pad) * s
        v1 = min(h, int(np.ceil(px[:, 1].max())) + pad) * s
        if u1 <= u0 or v1 <= v0:
            return (0, 0, 0, 0)
        return (u0, v0, u1, v1)

    def render(
        self,
        pose: CameraPose,
        layers: Sequence[PlaneLayer],
        *,
        background_bgr: tuple[int, int, int] = (70, 70, 70),
    ) -> FloatArray:
        """Linear-light BGR image (float, 0..255) before blur and noise; later layers cover earlier ones."""
        w, h = self.intrinsics.resolution_wh
        s = self.supersample
        out = np.empty((h * s, w * s, 3), dtype=np.float32)
        out[:] = np.asarray(background_bgr, dtype=np.float32)
        rot = pose.rotation
        t = np.asarray(pose.tvec, dtype=np.float64)
        for layer in layers:
            u0, v0, u1, v1 = self._window(pose, layer)
            if u1 <= u0 or v1 <= v0:
                continue
            rays = self._rays[v0:v1, u0:u1]
            m = np.column_stack([rot[:, 0], rot[:, 1], rot[:, 2] * layer.z_mm + t])
            # Plane (x, y) in texture pixels: scale and shift the inverse homography, then apply it in C.
            to_tex = np.array(
                [
                    [1.0 / layer.mm_per_px, 0.0, -layer.origin_mm[0] / layer.mm_per_px - 0.5],
                    [0.0, 1.0 / layer.mm_per_px, -layer.origin_mm[1] / layer.mm_per_px - 0.5],
                    [0.0, 0.0, 1.0],
                ]
            )
            hom = cv2.transform(rays, (to_tex @ np.linalg.inv(m)).astype(np.float32))
            # M (x, y, 1) = depth * ray, so the third component is 1 / depth: in front where it is > 0.
            hw = hom[:, :, 2]
            with np.errstate(divide="ignore", invalid="ignore"):
                inv_w = np.where(hw > 0, 1.0 / hw, np.float32(np.nan)).astype(np.float32)
            tex_u = np.nan_to_num(hom[:, :, 0] * inv_w, nan=-1e6)
            tex_v = np.nan_to_num(hom[:, :, 1] * inv_w, nan=-1e6)
            sampled = cv2.remap(
                layer.bgra,
                tex_u,
                tex_v,
                cv2.INTER_LINEAR,
                borderMode=cv2.BORDER_CONSTANT,
                borderValue=(0, 0, 0, 0),
            ).astype(np.float32)
            a = sampled[:, :, 3:4] * np.float32(1.0 / 255.0)
            win = out[v0:v1, u0:u1]
            out[v0:v1, u0:u1] = win + (sampled[:, :, :3] - win) * a
        if s > 1:
            # An exact box average over each pixel's s x s samples (integer factor).
            return np.asarray(cv2.resize(out, (w, h), interpolation=cv2.INTER_AREA), dtype=np.float64)
        return np.asarray(out, dtype=np.float64)


@dataclass(frozen=True)
class Finish:
    """Sensor effects applied after rendering: light gain/offset, a light gradient, blur, noise."""

    gain: float = 1.0
    offset: float = 0.0
    gradient: float = 0.0  # relative brightness change from the left edge to the right edge
    blur_sigma_px: float = 0.6
    noise_sigma: float = 2.0


def finish(image: FloatArray, rng: np.random.Generator, fx: Finish = Finish()) -> UInt8Image:
    """Apply `Finish` and quantise to 8 bits."""
    img = image * fx.gain + fx.offset
    if fx.gradient:
        ramp = 1.0 + fx.gradient * (np.linspace(-0.5, 0.5, img.shape[1])[None, :, None])
        img = img * ramp
    if fx.blur_sigma_px > 0:
        img = np.asarray(cv2.GaussianBlur(img, (0, 0), fx.blur_sigma_px), dtype=np.float64)
    if fx.noise_sigma > 0:
        img = img + rng.normal(0.0, fx.noise_sigma, img.shape)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


# --- calibration boards ---------------------------------------------------------------------------------

DEFAULT_BOARD = BoardSpec("charuco", 7, 5, 40.0, 30.0, "DICT_5X5_100")


def board_layers(
    board: BoardSpec, *, px_per_mm: float = 8.0, card_margin_mm: float = 12.0
) -> list[PlaneLayer]:
    """The board printed on a white card (the card gives the detector a quiet zone)."""
    margin_px = round(card_margin_mm * px_per_mm)
    printed = board.render(px_per_mm=px_per_mm)
    card = cv2.copyMakeBorder(
        printed, margin_px, margin_px, margin_px, margin_px, cv2.BORDER_CONSTANT, value=255
    )
    inked = np.where(card < 128, 12, 245).astype(np.uint8)  # neither ink nor card is perfectly black/white
    origin = -margin_px / px_per_mm
    return [PlaneLayer(inked, (origin, origin), 1.0 / px_per_mm)]


def board_view_poses(
    board: BoardSpec, intrinsics: CameraIntrinsics, *, count: int, seed: int
) -> list[CameraPose]:
    """Varied camera poses that each see most of the board, spread so the board reaches the image corners."""
    rng = np.random.default_rng(seed)
    bw, bh = board.size_mm
    centre = np.array([bw / 2.0, bh / 2.0, 0.0])
    # Distance at which the board spans about half the image width.
    base = intrinsics.fx * bw / (0.55 * intrinsics.width_px)
    poses: list[CameraPose] = []
    corners = np.array([[0, 0, 0], [bw, 0, 0], [bw, bh, 0], [0, bh, 0]], dtype=np.float64)
    w, h = intrinsics.resolution_wh
    attempts = 0
    while len(poses) < count:
        attempts += 1
        if attempts > 200 * count:
            raise RuntimeError("could not place enough board views in the image")
        tilt = np.radians(rng.uniform(5.0, 40.0))
        azimuth = rng.uniform(0.0, 2.0 * np.pi)
        dist = base * rng.uniform(0.8, 1.25)
        direction = np.array([np.sin(tilt) * np.cos(azimuth), np.sin(tilt) * np.sin(azimuth), -np.cos(tilt)])
        # OpenCV's board frame has z pointing into the board, so the camera sits on the -z side.
        eye = centre + direction * dist
        # Aim off the board centre so the board lands in different parts of the image.
        aim = centre + np.array([rng.uniform(-0.45, 0.45) * bw, rng.uniform(-0.45, 0.45) * bh, 0.0])
        roll = rng.uniform(-np.pi, np.pi)
        up = (float(np.cos(roll)), float(np.sin(roll)), 0.0)
        try:
            pose = CameraPose.look_at(eye_mm=tuple(eye), target_mm=tuple(aim), up=up)
        except ValueError:
            continue
        cam_z = (pose.rotation @ corners.T).T + np.asarray(pose.tvec)
        if np.any(cam_z[:, 2] <= 0):
            continue
        px = Camera(intrinsics, pose).project(corners)
        inside = (px[:, 0] > 2) & (px[:, 0] < w - 3) & (px[:, 1] > 2) & (px[:, 1] < h - 3)
        # ChArUco copes with partial views (most of the board in view); a chessboard must be seen whole.
        if inside.sum() < (4 if board.kind == "chessboard" else 3):
            continue
        poses.append(pose)
    return poses


def render_board_views(
    renderer: SceneRenderer,
    board: BoardSpec,
    poses: Sequence[CameraPose],
    *,
    seed: int,
    fx: Finish = Finish(),
) -> list[UInt8Image]:
    """One 8-bit image per pose."""
    rng = np.random.default_rng(seed)
    layers = board_layers(board)
    return [finish(renderer.render(p, layers, background_bgr=(85, 90, 95)), rng, fx) for p in poses]


# --- the throw box ----------------------------------------------------------------------------------------

TABLE_PX_PER_MM = 4.0
RAIL_MM = 90.0


def _label_patch(text: str, *, height_px: int, colour: tuple[int, int, int]) -> tuple[UInt8Image, UInt8Image]:
    """Text rendered for the dealer: flipped so it reads upright from the dealer's side (world -y)."""
    scale = height_px / 22.0
    thick = max(1, round(height_px / 10))
    (tw, th), base = cv2.getTextSize(text, cv2.FONT_HERSHEY_DUPLEX, scale, thick)
    patch = np.zeros((th + base + 2 * thick, tw + 2 * thick), np.uint8)
    cv2.putText(patch, text, (thick, th + thick), cv2.FONT_HERSHEY_DUPLEX, scale, 255, thick, cv2.LINE_AA)
    alpha = np.flipud(patch)
    rgb = np.zeros((*alpha.shape, 3), np.uint8)
    rgb[:] = colour
    return rgb, np.ascontiguousarray(alpha)


def table_texture(
    layout: ThrowBoxLayout, markers: CornerMarkers, *, seed: int, px_per_mm: float = TABLE_PX_PER_MM
) -> PlaneLayer:
    """The felt plane: rail, felt with a fine weave, printed layout boxes and labels, corner markers."""
    rng = np.random.default_rng(seed)
    x0, y0 = -RAIL_MM, -RAIL_MM
    w_px = round((layout.width_mm + 2 * RAIL_MM) * px_per_mm)
    h_px = round((layout.depth_mm + 2 * RAIL_MM) * px_per_mm)
    tex = np.empty((h_px, w_px, 3), np.float32)
    tex[:] = RAIL_BGR

    def to_px(x_mm: float, y_mm: float) -> tuple[int, int]:
        return (round((x_mm - x0) * px_per_mm), round((y_mm - y0) * px_per_mm))

    bx0, by0 = to_px(0.0, 0.0)
    bx1, by1 = to_px(layout.width_mm, layout.depth_mm)
    weave = cv2.GaussianBlur(rng.normal(0.0, 1.0, (by1 - by0, bx1 - bx0)).astype(np.float32), (0, 0), 1.5)
    felt = np.asarray(FELT_BGR, np.float32)[None, None, :] * (1.0 + 0.25 * weave[:, :, None])
    tex[by0:by1, bx0:bx1] = felt
    line_px = max(1, round(3.0 * px_per_mm))
    for face, rect in layout.layout_boxes().items():
        p0, p1 = to_px(rect.x0, rect.y0), to_px(rect.x1, rect.y1)
        cv2.rectangle(tex, p0, p1, PRINT_BGR, line_px, cv2.LINE_AA)
        rgb, alpha = _label_patch(
            LAYOUT_LABELS[face], height_px=round(0.3 * (rect.y1 - rect.y0) * px_per_mm), colour=PRINT_BGR
        )
        cxp, cyp = to_px(*rect.centre)
        ty, tx = cyp - alpha.shape[0] // 2, cxp - alpha.shape[1] // 2
        region = tex[ty : ty + alpha.shape[0], tx : tx + alpha.shape[1]]
        a = alpha[:, :, None].astype(np.float32) / 255.0
        region[:] = region * (1 - a) + rgb.astype(np.float32) * a
    sticker_px = round(markers.sticker_mm * px_per_mm)
    for marker_id, quad in markers.corners_mm(layout).items():
        qx, qy = (float(v) for v in quad.min(axis=0))
        sx, sy = to_px(qx - markers.inset_mm, qy - markers.inset_mm)
        tex[sy : sy + sticker_px, sx : sx + sticker_px] = 245.0
        mx, my = to_px(qx, qy)
        side_px = round(markers.side_mm * px_per_mm)
        # Printed to read upright from the dealer's side, like the labels: image rows run along world -y.
        marker = np.flipud(markers.marker_image(marker_id, side_px=side_px)).astype(np.float32)
        tex[my : my + side_px, mx : mx + side_px] = np.where(marker[:, :, None] > 127, 245.0, 10.0)
    return PlaneLayer(np.clip(tex, 0, 255).astype(np.uint8), (x0, y0), 1.0 / px_per_mm)


def die_top_layer(
    layout: ThrowBoxLayout, *, x_mm: float, y_mm: float, face: int, px_per_mm: float = 10.0
) -> PlaneLayer:
    """The top face of a die resting at (x, y): a white square with pips, at height = die edge."""
    e = layout.die_edge_mm
    n = round(e * px_per_mm)
    tex = np.empty((n, n, 3), np.uint8)
    tex[:] = DIE_BGR
    pip_sets = {
        1: [(0.5, 0.5)],
        2: [(0.25, 0.25), (0.75, 0.75)],
        3: [(0.25, 0.25), (0.5, 0.5), (0.75, 0.75)],
        4: [(0.25, 0.25), (0.75, 0.25), (0.25, 0.75), (0.75, 0.75)],
        5: [(0.25, 0.25), (0.75, 0.25), (0.5, 0.5), (0.25, 0.75), (0.75, 0.75)],
        6: [(0.25, 0.25), (0.75, 0.25), (0.25, 0.5), (0.75, 0.5), (0.25, 0.75), (0.75, 0.75)],
    }
    for px, py in pip_sets[face]:
        cv2.circle(tex, (round(px * n), round(py * n)), round(0.09 * n), (30, 30, 160), -1, cv2.LINE_AA)
    return PlaneLayer(tex, (x_mm - e / 2.0, y_mm - e / 2.0), 1.0 / px_per_mm, z_mm=e)


# --- cameras ----------------------------------------------------------------------------------------------


def table_camera_truth(*, width_px: int = 1280, height_px: int = 720) -> CameraIntrinsics:
    """The true intrinsics of the synthetic table camera: 62 degree lens with barrel distortion."""
    return CameraIntrinsics.from_fov(
        width_px=width_px, height_px=height_px, hfov_deg=62.0, dist=(-0.21, 0.075, 0.0006, -0.0004, 0.0)
    )


def table_camera_pose(
    layout: ThrowBoxLayout, *, height_mm: float | None = None, back_mm: float | None = None
) -> CameraPose:
    """Above the box, set back toward the dealer and looking at the box centre; dealer at the image bottom.

    Height and set-back default to 860 mm and 140 mm for a 600 mm wide box, scaled with the box width.
    """
    scale = layout.width_mm / 600.0
    height_mm = 860.0 * scale if height_mm is None else height_mm
    back_mm = 140.0 * scale if back_mm is None else back_mm
    cx, cy = layout.width_mm / 2.0, layout.depth_mm / 2.0
    return CameraPose.look_at(eye_mm=(cx, cy - back_mm, height_mm), target_mm=(cx, cy, 0.0))


def displaced(pose: CameraPose, *, shift_mm: tuple[float, float, float]) -> CameraPose:
    """The same camera moved by `shift_mm` in the world frame (orientation unchanged)."""
    rot = pose.rotation
    centre = pose.position_mm + np.asarray(shift_mm, dtype=np.float64)
    t = -rot @ centre
    return CameraPose(rvec=pose.rvec, tvec=(float(t[0]), float(t[1]), float(t[2])))


def rotated(pose: CameraPose, *, axis_cam: tuple[float, float, float], angle_deg: float) -> CameraPose:
    """The same camera turned by `angle_deg` about an axis through its centre (camera frame)."""
    axis = np.asarray(axis_cam, dtype=np.float64)
    axis = axis / np.linalg.norm(axis)
    delta, _ = cv2.Rodrigues(axis * np.radians(angle_deg))
    rot = delta @ pose.rotation
    t = delta @ np.asarray(pose.tvec, dtype=np.float64)
    rvec, _ = cv2.Rodrigues(rot)
    r = rvec.ravel()
    return CameraPose(
        rvec=(float(r[0]), float(r[1]), float(r[2])), tvec=(float(t[0]), float(t[1]), float(t[2]))
    )


@dataclass
class TableScene:
    """A throw box seen by a known camera: renders frames for any pose, light and set of dice."""

    layout: ThrowBoxLayout
    markers: CornerMarkers
    intrinsics: CameraIntrinsics
    pose: CameraPose
    seed: int = 0
    supersample: int = 2
    renderer: SceneRenderer | None = field(default=None, repr=False)  # share one per camera: it is costly
    _table: PlaneLayer | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        r = self.renderer
        if r is not None and (r.intrinsics != self.intrinsics or r.supersample != self.supersample):
            raise ValueError("the shared renderer is for another camera or supersampling")

    def _renderer(self) -> SceneRenderer:
        if self.renderer is None:
            self.renderer = SceneRenderer(self.intrinsics, supersample=self.supersample)
        return self.renderer

    @property
    def camera(self) -> Camera:
        """The true camera."""
        return Camera(self.intrinsics, self.pose)

    def frame(
        self,
        *,
        pose: CameraPose | None = None,
        dice: Sequence[tuple[float, float, int]] = (),
        fx: Finish = Finish(),
        noise_seed: int = 0,
    ) -> UInt8Image:
        """An 8-bit BGR frame; `dice` are (x_mm, y_mm, face) resting flat."""
        if self._table is None:
            self._table = table_texture(self.layout, self.markers, seed=self.seed)
        layers = [self._table] + [die_top_layer(self.layout, x_mm=x, y_mm=y, face=f) for x, y, f in dice]
        img = self._renderer().render(pose or self.pose, layers, background_bgr=(25, 30, 40))
        return finish(img, np.random.default_rng(noise_seed), fx)


def camera_variants(pose: CameraPose) -> list[tuple[str, str, bool, CameraPose, Finish]]:
    """(name, file name, camera really moved?, pose, finish) for the camera-moved trials."""
    dim = Finish(gain=0.75, offset=6.0, gradient=0.25)
    bright = Finish(gain=1.15, noise_sigma=4.0)
    pan = rotated(pose, axis_cam=(0.0, 1.0, 0.0), angle_deg=1.0)
    tilt = rotated(pose, axis_cam=(1.0, 0.0, 0.0), angle_deg=1.0)
    roll = rotated(pose, axis_cam=(0.0, 0.0, 1.0), angle_deg=1.0)
    return [
        ("unmoved, new sensor noise", "table_unmoved_noise.png", False, pose, Finish()),
        ("unmoved, light -25 % with a gradient", "table_unmoved_dim.png", False, pose, dim),
        ("unmoved, light +15 %, more noise", "table_unmoved_bright.png", False, pose, bright),
        (
            "displaced 10 mm along x",
            "table_shift_x10mm.png",
            True,
            displaced(pose, shift_mm=(10.0, 0, 0)),
            Finish(),
        ),
        (
            "displaced 10 mm along y",
            "table_shift_y10mm.png",
            True,
            displaced(pose, shift_mm=(0, 10.0, 0)),
            Finish(),
        ),
        (
            "displaced 10 mm up",
            "table_shift_z10mm.png",
            True,
            displaced(pose, shift_mm=(0, 0, 10.0)),
            Finish(),
        ),
        ("rotated 1 deg (pan)", "table_pan_1deg.png", True, pan, Finish()),
        ("rotated 1 deg (tilt)", "table_tilt_1deg.png", True, tilt, Finish()),
        ("rotated 1 deg (roll)", "table_roll_1deg.png", True, roll, Finish()),
    ]
