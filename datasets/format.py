"""The ground-truth format of throwbox data sets, as frozen dataclasses with JSON (de)serialisation.

One JSON document per image (`labels/<scene_id>.json`), `format` = FORMAT_VERSION:

```
{
  "format": "throwbox-synth/1", "generator": "throwbox-synth 0.1.0",
  "scene_id": "s0001-000042", "seed": 1, "index": 42,
  "image": "images/s0001-000042.jpg", "scenario": "normal", "verdict": "valid", "reasons": [],
  "expected_dice": 10, "faces": [5, 5, 1, ...],          # face by the rules, per present die (null: void)
  "camera": {"intrinsics": {"fx", "fy", "cx", "cy", "width_px", "height_px", "dist": [5]},
             "pose": {"rvec": [3], "tvec": [3]}},         # OpenCV, world frame of calibration.camera (mm)
  "homography_px_from_mm": [[...], [...], [...]],         # felt plane (x, y mm, z = 0) -> pixels
  "render": {"renderer": "egl", "jpeg_quality": 88, ...}, # the domain randomisation drawn for this image
  "dice": [ {
      "id": 0, "face": 5, "face_geometric": 5,            # face by 675a.4(c) / face whose normal is most up
      "tilt_deg": 0.4, "rests_on": "felt", "cocked": false, "stacked": false, "off_table": false,
      "visible_fraction": 1.0, "box_xyxy": [x0, y0, x1, y1],   # whole die as seen, px, clipped to the image
      "top_quad": [[x, y] x4],                              # face-up corners, px, clockwise from top-left
      "polygon": [[x, y], ...],                             # outline of the whole die (convex hull), px
      "position_mm": [x, y, z], "quat_xyzw": [4], "layout_box": null, "kept": false, "style": "casino-red"
  } ],
  "layout_move": {                                        # only scenes of the dealer's move (layout*)
      "first_faces": [5, 5, 1, ...], "winner": 5, "match_count": 4,   # the first roll, per die id
      "moved_to": 5, "moved": [0, 1, 6, 8], "error": "none"           # what the dealer did
  }
}
```

Verdict reasons are short machine-readable strings: "off_table", "missing", "stacked", "cocked_multi_side".
`face` is null only for a die whose roll is void (more than one side resting) or that is off the table.

`layout_move` (absent in older files and in every other scenario) records the dealer's move after a valid
first roll (593.4(e)): the right move puts exactly the dice showing `winner` on the first roll into the
`winner`'s layout box. `error` says what the scene's dealer did instead: "none" (the right move),
"wrong_box" (the winning dice went into the box of `moved_to`), "missing" (one winning die left in the
throw area), "extra" (a die of another face moved in with them).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from calibration.camera import Camera
from calibration.table import camera_from_dict as calibration_camera_from_dict
from calibration.table import camera_to_dict

FORMAT_VERSION = "throwbox-synth/1"

RestsOn = Literal["felt", "chips", "die", "wall", "outside"]
SceneVerdict = Literal["valid", "invalid", "void"]
SCENARIOS: tuple[str, ...] = (
    "normal",
    "cocked",
    "wedged",
    "stacked",
    "off_table",
    "cluster",
    "layout",
    "extra_roll",
    "layout_wrong_box",
    "layout_missing",
    "layout_extra",
    "propped",
)
REST_KINDS: tuple[str, ...] = ("felt", "chips", "die", "wall", "outside")
VERDICTS: tuple[str, ...] = ("valid", "invalid", "void")
LayoutMoveError = Literal["none", "wrong_box", "missing", "extra"]
LAYOUT_MOVE_ERRORS: tuple[str, ...] = ("none", "wrong_box", "missing", "extra")

Point = tuple[float, float]


class FormatError(ValueError):
    """A ground-truth document is malformed or of an unknown format version."""


@dataclass(frozen=True)
class DieTruth:
    """Exact ground truth for one die in one image."""

    id: int
    face: int | None
    face_geometric: int
    tilt_deg: float
    rests_on: RestsOn
    cocked: bool
    stacked: bool
    off_table: bool
    visible_fraction: float
    box_xyxy: tuple[float, float, float, float]
    top_quad: tuple[Point, Point, Point, Point]
    polygon: tuple[Point, ...]
    position_mm: tuple[float, float, float]
    quat_xyzw: tuple[float, float, float, float]
    layout_box: int | None = None
    kept: bool = False
    style: str = ""

    def __post_init__(self) -> None:
        if self.face is not None and self.face not in range(1, 7):
            raise FormatError(f"die {self.id}: face must be 1..6 or null, got {self.face}")
        if self.face_geometric not in range(1, 7):
            raise FormatError(f"die {self.id}: face_geometric must be 1..6, got {self.face_geometric}")
        if self.rests_on not in REST_KINDS:
            raise FormatError(f"die {self.id}: rests_on must be one of {REST_KINDS}, got {self.rests_on!r}")
        if not 0.0 <= self.visible_fraction <= 1.0:
            raise FormatError(
                f"die {self.id}: visible_fraction must be in [0, 1], got {self.visible_fraction}"
            )
        if len(self.box_xyxy) != 4 or len(self.top_quad) != 4:
            raise FormatError(f"die {self.id}: box_xyxy needs 4 numbers and top_quad 4 points")

    @property
    def in_image(self) -> bool:
        """True when some of the die can be seen."""
        x0, y0, x1, y1 = self.box_xyxy
        return self.visible_fraction > 0.0 and x1 > x0 and y1 > y0


@dataclass(frozen=True)
class LayoutMoveTruth:
    """The dealer's move into a layout box after the first roll: what the right move was, what was done."""

    first_faces: tuple[int | None, ...]  # the first roll's face per die id (null: read by no face)
    winner: int
    match_count: int
    moved_to: int  # face of the layout box the dealer put dice into
    moved: tuple[int, ...]  # die ids the dealer put there
    error: LayoutMoveError

    def __post_init__(self) -> None:
        if self.winner not in range(1, 7) or self.moved_to not in range(1, 7):
            raise FormatError(
                f"layout_move: winner and moved_to must be 1..6, got {self.winner}, {self.moved_to}"
            )
        if self.error not in LAYOUT_MOVE_ERRORS:
            raise FormatError(f"layout_move: error must be one of {LAYOUT_MOVE_ERRORS}, got {self.error!r}")
        if self.match_count != self.first_faces.count(self.winner) or self.match_count < 1:
            raise FormatError(
                f"layout_move: match_count {self.match_count} is not how many {self.winner}s first_faces has"
            )
        if any(not 0 <= i < len(self.first_faces) for i in self.moved):
            raise FormatError(f"layout_move: moved names a die that is not in first_faces: {self.moved}")
        if (self.error == "wrong_box") != (self.moved_to != self.winner):
            raise FormatError("layout_move: moved_to differs from winner exactly when error is wrong_box")

    @property
    def right_dice(self) -> tuple[int, ...]:
        """Die ids the right move puts into the winner's box: those that showed the winner."""
        return tuple(i for i, f in enumerate(self.first_faces) if f == self.winner)


@dataclass(frozen=True)
class SceneTruth:
    """Exact ground truth for one image of a throw."""

    scene_id: str
    image: str  # path relative to the data set root
    scenario: str
    verdict: SceneVerdict
    reasons: tuple[str, ...]
    expected_dice: int
    dice: tuple[DieTruth, ...]
    camera: Camera
    homography_px_from_mm: tuple[tuple[float, float, float], ...]
    seed: int
    index: int
    generator: str
    render: dict[str, Any] = field(default_factory=dict, compare=False)
    format: str = FORMAT_VERSION
    layout_move: LayoutMoveTruth | None = None

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise FormatError(f"{self.scene_id}: verdict must be one of {VERDICTS}, got {self.verdict!r}")
        if self.scenario not in SCENARIOS:
            raise FormatError(f"{self.scene_id}: unknown scenario {self.scenario!r}")
        if self.expected_dice not in (6, 10):
            raise FormatError(f"{self.scene_id}: expected_dice must be 10 or 6, got {self.expected_dice}")

    @property
    def faces(self) -> tuple[int | None, ...]:
        """Face by the rules of every die that is present, in die order."""
        return tuple(d.face for d in self.dice)

    @property
    def motion_blur_px(self) -> int | None:
        """The camera-shake blur the generator gave the frame (`render.degradation.motion_px`, px; 0 or 1: a
        still frame), or None where the label does not say."""
        motion = (self.render.get("degradation") or {}).get("motion_px")
        return None if motion is None else int(motion)


def _f(x: float) -> float:
    return round(float(x), 3)


def _pts(points: Any) -> list[list[float]]:
    return [[_f(p[0]), _f(p[1])] for p in points]


def die_to_dict(d: DieTruth) -> dict[str, Any]:
    """A die as the JSON object of the format."""
    return {
        "id": d.id,
        "face": d.face,
        "face_geometric": d.face_geometric,
        "tilt_deg": _f(d.tilt_deg),
        "rests_on": d.rests_on,
        "cocked": d.cocked,
        "stacked": d.stacked,
        "off_table": d.off_table,
        "visible_fraction": round(float(d.visible_fraction), 4),
        "box_xyxy": [_f(v) for v in d.box_xyxy],
        "top_quad": _pts(d.top_quad),
        "polygon": _pts(d.polygon),
        "position_mm": [_f(v) for v in d.position_mm],
        "quat_xyzw": [round(float(v), 6) for v in d.quat_xyzw],
        "layout_box": d.layout_box,
        "kept": d.kept,
        "style": d.style,
    }


def camera_from_dict(data: dict[str, Any]) -> Camera:
    """The scene's camera (`calibration.table.camera_from_dict`, the one reading of a camera's JSON); a
    malformed one is a FormatError."""
    try:
        return calibration_camera_from_dict(data)
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        raise FormatError(f"malformed camera: {exc!r}") from exc


def layout_move_to_dict(m: LayoutMoveTruth) -> dict[str, Any]:
    """The dealer's move as the JSON object of the format."""
    return {
        "first_faces": list(m.first_faces),
        "winner": m.winner,
        "match_count": m.match_count,
        "moved_to": m.moved_to,
        "moved": list(m.moved),
        "error": m.error,
    }


def layout_move_from_dict(data: dict[str, Any]) -> LayoutMoveTruth:
    """Inverse of `layout_move_to_dict`."""
    try:
        return LayoutMoveTruth(
            first_faces=tuple(None if f is None else int(f) for f in data["first_faces"]),
            winner=int(data["winner"]),
            match_count=int(data["match_count"]),
            moved_to=int(data["moved_to"]),
            moved=tuple(int(i) for i in data["moved"]),
            error=data["error"],
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"malformed layout_move: {exc!r}") from exc


def scene_to_dict(s: SceneTruth) -> dict[str, Any]:
    """A scene as the JSON document of the format (`layout_move` only where there is one)."""
    doc = {
        "format": s.format,
        "generator": s.generator,
        "scene_id": s.scene_id,
        "seed": s.seed,
        "index": s.index,
        "image": s.image,
        "scenario": s.scenario,
        "verdict": s.verdict,
        "reasons": list(s.reasons),
        "expected_dice": s.expected_dice,
        "faces": list(s.faces),
        "camera": camera_to_dict(s.camera),
        "homography_px_from_mm": [[float(v) for v in row] for row in s.homography_px_from_mm],
        "render": s.render,
        "dice": [die_to_dict(d) for d in s.dice],
    }
    if s.layout_move is not None:
        doc["layout_move"] = layout_move_to_dict(s.layout_move)
    return doc


def _quad(points: Any) -> tuple[Point, Point, Point, Point]:
    pts = [(float(p[0]), float(p[1])) for p in points]
    if len(pts) != 4:
        raise FormatError(f"top_quad must have 4 points, got {len(pts)}")
    return (pts[0], pts[1], pts[2], pts[3])


def die_from_dict(data: dict[str, Any]) -> DieTruth:
    """Inverse of `die_to_dict`."""
    try:
        box = [float(v) for v in data["box_xyxy"]]
        pos = [float(v) for v in data["position_mm"]]
        q = [float(v) for v in data["quat_xyzw"]]
        return DieTruth(
            id=int(data["id"]),
            face=None if data["face"] is None else int(data["face"]),
            face_geometric=int(data["face_geometric"]),
            tilt_deg=float(data["tilt_deg"]),
            rests_on=data["rests_on"],
            cocked=bool(data["cocked"]),
            stacked=bool(data["stacked"]),
            off_table=bool(data["off_table"]),
            visible_fraction=float(data["visible_fraction"]),
            box_xyxy=(box[0], box[1], box[2], box[3]),
            top_quad=_quad(data["top_quad"]),
            polygon=tuple((float(p[0]), float(p[1])) for p in data["polygon"]),
            position_mm=(pos[0], pos[1], pos[2]),
            quat_xyzw=(q[0], q[1], q[2], q[3]),
            layout_box=None if data.get("layout_box") is None else int(data["layout_box"]),
            kept=bool(data.get("kept", False)),
            style=str(data.get("style", "")),
        )
    except (KeyError, TypeError, IndexError, ValueError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"malformed die: {exc!r}") from exc


def scene_from_dict(data: dict[str, Any]) -> SceneTruth:
    """Inverse of `scene_to_dict`; raises FormatError on an unknown version or a malformed document."""
    if data.get("format") != FORMAT_VERSION:
        raise FormatError(
            f"unknown ground-truth format {data.get('format')!r} (this reader knows {FORMAT_VERSION})"
        )
    try:
        h = np.asarray(data["homography_px_from_mm"], dtype=np.float64)
        if h.shape != (3, 3):
            raise FormatError(f"homography must be 3x3, got {h.shape}")
        return SceneTruth(
            scene_id=str(data["scene_id"]),
            image=str(data["image"]),
            scenario=str(data["scenario"]),
            verdict=data["verdict"],
            reasons=tuple(str(r) for r in data["reasons"]),
            expected_dice=int(data["expected_dice"]),
            dice=tuple(die_from_dict(d) for d in data["dice"]),
            camera=camera_from_dict(data["camera"]),
            homography_px_from_mm=tuple((float(r[0]), float(r[1]), float(r[2])) for r in h),
            seed=int(data["seed"]),
            index=int(data["index"]),
            generator=str(data["generator"]),
            render=dict(data.get("render", {})),
            layout_move=None
            if data.get("layout_move") is None
            else layout_move_from_dict(data["layout_move"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, FormatError):
            raise
        raise FormatError(f"malformed scene document: {exc!r}") from exc


def write_scene(path: Path, scene: SceneTruth) -> None:
    """Write one scene's JSON document."""
    path.write_text(json.dumps(scene_to_dict(scene), indent=1) + "\n", encoding="utf-8")


def read_scene(path: Path) -> SceneTruth:
    """Read one scene's JSON document."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise FormatError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise FormatError(f"{path}: expected a JSON object")
    return scene_from_dict(data)
