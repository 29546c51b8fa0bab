"""One table's calibration: camera, throw-box plane, layout boxes, die scale and felt model together.

`calibrate_table` builds it from a frame of the empty box (corner markers, or four corners given by hand)
and the camera's intrinsics; `calibration.store` saves and loads it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any, Literal

import cv2
import numpy as np
from numpy.typing import NDArray

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.die_scale import die_edge_px, pixel_to_plane_at_height
from calibration.errors import BadCornerPointsError, CalibrationRefusedError, ResolutionMismatchError
from calibration.felt import FeltModel, fit_felt_model
from calibration.images import check_image, resolution_wh
from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers, require_markers
from calibration.marks import TableMark
from calibration.plane import PlaneMap, fit_plane
from calibration.reference import ReferenceImage, make_reference

FloatArray = NDArray[np.float64]
Source = Literal["markers", "manual"]

FELT_INSET_MM = 8.0  # keep wall shadows and the box edge out of the felt statistics


@dataclass(frozen=True)
class TableCalibration:
    """Everything the reader needs to know about one table's camera and throw box."""

    table_id: str
    created_at: str  # ISO 8601, UTC
    intrinsics: CameraIntrinsics
    intrinsics_rms_px: float
    pose: CameraPose
    plane: PlaneMap
    plane_rms_mm: float
    layout: ThrowBoxLayout
    source: Source
    markers: CornerMarkers | None
    reference_corners_px: dict[int, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    felt: FeltModel | None = None
    reference_picture: ReferenceImage | None = None  # for the camera-moved check without markers
    # What the die detector takes for a die on the empty box (print, logos, markers; calibration.marks),
    # found and added by `throwbox calibrate table` (the detector lives in vision/). Empty: none known.
    marks: tuple[TableMark, ...] = ()
    # The die detector (its model tag, e.g. "detect_centernet_2026nov") that found the marks: marks from
    # another detector may miss what the reader's boxes now (`stale_marks_message`).
    marks_detector: str | None = None

    def __post_init__(self) -> None:
        if self.plane.intrinsics != self.intrinsics:
            raise ValueError("plane mapping and calibration use different intrinsics")
        if self.source == "markers" and (self.markers is None or not self.reference_corners_px):
            raise ValueError("a marker calibration must record its markers and their reference corners")

    @property
    def resolution_wh(self) -> tuple[int, int]:
        """The camera resolution this calibration is valid for."""
        return self.intrinsics.resolution_wh

    @property
    def camera(self) -> Camera:
        """Calibrated intrinsics and pose."""
        return Camera(self.intrinsics, self.pose)

    @cached_property
    def checksum(self) -> str:
        """SHA-256 of the canonical JSON of this calibration (what the stored file's checksum covers)."""
        return hashlib.sha256(canonical_json(self.to_dict()).encode()).hexdigest()

    @property
    def calibration_id(self) -> str:
        """Short identity to record with every read: table, creation time and checksum prefix."""
        return f"{self.table_id}@{self.created_at}#{self.checksum[:12]}"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able form (what `calibration.store` writes, under a checksum)."""
        return {
            "table_id": self.table_id,
            "created_at": self.created_at,
            "resolution_wh": list(self.resolution_wh),
            "intrinsics": intrinsics_to_dict(self.intrinsics),
            "intrinsics_rms_px": self.intrinsics_rms_px,
            "pose": pose_to_dict(self.pose),
            "homography_px_to_mm": list(self.plane.homography_px_to_mm),
            "plane_rms_mm": self.plane_rms_mm,
            "layout": asdict(self.layout),
            "source": self.source,
            "markers": None if self.markers is None else asdict(self.markers),
            "reference_corners_px": {
                str(k): [list(p) for p in v] for k, v in sorted(self.reference_corners_px.items())
            },
            "felt": None if self.felt is None else asdict(self.felt),
            "reference_picture": None if self.reference_picture is None else asdict(self.reference_picture),
            # Left out when empty, so a calibration stored before marks existed keeps its checksum and id.
            **({"marks": [m.to_dict() for m in self.marks]} if self.marks else {}),
            **({"marks_detector": self.marks_detector} if self.marks_detector is not None else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TableCalibration:
        """Inverse of `to_dict`; raises KeyError, TypeError or ValueError on malformed data."""
        intr = intrinsics_from_dict(data["intrinsics"])
        if list(data["resolution_wh"]) != list(intr.resolution_wh):
            raise ValueError("resolution_wh disagrees with the intrinsics' image size")
        pose = pose_from_dict(data["pose"])
        markers_d = data["markers"]
        markers = None
        if markers_d is not None:
            markers = CornerMarkers(
                dictionary=str(markers_d["dictionary"]),
                ids=_quad_ids(markers_d["ids"]),
                side_mm=float(markers_d["side_mm"]),
                inset_mm=float(markers_d["inset_mm"]),
            )
        felt_d = data["felt"]
        felt = None
        if felt_d is not None:
            felt = FeltModel(
                mean=_triple(felt_d["mean"]),
                cov=tuple(float(v) for v in felt_d["cov"]),
                lightness_weight=float(felt_d["lightness_weight"]),
                felt_score_p99=float(felt_d["felt_score_p99"]),
                frames=int(felt_d["frames"]),
                pixels=int(felt_d["pixels"]),
            )
        pic_d = data["reference_picture"]
        picture = None
        if pic_d is not None:
            picture = ReferenceImage(png_b64=str(pic_d["png_b64"]), scale=float(pic_d["scale"]))
            if not 0 < picture.scale <= 1:
                raise ValueError(f"reference picture scale must be in (0, 1], got {picture.scale}")
            picture.image()  # decodes, or raises CorruptCalibrationError (a ValueError)
        source = data["source"]
        if source not in ("markers", "manual"):
            raise ValueError(f"unknown calibration source {source!r}")
        refs = {
            int(k): tuple((float(p[0]), float(p[1])) for p in v)
            for k, v in data["reference_corners_px"].items()
        }
        if any(len(v) != 4 for v in refs.values()):
            raise ValueError("each reference marker needs four corners")
        return cls(
            table_id=str(data["table_id"]),
            created_at=str(data["created_at"]),
            intrinsics=intr,
            intrinsics_rms_px=float(data["intrinsics_rms_px"]),
            pose=pose,
            plane=PlaneMap(
                intrinsics=intr, homography_px_to_mm=tuple(float(v) for v in data["homography_px_to_mm"])
            ),
            plane_rms_mm=float(data["plane_rms_mm"]),
            layout=ThrowBoxLayout(**{k: float(v) for k, v in data["layout"].items()}),
            source=source,
            markers=markers,
            reference_corners_px=refs,
            felt=felt,
            reference_picture=picture,
            marks=_marks_from(data),
            marks_detector=None if data.get("marks_detector") is None else str(data["marks_detector"]),
        )

    def require_resolution(self, image: object) -> None:
        """Raise `ResolutionMismatchError` when a frame is not of the calibrated resolution."""
        img = check_image(image, name="frame")
        if resolution_wh(img) != self.resolution_wh:
            raise ResolutionMismatchError(
                f"frame is {resolution_wh(img)[0]}x{resolution_wh(img)[1]} px but table {self.table_id!r} "
                f"was calibrated at {self.resolution_wh[0]}x{self.resolution_wh[1]} px"
            )

    def pixel_to_mm(self, points_px: object) -> FloatArray:
        """Raw pixels -> felt mm (points on the felt)."""
        return self.plane.pixel_to_mm(points_px)

    def mm_to_pixel(self, points_mm: object) -> FloatArray:
        """Felt mm -> raw pixels."""
        return self.plane.mm_to_pixel(points_mm)

    def layout_boxes_px(self) -> dict[int, tuple[float, float, float, float]]:
        """Each labelled layout box's printed outline in the frame: face -> xyxy (px) of its corners."""
        out: dict[int, tuple[float, float, float, float]] = {}
        for face, rect in self.layout.layout_boxes().items():
            px = self.mm_to_pixel(np.asarray(rect.corners, np.float64))
            out[face] = (
                float(px[:, 0].min()),
                float(px[:, 1].min()),
                float(px[:, 0].max()),
                float(px[:, 1].max()),
            )
        return out

    def layout_box_at_mm(self, x_mm: float, y_mm: float) -> int | None:
        """Face of the labelled layout box (593.1(b)(4)) containing a felt point, or None."""
        return self.layout.layout_box_at(x_mm, y_mm)

    def layout_box_at_pixel(self, u_px: float, v_px: float, *, height_mm: float = 0.0) -> int | None:
        """Face of the layout box under a pixel; `height_mm` > 0 for points above the felt (a die top)."""
        if height_mm > 0:
            xy = pixel_to_plane_at_height(self.camera, [(u_px, v_px)], z_mm=height_mm)[0]
        else:
            xy = self.pixel_to_mm([(u_px, v_px)])[0]
        return self.layout.layout_box_at(float(xy[0]), float(xy[1]))

    def die_edge_px_at(self, x_mm: float, y_mm: float) -> float:
        """Expected die edge in pixels for a die resting with its centre at (x, y) mm."""
        return die_edge_px(self.camera, x_mm=x_mm, y_mm=y_mm, die_edge_mm=self.layout.die_edge_mm)

    def box_mask(self, *, inset_mm: float = 0.0) -> NDArray[np.uint8]:
        """255 inside the throw box (shrunk by `inset_mm`), 0 elsewhere, at the calibrated resolution."""
        w, d = self.layout.width_mm, self.layout.depth_mm
        return self._polygon_mask(_outline_mm(inset_mm, inset_mm, w - inset_mm, d - inset_mm))

    def felt_mask(self) -> NDArray[np.uint8]:
        """Pixels used for the felt model: the throw area, inset from the walls, without corner markers."""
        area = self.layout.throw_area
        mask = self._polygon_mask(
            _outline_mm(
                area.x0 + FELT_INSET_MM,
                area.y0 + FELT_INSET_MM,
                area.x1 - FELT_INSET_MM,
                area.y1 - FELT_INSET_MM,
            )
        )
        if self.markers is not None:
            for quad in self.markers.corners_mm(self.layout).values():
                pad = FELT_INSET_MM
                x0, y0 = quad.min(axis=0) - pad
                x1, y1 = quad.max(axis=0) + pad
                mask[self._polygon_mask(_outline_mm(x0, y0, x1, y1)) > 0] = 0
        return mask

    def _polygon_mask(self, outline_mm: FloatArray) -> NDArray[np.uint8]:
        w, h = self.resolution_wh
        poly = self.mm_to_pixel(outline_mm)
        mask = np.zeros((h, w), dtype=np.uint8)
        cv2.fillPoly(mask, [np.round(poly * 16).astype(np.int32)], 255, lineType=cv2.LINE_8, shift=4)
        return mask

    def not_felt_score(self, image: object) -> NDArray[np.float32]:
        """Per-pixel "not felt" score (see `calibration.felt`); requires a fitted felt model."""
        if self.felt is None:
            raise ValueError(f"table {self.table_id!r} has no felt model: recalibrate with empty-box frames")
        self.require_resolution(image)
        return self.felt.not_felt_score(image)


def canonical_json(data: object) -> str:
    """Deterministic JSON (sorted keys, no spaces): the text a checksum is computed over."""
    return json.dumps(data, sort_keys=True, separators=(",", ":"), allow_nan=False)


def intrinsics_to_dict(intr: CameraIntrinsics) -> dict[str, Any]:
    """Plain JSON-able form of camera intrinsics."""
    return {
        "fx": intr.fx,
        "fy": intr.fy,
        "cx": intr.cx,
        "cy": intr.cy,
        "width_px": intr.width_px,
        "height_px": intr.height_px,
        "dist": list(intr.dist),
    }


def intrinsics_from_dict(data: dict[str, Any]) -> CameraIntrinsics:
    """Inverse of `intrinsics_to_dict`; raises KeyError, TypeError or ValueError on malformed data."""
    dist = tuple(float(v) for v in data["dist"])
    if len(dist) != 5:
        raise ValueError(f"expected 5 distortion coefficients, got {len(dist)}")
    return CameraIntrinsics(
        fx=float(data["fx"]),
        fy=float(data["fy"]),
        cx=float(data["cx"]),
        cy=float(data["cy"]),
        width_px=int(data["width_px"]),
        height_px=int(data["height_px"]),
        dist=dist,
    )


def pose_to_dict(pose: CameraPose) -> dict[str, Any]:
    """Plain JSON-able form of a camera pose (Rodrigues vector and translation, mm)."""
    return {"rvec": list(pose.rvec), "tvec": list(pose.tvec)}


def pose_from_dict(data: dict[str, Any]) -> CameraPose:
    """Inverse of `pose_to_dict`; raises KeyError, TypeError or ValueError on malformed data."""
    return CameraPose(rvec=_triple(data["rvec"]), tvec=_triple(data["tvec"]))


def camera_to_dict(camera: Camera) -> dict[str, Any]:
    """A camera's intrinsics and pose as JSON: the one camera form of the table calibration, the generator's
    ground truth (`datasets.format`) and the demo clips' `video.json`."""
    return {"intrinsics": intrinsics_to_dict(camera.intrinsics), "pose": pose_to_dict(camera.pose)}


def camera_from_dict(data: dict[str, Any]) -> Camera:
    """Inverse of `camera_to_dict`; raises KeyError, TypeError or ValueError on malformed data."""
    return Camera(intrinsics_from_dict(data["intrinsics"]), pose_from_dict(data["pose"]))


def _triple(values: object) -> tuple[float, float, float]:
    seq = [float(v) for v in values]  # type: ignore[attr-defined]
    if len(seq) != 3:
        raise ValueError(f"expected 3 numbers, got {len(seq)}")
    return (seq[0], seq[1], seq[2])


def _quad_ids(values: object) -> tuple[int, int, int, int]:
    seq = [int(v) for v in values]  # type: ignore[attr-defined]
    if len(seq) != 4:
        raise ValueError(f"expected 4 marker ids, got {len(seq)}")
    return (seq[0], seq[1], seq[2], seq[3])


def _outline_mm(x0: float, y0: float, x1: float, y1: float, *, step_mm: float = 10.0) -> FloatArray:
    """A rectangle densely sampled along its edges, so it stays accurate through lens distortion."""
    n_x = max(2, int(np.ceil((x1 - x0) / step_mm)) + 1)
    n_y = max(2, int(np.ceil((y1 - y0) / step_mm)) + 1)
    xs, ys = np.linspace(x0, x1, n_x), np.linspace(y0, y1, n_y)
    return np.concatenate(
        [
            np.stack([xs, np.full_like(xs, y0)], 1),
            np.stack([np.full_like(ys, x1), ys], 1)[1:],
            np.stack([xs[::-1], np.full_like(xs, y1)], 1)[1:],
            np.stack([np.full_like(ys, x0), ys[::-1]], 1)[1:-1],
        ]
    )


def box_outline_mm(layout: ThrowBoxLayout, *, step_mm: float = 10.0) -> FloatArray:
    """The inner box outline sampled every `step_mm` (mm)."""
    return _outline_mm(0.0, 0.0, layout.width_mm, layout.depth_mm, step_mm=step_mm)


def box_corners_mm(layout: ThrowBoxLayout) -> FloatArray:
    """The four inner box corners in the order hand-given points use: dealer left, dealer right, far right,
    far left."""
    return np.array(
        [[0.0, 0.0], [layout.width_mm, 0.0], [layout.width_mm, layout.depth_mm], [0.0, layout.depth_mm]]
    )


def _check_hand_corners(corners_px: object) -> FloatArray:
    try:
        pts = np.asarray(corners_px, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise BadCornerPointsError(f"corner points are not numbers: {exc}") from exc
    if pts.shape != (4, 2) or not np.all(np.isfinite(pts)):
        raise BadCornerPointsError(
            f"exactly four finite (x, y) corner points are needed, got shape {pts.shape}"
        )
    quad = pts.astype(np.float32)
    # Out of order (a bow-tie) is not convex; the box seen from above is.
    if not cv2.isContourConvex(quad):
        raise BadCornerPointsError(
            "the four corners do not form a convex quadrilateral in the given order "
            "(expected: dealer's left, dealer's right, far right, far left)"
        )
    # Seen from above the felt, dealer's left -> dealer's right -> far right -> far left turns one way; in
    # image coordinates (y down) that is a negative oriented area. The other way is a mirror image: the
    # corners were given the wrong way round, and a homography would silently mirror the box.
    if cv2.contourArea(quad, oriented=True) > 0:
        raise BadCornerPointsError(
            "the four corners go round the wrong way (mirrored): give dealer's left, dealer's right, "
            "far right, far left"
        )
    return pts


def calibrate_table(
    frame: object,
    *,
    table_id: str,
    intrinsics: CameraIntrinsics,
    intrinsics_rms_px: float,
    layout: ThrowBoxLayout,
    markers: CornerMarkers | None = None,
    corners_px: object = None,
    felt_frames: Sequence[object] = (),
    created_at: datetime | None = None,
    max_plane_rms_mm: float = 1.5,
) -> TableCalibration:
    """Calibrate the throw box from one empty-box frame: corner markers, or four corners given by hand.

    `felt_frames` (empty-box frames; the calibration frame is always one of them) feed the felt model.
    With markers, a plane fit worse than `max_plane_rms_mm` is refused (`CalibrationRefusedError`); four
    hand-given corners always fit exactly, so they cannot be checked this way.
    """
    img = check_image(frame, name="calibration frame")
    if resolution_wh(img) != intrinsics.resolution_wh:
        raise ResolutionMismatchError(
            f"calibration frame is {resolution_wh(img)[0]}x{resolution_wh(img)[1]} px but the intrinsics are "
            f"for {intrinsics.width_px}x{intrinsics.height_px} px"
        )
    if (markers is None) == (corners_px is None):
        raise ValueError("give either corner markers or four hand-given corner points, not both or neither")
    marker_refs: dict[int, tuple[tuple[float, float], ...]] = {}
    if markers is not None:
        found = require_markers(img, markers)
        marker_mm = markers.corners_mm(layout)
        ids = list(markers.ids)
        fit = fit_plane(
            intrinsics,
            image_points_px=np.concatenate([found[i] for i in ids]),
            plane_points_mm=np.concatenate([marker_mm[i] for i in ids]),
        )
        if fit.rms_mm > max_plane_rms_mm:
            raise CalibrationRefusedError(
                f"the 16 marker corners fit a plane only to {fit.rms_mm:.2f} mm RMS "
                f"(limit {max_plane_rms_mm} mm): "
                "the marker size, inset or box size given does not match the table, or a marker is not flat "
                "or not in its corner",
                reason="plane_fit_error",
            )
        marker_refs = {i: tuple((float(p[0]), float(p[1])) for p in found[i]) for i in ids}
        source: Source = "markers"
    else:
        pts = _check_hand_corners(corners_px)
        fit = fit_plane(intrinsics, image_points_px=pts, plane_points_mm=box_corners_mm(layout))
        source = "manual"
    stamp = (created_at or datetime.now(UTC)).astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cal = TableCalibration(
        table_id=table_id,
        created_at=stamp,
        intrinsics=intrinsics,
        intrinsics_rms_px=intrinsics_rms_px,
        pose=fit.pose,
        plane=fit.plane,
        plane_rms_mm=fit.rms_mm,
        layout=layout,
        source=source,
        markers=markers,
        reference_corners_px=marker_refs,
        reference_picture=make_reference(img),
    )
    frames = [img, *felt_frames]
    for i, f in enumerate(frames):
        fi = check_image(f, name=f"felt frame {i}")
        if resolution_wh(fi) != intrinsics.resolution_wh:
            raise ResolutionMismatchError(
                f"felt frame {i} is {resolution_wh(fi)[0]}x{resolution_wh(fi)[1]} px, expected "
                f"{intrinsics.width_px}x{intrinsics.height_px}"
            )
    felt = fit_felt_model(frames, mask=cal.felt_mask())
    return _replace_felt(cal, felt)


def stale_marks_message(cal: TableCalibration, detector_tag: str | None) -> str | None:
    """Why the table's marks may not fit the reader's detector (another detector found them), or None."""
    if (
        not cal.marks
        or cal.marks_detector is None
        or detector_tag is None
        or cal.marks_detector == detector_tag
    ):
        return None
    return (
        f"table {cal.table_id!r}: its table marks were found by the detector {cal.marks_detector}, but the "
        f"reader's is {detector_tag}: print it now boxes may be counted as dice (an over count, left to a "
        "person); calibrate the table again"
    )


def _marks_from(data: dict[str, Any]) -> tuple[TableMark, ...]:
    """The stored table marks; none when the key is absent (a calibration from before 2026-12-02)."""
    if "marks" not in data:
        return ()
    if not data["marks"]:
        # `to_dict` leaves the key out when there are none: an empty list would change the calibration id.
        raise ValueError("an empty 'marks' list: a calibration without marks leaves the key out")
    try:
        return tuple(TableMark.from_dict(m) for m in data["marks"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed table marks ({type(exc).__name__}: {exc})") from exc


def _replace_felt(cal: TableCalibration, felt: FeltModel) -> TableCalibration:
    return replace(cal, felt=felt)


def describe(cal: TableCalibration) -> dict[str, Any]:
    """A short JSON-able summary for the CLI."""
    grid = [
        cal.die_edge_px_at(x, y)
        for x in (cal.layout.die_edge_mm, cal.layout.width_mm - cal.layout.die_edge_mm)
        for y in (cal.layout.die_edge_mm, cal.layout.depth_mm - cal.layout.die_edge_mm)
    ]
    cam = cal.pose.position_mm
    return {
        "table_id": cal.table_id,
        "calibration_id": cal.calibration_id,
        "source": cal.source,
        "resolution_wh": list(cal.resolution_wh),
        "fx_px": round(cal.intrinsics.fx, 2),
        "intrinsics_rms_px": round(cal.intrinsics_rms_px, 4),
        "plane_fit_rms_mm": round(cal.plane_rms_mm, 4),
        "camera_position_mm": [round(float(v), 1) for v in cam],
        "camera_tilt_deg": round(cal.pose.tilt_deg, 1),
        "die_edge_px_range": [round(min(grid), 2), round(max(grid), 2)],
        "felt_score_p99": None if cal.felt is None else round(cal.felt.felt_score_p99, 3),
        "table_marks": len(cal.marks),
    }
