"""Rendering a resting (or moving) scene from a calibrated camera with pybullet.

pybullet's EGL plugin (Mesa's software OpenGL on a machine without a GPU) gives shading and soft shadows
at about 0.05-0.09 s a 1280x960 frame; TinyRenderer, pybullet's built-in CPU rasteriser, is the fallback
when EGL cannot start. Pitfalls measured in issue 3 and handled here: the plugin must be loaded before any
body exists; meshes are cached by file name (one OBJ + MTL per texture); textures are never freed.
Because the palette is fixed, every texture is loaded once and memory stays flat (measured here: about
620 MB after 150 scenes, no growth after the first 60), so the client is never reconnected. There is one
EGL client per process, shared by every renderer: a second EGL client that is closed leaves the first one
returning stale frames after a reconnect (seen in this repository's tests), so neither ever happens.

Camera conversion: OpenCV looks along +z with +y down, OpenGL along -z with +y up; the projection is built
from the intrinsics so that a world point lands on exactly the pixel `Camera.project` gives.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera
from calibration.layout import ThrowBoxLayout
from datasets.synth.physics import CHIP_HEIGHT_MM, CHIP_RADIUS_MM, ChipStack, DiePose, wall_boxes_m
from datasets.synth.textures import (
    DIE_STYLES,
    FACE_ID_STYLE,
    FELT_COLOURS,
    INK_COLOURS,
    write_die_mesh,
    write_felt_mesh,
)
from datasets.synth.wide import FELT_PATTERNS, STYLES, WIDE_DIE_STYLES, WIDE_FELTS, wide_felt_names

ImageArray = NDArray[np.uint8]
NEAR_M, FAR_M = 0.05, 5.0
PREFILL_DICE = 10  # dice of each style kept in the pool
PREFILL_CHIPS = 40  # chips kept in the pool (the scenarios use at most 3 stacks of 8)


class RenderError(RuntimeError):
    """The renderer could not produce an image (no OpenGL, a broken client)."""


@dataclass(frozen=True)
class Lighting:
    """Light for one render: direction toward the light (world), colour and shading coefficients."""

    direction: tuple[float, float, float] = (0.3, -0.4, 1.0)
    colour: tuple[float, float, float] = (1.0, 1.0, 1.0)
    ambient: float = 0.6
    diffuse: float = 0.5
    specular: float = 0.2
    shadow: bool = True


FLAT_LIGHT = Lighting(ambient=1.0, diffuse=0.0, specular=0.0, shadow=False)


@dataclass(frozen=True)
class SceneLook:
    """Which palette entries a scene uses."""

    die_styles: tuple[str, ...]  # one per die
    felt: str  # "<felt colour>-<ink index>"
    wall_rgba: tuple[float, float, float, float] = (0.35, 0.2, 0.1, 1.0)
    table_rgba: tuple[float, float, float, float] = (0.25, 0.15, 0.08, 1.0)


@dataclass(frozen=True)
class RenderOutput:
    """The rendered image (BGR uint8), the segmentation mask (body index per pixel, -1 none) and ids."""

    image: ImageArray
    seg: NDArray[np.int32]
    die_ids: tuple[int, ...]  # segmentation value of each die, in die order
    renderer: str


def view_matrix(camera: Camera) -> list[float]:
    """pybullet view matrix (column-major 4x4) for an OpenCV camera whose pose is in mm."""
    rot = camera.pose.rotation
    t = np.asarray(camera.pose.tvec, dtype=np.float64) / 1000.0
    m = np.eye(4)
    m[:3, :3] = rot
    m[:3, 3] = t
    gl = np.diag([1.0, -1.0, -1.0, 1.0]) @ m
    return [float(v) for v in gl.T.ravel()]


def projection_matrix(camera: Camera) -> list[float]:
    """pybullet projection matrix (column-major 4x4) reproducing the intrinsics exactly."""
    k = camera.intrinsics
    w, h = k.width_px, k.height_px
    n, f = NEAR_M, FAR_M
    cx, cy = k.cx + 0.5, k.cy + 0.5  # OpenGL pixel i spans [i, i+1]; OpenCV puts its centre at i
    p = np.array(
        [
            [2 * k.fx / w, 0.0, 1.0 - 2 * cx / w, 0.0],
            [0.0, 2 * k.fy / h, 2 * cy / h - 1.0, 0.0],
            [0.0, 0.0, -(f + n) / (f - n), -2 * f * n / (f - n)],
            [0.0, 0.0, -1.0, 0.0],
        ]
    )
    return [float(v) for v in p.T.ravel()]


@contextlib.contextmanager
def _quiet_stdout() -> Iterator[None]:
    """The EGL plugin prints its vendor strings on stdout (fd 1); keep them off the progress bar."""
    try:
        fd = os.dup(1)
    except OSError:
        yield
        return
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 1)
            yield
    finally:
        os.dup2(fd, 1)
        os.close(fd)


_EGL: dict[str, int | None] = {}


def _shared_egl_client() -> int | None:
    """The process's one pybullet client with the EGL plugin loaded, or None when EGL cannot start."""
    import pkgutil

    import pybullet as pb

    if "cid" in _EGL:
        return _EGL["cid"]
    loader = pkgutil.get_loader("eglRenderer")
    filename = loader.get_filename() if loader is not None else None  # type: ignore[attr-defined]
    cid: int | None = None
    if filename:
        client = int(pb.connect(pb.DIRECT))
        with _quiet_stdout():
            plugin = pb.loadPlugin(filename, "_eglRendererPlugin", physicsClientId=client)
        if plugin >= 0:
            cid = client
        else:
            pb.disconnect(physicsClientId=client)
    _EGL["cid"] = cid
    return cid


@dataclass
class _World:
    """Textures written to disk, their meshes, and the pool of bodies of one client and layout."""

    assets: Path
    meshes: dict[str, Path]
    pool: dict[tuple[object, ...], list[int]]
    die_styles: tuple[str, ...] = ()  # the palette's die styles, face-id included (every one pooled)
    felts: tuple[str, ...] = ()


# One world per (layout, die edge, see-through, style) on the process's shared EGL client: every renderer in
# a process draws into the same world, so its bodies (and so its shadows, see `_prefill`) never depend on how
# many renderers a process made, and textures are written and loaded once. The wide style's palette is a
# world of its own, so a usual scene's world (and image) is what it was before the wide style existed.
_SHARED_WORLDS: dict[tuple[ThrowBoxLayout, float, float, str], _World] = {}


def _new_world(
    layout: ThrowBoxLayout, die_edge_mm: float, see_through: float = 0.0, style: str = "usual"
) -> _World:
    if style not in STYLES:
        raise ValueError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
    assets = Path(tempfile.mkdtemp(prefix="throwbox-synth-"))
    meshes: dict[str, Path] = {}
    dice = (*(WIDE_DIE_STYLES if style == "wide" else DIE_STYLES), FACE_ID_STYLE)
    for die in dice:
        meshes[f"die:{die.name}"] = write_die_mesh(
            assets, die, edge_m=die_edge_mm / 1000.0, see_through=see_through
        )
    if style == "wide":
        for key, bgr, pattern, ink in WIDE_FELTS:
            meshes[f"felt:{key}"] = write_felt_mesh(
                assets, key, layout, felt_bgr=bgr, ink_bgr=ink, pattern=FELT_PATTERNS[pattern]
            )
    else:
        for name, bgr in FELT_COLOURS:
            for i, ink in enumerate(INK_COLOURS):
                key = f"{name}-{i}"
                meshes[f"felt:{key}"] = write_felt_mesh(assets, key, layout, felt_bgr=bgr, ink_bgr=ink)
    felts = SceneRenderer.felt_names(style)
    return _World(assets, meshes, {}, tuple(d.name for d in dice), felts)


@atexit.register
def _remove_shared_assets() -> None:
    for world in _SHARED_WORLDS.values():
        shutil.rmtree(world.assets, ignore_errors=True)


class SceneRenderer:
    """Renders scenes into a pybullet client, reusing a pool of bodies between renders.

    Args:
        layout: the throw box.
        prefer_egl: try the EGL plugin first (falls back to TinyRenderer when it cannot load).
        die_edge_mm: die size of the meshes.
        see_through: how strongly translucent dice show the pips of their other faces (0: not at all;
            `datasets.synth.textures.ghost_pips`). Its textures make a world of their own, with the same
            bodies; a process that renders both kinds holds both worlds' bodies, which can move shadow
            edges (see `_prefill`): `throwbox lab synth` makes each data set in processes of its own.
        style: "usual" (the palette every training set was made with) or "wide" (`datasets.synth.wide`: dice
            and felts of its own, in a world of its own as `see_through` makes one).
    """

    def __init__(
        self,
        layout: ThrowBoxLayout,
        *,
        prefer_egl: bool = True,
        die_edge_mm: float = 19.0,
        see_through: float = 0.0,
        style: str = "usual",
    ) -> None:
        if style not in STYLES:
            raise ValueError(f"style must be one of {', '.join(STYLES)}, got {style!r}")
        self.layout = layout
        self.see_through = see_through
        self.style = style
        self.prefer_egl = prefer_egl and os.environ.get("THROWBOX_RENDERER", "").lower() != "tiny"
        self.die_edge_mm = die_edge_mm
        self._cid: int | None = None
        self._egl = False
        self._world: _World | None = None
        # Pooled bodies wait between renders inside the table slab (10 cm thick, top 0.5 mm under the felt):
        # out of sight, and inside the scene's bounds, so how many are pooled never changes an image (a
        # far-away hiding place changed the shadows: images then depended on what was rendered before).
        self._hidden = [layout.width_mm / 2000.0, layout.depth_mm / 2000.0, -0.06]
        self._used: dict[tuple[object, ...], int] = {}
        self._shown: list[int] = []

    @property
    def _meshes(self) -> dict[str, Path]:
        if self._world is None:
            raise RenderError("renderer not started")
        return self._world.meshes

    @property
    def _pool(self) -> dict[tuple[object, ...], list[int]]:
        if self._world is None:
            raise RenderError("renderer not started")
        return self._world.pool

    @staticmethod
    def felt_names(style: str = "usual") -> tuple[str, ...]:
        """Every felt in the style's palette."""
        if style == "wide":
            return wide_felt_names()
        return tuple(f"{name}-{i}" for name, _ in FELT_COLOURS for i in range(len(INK_COLOURS)))

    @property
    def renderer_name(self) -> str:
        """ "egl" or "tiny" (valid after the first render)."""
        return "egl" if self._egl else "tiny"

    def close(self) -> None:
        """Release this renderer: a TinyRenderer client is closed; the shared EGL world stays."""
        import pybullet as pb

        if self._cid is not None and not self._egl:
            with contextlib.suppress(Exception):
                pb.disconnect(physicsClientId=self._cid)
            if self._world is not None:
                shutil.rmtree(self._world.assets, ignore_errors=True)
        self._cid = None
        self._world = None

    def __enter__(self) -> SceneRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _client(self) -> int:
        import pybullet as pb

        if self._cid is not None:
            return self._cid
        if self.prefer_egl:
            cid = _shared_egl_client()
            if cid is not None:
                key = (self.layout, self.die_edge_mm, self.see_through, self.style)
                if key not in _SHARED_WORLDS:
                    _SHARED_WORLDS[key] = _new_world(
                        self.layout, self.die_edge_mm, self.see_through, self.style
                    )
                self._cid, self._egl, self._world = cid, True, _SHARED_WORLDS[key]
                return cid
        self._cid, self._egl = int(pb.connect(pb.DIRECT)), False
        self._world = _new_world(self.layout, self.die_edge_mm, self.see_through, self.style)
        return self._cid

    def _take(self, cid: int, key: tuple[object, ...], make: Callable[[], int]) -> int:
        """A body for `key` not yet used in this render: from the pool, or made (and pooled) now.

        Bodies are kept between renders and moved out of sight afterwards: creating ~30 bodies per
        render cost about 75 ms of a 0.6 s scene (profiled here).
        """
        pool = self._pool.setdefault(key, [])
        n = self._used.get(key, 0)
        if n == len(pool):
            pool.append(make())
        self._used[key] = n + 1
        body = pool[n]
        self._shown.append(body)
        return body

    def _prefill(self, cid: int) -> None:
        """Create the whole pool up front (every felt, 10 dice of every style, walls, 40 chips), warm up.

        The shadows pybullet's OpenGL renderer draws depend on every body in the world, hidden ones
        included (measured: the same scene's shadow edges moved by up to 22 grey levels depending on what
        had been rendered before). With the pool complete from the start, the world is the same for every
        render, so an image depends only on its scene, whatever the worker saw before.
        """
        import pybullet as pb

        self._used, self._shown = {}, []
        if self._world is None:
            raise RenderError("renderer not started")
        for felt in self._world.felts:
            self._mesh_body(cid, f"felt:{felt}")
        for name in self._world.die_styles:
            for _ in range(PREFILL_DICE):
                self._mesh_body(cid, f"die:{name}")
        defaults = SceneLook(die_styles=(), felt="")
        self._box_body(cid, [1.5, 1.5, 0.05], list(defaults.table_rgba))
        for _, half in wall_boxes_m(self.layout):
            self._box_body(cid, list(half), list(defaults.wall_rgba))
        for _ in range(PREFILL_CHIPS):
            self._chip_body(cid, [1.0, 1.0, 1.0, 1.0])
        self._used, self._shown = {}, []
        # The first two renders of a client draw shadow edges differently from every later one (measured:
        # up to 22 grey levels on about 2 % of the pixels); two tiny renders first make every image the
        # same whether it is a worker's first or its hundredth.
        renderer = pb.ER_BULLET_HARDWARE_OPENGL if self._egl else pb.ER_TINY_RENDERER
        view = pb.computeViewMatrix([0.3, 0.2, 1.0], [0.3, 0.2, 0.0], [0.0, 1.0, 0.0], physicsClientId=cid)
        proj = pb.computeProjectionMatrixFOV(40.0, 1.0, NEAR_M, FAR_M, physicsClientId=cid)
        for _ in range(2):
            with _quiet_stdout():
                pb.getCameraImage(8, 8, view, proj, shadow=1, renderer=renderer, physicsClientId=cid)

    def _place(self, cid: int, body: int, pos_m: list[float], quat: list[float]) -> None:
        import pybullet as pb

        pb.resetBasePositionAndOrientation(body, pos_m, quat, physicsClientId=cid)

    def _mesh_body(self, cid: int, key: str) -> int:
        import pybullet as pb

        def make() -> int:
            vs = pb.createVisualShape(pb.GEOM_MESH, fileName=str(self._meshes[key]), physicsClientId=cid)
            return int(pb.createMultiBody(0, -1, vs, self._hidden, physicsClientId=cid))

        return self._take(cid, ("mesh", key), make)

    def _box_body(self, cid: int, half: list[float], rgba: list[float]) -> int:
        import pybullet as pb

        def make() -> int:
            vs = pb.createVisualShape(pb.GEOM_BOX, halfExtents=half, rgbaColor=rgba, physicsClientId=cid)
            return int(pb.createMultiBody(0, -1, vs, self._hidden, physicsClientId=cid))

        return self._take(cid, ("box", tuple(half), tuple(rgba)), make)

    def _chip_body(self, cid: int, rgba: list[float]) -> int:
        import pybullet as pb

        def make() -> int:
            vs = pb.createVisualShape(
                pb.GEOM_CYLINDER,
                radius=CHIP_RADIUS_MM / 1000.0,
                length=CHIP_HEIGHT_MM / 1000.0 * 0.98,
                rgbaColor=[1.0, 1.0, 1.0, 1.0],
                physicsClientId=cid,
            )
            return int(pb.createMultiBody(0, -1, vs, self._hidden, physicsClientId=cid))

        body = self._take(cid, ("chip",), make)
        pb.changeVisualShape(body, -1, rgbaColor=rgba, physicsClientId=cid)
        return body

    def render(
        self,
        camera: Camera,
        *,
        dice: tuple[DiePose, ...],
        chips: tuple[ChipStack, ...],
        look: SceneLook,
        lighting: Lighting,
        face_id: bool = False,
    ) -> RenderOutput:
        """Draw the scene as `camera` sees it; with `face_id`, dice get one flat colour per face."""
        import pybullet as pb

        if len(look.die_styles) != len(dice):
            raise ValueError(f"{len(dice)} dice but {len(look.die_styles)} die styles")
        cid = self._client()
        if not self._pool:
            self._prefill(cid)
        self._used = {}
        self._shown = []
        identity = [0.0, 0.0, 0.0, 1.0]
        try:
            lay = self.layout
            w, d = lay.width_mm / 1000.0, lay.depth_mm / 1000.0
            self._place(cid, self._mesh_body(cid, f"felt:{look.felt}"), [0.0, 0.0, 0.0], identity)
            # The table around the box, a little below the felt so the two never fight for depth.
            table = self._box_body(cid, [1.5, 1.5, 0.05], list(look.table_rgba))
            self._place(cid, table, [w / 2, d / 2, -0.0505], identity)
            for centre, half in wall_boxes_m(lay):
                self._place(
                    cid, self._box_body(cid, list(half), list(look.wall_rgba)), list(centre), identity
                )
            for stack in chips:
                for k in range(stack.n_chips):
                    shade = 1.0 if k % 2 == 0 else 0.85  # alternate shades so the chips read as a stack
                    rgba = [c * shade for c in stack.colour_rgba[:3]] + [1.0]
                    z = (k + 0.5) * CHIP_HEIGHT_MM / 1000.0
                    body = self._chip_body(cid, rgba)
                    self._place(cid, body, [stack.x_mm / 1000.0, stack.y_mm / 1000.0, z], identity)
            die_ids: list[int] = []
            for pose, style in zip(dice, look.die_styles, strict=True):
                key = f"die:{FACE_ID_STYLE.name}" if face_id else f"die:{style}"
                body = self._mesh_body(cid, key)
                self._place(cid, body, [c / 1000.0 for c in pose.position_mm], list(pose.quat_xyzw))
                die_ids.append(body)
            intr = camera.intrinsics
            renderer = pb.ER_BULLET_HARDWARE_OPENGL if self._egl else pb.ER_TINY_RENDERER
            with _quiet_stdout():
                result = pb.getCameraImage(
                    intr.width_px,
                    intr.height_px,
                    viewMatrix=view_matrix(camera),
                    projectionMatrix=projection_matrix(camera),
                    lightDirection=list(lighting.direction),
                    lightColor=list(lighting.colour),
                    lightDistance=2.0,
                    shadow=1 if lighting.shadow else 0,
                    lightAmbientCoeff=lighting.ambient,
                    lightDiffuseCoeff=lighting.diffuse,
                    lightSpecularCoeff=lighting.specular,
                    renderer=renderer,
                    physicsClientId=cid,
                )
        except pb.error as exc:
            raise RenderError(f"pybullet could not render: {exc}") from exc
        finally:
            # Out of sight until the next render (another renderer may share this client).
            for body in self._shown:
                with contextlib.suppress(Exception):
                    pb.resetBasePositionAndOrientation(body, self._hidden, [0, 0, 0, 1], physicsClientId=cid)
        width, height = int(result[0]), int(result[1])
        pixels = np.asarray(result[2], dtype=np.uint8).reshape(height, width, 4)
        seg = np.asarray(result[4], dtype=np.int32).reshape(height, width)
        if pixels[..., 3].max() == 0:
            raise RenderError("the renderer returned an empty frame")
        bgr = np.ascontiguousarray(pixels[..., 2::-1])
        return RenderOutput(bgr, seg, tuple(die_ids), self.renderer_name)
