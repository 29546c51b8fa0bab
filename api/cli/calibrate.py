"""`throwbox calibrate ...`: camera intrinsics, throw-box calibration, camera-moved check, overlay, selftest.

Exit codes: 0 success (for `check`: camera where it was), 2 refused or bad input (the message says why),
3 `check`: the camera moved, 4 `check`: cannot tell (markers hidden or none recorded), 1 `selftest`: a
target was missed.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import typer

if TYPE_CHECKING:
    import numpy as np

    from calibration.table import TableCalibration

DATA_DIR_HELP = "Directory of calibration files (the service reads $THROWBOX_DATA_DIR/calibration)."
DEFAULT_DATA_DIR = Path("data/calibration")

EXIT_REFUSED = 2
EXIT_MOVED = 3
EXIT_UNKNOWN = 4


def _fail(command: str, exc: Exception) -> NoReturn:
    typer.echo(f"throwbox calibrate {command}: {exc}", err=True)
    raise typer.Exit(EXIT_REFUSED) from exc


def _read_through_calibration(
    cal: TableCalibration, dice_frame: np.ndarray, empty_frames: list[np.ndarray], n_dice: int
) -> tuple[str, tuple[int, ...]]:
    """The selftest's dice frame read as a table with this calibration reads it (its table marks found
    on the empty frames as `calibrate table` finds them): the verdict and the faces."""
    from dataclasses import replace

    from vision.reader import Reader
    from vision.table.geometry import TableGeometry
    from vision.types import Frame

    reader = Reader(threads=1)
    marked = replace(cal, marks=reader.table_marks_of(cal, empty_frames))
    roll = reader.read(
        Frame(image=dice_frame, frame_id="selftest"),
        expected_dice=n_dice,
        geometry=TableGeometry.from_calibration(marked),
    )
    return roll.verdict.value, roll.faces


def _parse_corners(text: str) -> list[tuple[float, float]]:
    from calibration.errors import BadCornerPointsError

    try:
        points = [
            tuple(float(v) for v in pair.split(",")) for pair in text.replace(" ", "").split(";") if pair
        ]
    except ValueError as exc:
        raise BadCornerPointsError(f"cannot parse --corners {text!r}: expected 'x,y;x,y;x,y;x,y'") from exc
    if len(points) != 4 or any(len(p) != 2 for p in points):
        raise BadCornerPointsError(
            f"--corners needs four 'x,y' points separated by ';' (dealer's left, dealer's right, far right, "
            f"far left), got {text!r}"
        )
    return [(p[0], p[1]) for p in points]


def _emit(doc: dict[str, Any], *, as_json: bool, lines: list[str]) -> None:
    if as_json:
        typer.echo(json.dumps(doc, sort_keys=True))
    else:
        for line in lines:
            typer.echo(line)


def oblique_advice(tilt_deg: float) -> str | None:
    """What a camera leaning past `JudgeConfig.max_cocked_camera_tilt_deg` costs; None below it."""
    from vision.judge.config import JudgeConfig

    limit = JudgeConfig().max_cocked_camera_tilt_deg
    if tilt_deg <= limit:
        return None
    return (
        f"over {limit:g} deg, the reader leaves every die it sees cocked on one side to a person (an "
        "oblique camera reads the face turned toward it, not the uppermost one), and on synthetic throws it "
        "leaves far more good rolls to a person, and sends more back, than from straight above, though it "
        "reads faces from the die-top plane (README, 'Invalid and void rolls', 'Measured now'; docs/judge.md "
        "and docs/reader.md, 'Under an oblique camera'); mount the camera over the box if the table allows"
    )


def intrinsics(
    images: list[Path] = typer.Argument(..., help="Photos of the calibration board.", show_default=False),
    board: str = typer.Option(
        ...,
        "--board",
        help="charuco:COLSxROWS:SQUARE_MM:MARKER_MM[:DICT] or chessboard:COLSxROWS:SQUARE_MM (squares).",
    ),
    table: str | None = typer.Option(None, "--table", help="Store as <data-dir>/<ID>.intrinsics.json."),
    out: Path | None = typer.Option(None, "--out", help="Store here instead (a .json file)."),
    data_dir: Path = typer.Option(DEFAULT_DATA_DIR, "--data-dir", help=DATA_DIR_HELP),
    max_rms_px: float = typer.Option(1.0, "--max-rms-px", help="Refuse above this reprojection error."),
    min_views: int = typer.Option(5, "--min-views", min=3, help="Refuse with fewer usable board views."),
    free_k3: bool = typer.Option(
        False, "--free-k3", help="Also fit k3 (wide lenses; needs many views spread to the corners)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Camera intrinsics and lens distortion from board photos; refuses a bad calibration (exit 2)."""
    from calibration.board import BoardSpec
    from calibration.errors import CalibrationError
    from calibration.images import read_image
    from calibration.intrinsics import IntrinsicsLimits, calibrate_intrinsics
    from calibration.store import intrinsics_path, save_intrinsics

    try:
        if (table is None) == (out is None):
            raise ValueError("give exactly one of --table ID or --out FILE")
        spec = BoardSpec.parse(board)
        target = out if out is not None else intrinsics_path(data_dir, table or "")
        pictures = [read_image(p) for p in images]
        result = calibrate_intrinsics(
            pictures,
            spec,
            limits=IntrinsicsLimits(min_views=min_views, max_rms_px=max_rms_px, fix_k3=not free_k3),
        )
        checksum = save_intrinsics(result, target)
    except (CalibrationError, ValueError) as exc:
        _fail("intrinsics", exc)
    k = result.intrinsics
    doc = {
        "path": str(target),
        "checksum": f"sha256:{checksum}",
        "board": result.board,
        "views_used": result.views_used,
        "images_without_board": [str(images[i]) for i in result.views_without_board],
        "rms_px": result.rms_px,
        "coverage": result.coverage,
        "resolution_wh": list(k.resolution_wh),
        "fx": k.fx,
        "fy": k.fy,
        "cx": k.cx,
        "cy": k.cy,
        "dist": list(k.dist),
        "hfov_deg": result.hfov_deg,
    }
    _emit(
        doc,
        as_json=as_json,
        lines=[
            f"intrinsics from {result.views_used} of {len(images)} images ({result.board}); "
            f"reprojection RMS {result.rms_px:.3f} px, coverage {result.coverage:.0%}",
            f"  fx {k.fx:.2f}  fy {k.fy:.2f}  cx {k.cx:.2f}  cy {k.cy:.2f}  hfov {result.hfov_deg:.1f} deg",
            f"  dist {', '.join(f'{d:.5f}' for d in k.dist)}",
            f"  written to {target}",
        ],
    )


def table_cmd(
    frame: Path = typer.Argument(..., help="A frame of the empty throw box.", show_default=False),
    felt_frames: list[Path] = typer.Argument(None, help="More empty-box frames for the felt model."),
    table: str = typer.Option(..., "--table", help="Table id (the file is <data-dir>/<ID>.json)."),
    data_dir: Path = typer.Option(DEFAULT_DATA_DIR, "--data-dir", help=DATA_DIR_HELP),
    intrinsics_file: Path | None = typer.Option(
        None, "--intrinsics", help="Intrinsics file (default <data-dir>/<ID>.intrinsics.json)."
    ),
    corners: str | None = typer.Option(
        None,
        "--corners",
        help="Box corners by hand instead of markers: 'x,y;x,y;x,y;x,y' in pixels, dealer's left, "
        "dealer's right, far right, far left.",
    ),
    marker_dict: str = typer.Option("DICT_4X4_50", "--marker-dict", help="ArUco dictionary of the markers."),
    marker_ids: str = typer.Option(
        "0,1,2,3", "--marker-ids", help="Ids at dealer left/right, far right/left."
    ),
    marker_mm: float = typer.Option(30.0, "--marker-mm", help="Marker side (black border included)."),
    marker_inset_mm: float = typer.Option(5.0, "--marker-inset-mm", help="Gap from the walls to the marker."),
    width_mm: float = typer.Option(600.0, "--width-mm", help="Inner box width (dealer's left to right)."),
    depth_mm: float = typer.Option(450.0, "--depth-mm", help="Inner box depth (away from the dealer)."),
    wall_height_mm: float = typer.Option(60.0, "--wall-height-mm", help="Wall height."),
    strip_depth_mm: float = typer.Option(70.0, "--strip-depth-mm", help="Depth of the layout boxes."),
    strip_margin_mm: float = typer.Option(15.0, "--strip-margin-mm", help="Gap around the layout boxes."),
    die_edge_mm: float = typer.Option(19.0, "--die-edge-mm", help="Die edge (casino dice: 19 mm)."),
    overlay: Path | None = typer.Option(None, "--overlay", help="Also write the overlay image here."),
    marks: bool = typer.Option(
        True,
        "--marks/--no-marks",
        help="Look at the empty box with the die detector and remember what it takes for dice (print, "
        "logos) so reads leave it out while it looks the same.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Calibrate the throw box (homography, pose, layout, die scale, felt, table marks) and store it."""
    _calibrate_table(
        frame=frame,
        felt_frames=felt_frames,
        table=table,
        data_dir=data_dir,
        intrinsics_file=intrinsics_file,
        corners=corners,
        marker_dict=marker_dict,
        marker_ids=marker_ids,
        marker_mm=marker_mm,
        marker_inset_mm=marker_inset_mm,
        width_mm=width_mm,
        depth_mm=depth_mm,
        wall_height_mm=wall_height_mm,
        strip_depth_mm=strip_depth_mm,
        strip_margin_mm=strip_margin_mm,
        die_edge_mm=die_edge_mm,
        overlay=overlay,
        marks=marks,
        as_json=as_json,
    )


def _calibrate_table(
    *,
    frame: Path,
    felt_frames: list[Path],
    table: str,
    data_dir: Path,
    intrinsics_file: Path | None,
    corners: str | None,
    marker_dict: str,
    marker_ids: str,
    marker_mm: float,
    marker_inset_mm: float,
    width_mm: float,
    depth_mm: float,
    wall_height_mm: float,
    strip_depth_mm: float,
    strip_margin_mm: float,
    die_edge_mm: float,
    overlay: Path | None,
    marks: bool,
    as_json: bool,
) -> None:
    """The work of `calibrate table`: calibrate, check, store, and say what was found."""
    import cv2

    from calibration.errors import CalibrationError
    from calibration.images import read_image
    from calibration.layout import ThrowBoxLayout
    from calibration.markers import CornerMarkers
    from calibration.overlay import draw_overlay
    from calibration.store import check_table_id, intrinsics_path, load_intrinsics, save_table
    from calibration.table import calibrate_table, describe
    from vision.onnx_session import ModelError

    try:
        check_table_id(table)
        layout = ThrowBoxLayout(
            width_mm=width_mm,
            depth_mm=depth_mm,
            wall_height_mm=wall_height_mm,
            strip_depth_mm=strip_depth_mm,
            strip_margin_mm=strip_margin_mm,
            die_edge_mm=die_edge_mm,
        )
        markers = None
        hand = None
        if corners is not None:
            hand = _parse_corners(corners)
        else:
            ids = tuple(int(v) for v in marker_ids.split(","))
            if len(ids) != 4:
                raise ValueError(f"--marker-ids needs four ids, got {marker_ids!r}")
            markers = CornerMarkers(
                dictionary=marker_dict.upper(),
                ids=(ids[0], ids[1], ids[2], ids[3]),
                side_mm=marker_mm,
                inset_mm=marker_inset_mm,
            )
        image = read_image(frame)
        stored = load_intrinsics(
            intrinsics_file or intrinsics_path(data_dir, table),
            resolution_wh=(image.shape[1], image.shape[0]),
        )
        empties = [read_image(p) for p in felt_frames or []]
        cal = calibrate_table(
            image,
            table_id=table,
            intrinsics=stored.intrinsics,
            intrinsics_rms_px=stored.rms_px,
            layout=layout,
            markers=markers,
            corners_px=hand,
            felt_frames=empties,
        )
        if marks:
            from dataclasses import replace

            from vision.reader import Reader

            reader = Reader(threads=1)
            marks_found = reader.table_marks_of(cal, [image, *empties])
            cal = replace(cal, marks=marks_found, marks_detector=reader.models.get("detector"))
        path = save_table(cal, data_dir)
        if overlay is not None:
            overlay.parent.mkdir(parents=True, exist_ok=True)
            if not cv2.imwrite(str(overlay), draw_overlay(image, cal)):
                raise ValueError(f"cannot write the overlay to {overlay} (unknown image extension?)")
    except ModelError as exc:
        _fail("table", ValueError(f"{exc} (the table marks need the die detector; --no-marks skips them)"))
    except (CalibrationError, ValueError) as exc:
        _fail("table", exc)
    doc = {"path": str(path), **describe(cal)}
    source_text = "corner markers" if cal.source == "markers" else "hand-given corners"
    tilt_line = f"  camera tilt {doc['camera_tilt_deg']:.1f} deg from straight down"
    if advice := oblique_advice(cal.pose.tilt_deg):  # unrounded, as the judge compares it
        doc["camera_advice"] = advice
        tilt_line += f": {advice}"
    if overlay is not None:
        doc["overlay"] = str(overlay)
    _emit(
        doc,
        as_json=as_json,
        lines=[
            f"table {table} calibrated from {source_text} ({cal.calibration_id})",
            f"  plane fit RMS {cal.plane_rms_mm:.3f} mm; camera at "
            + ", ".join(f"{v:.0f}" for v in doc["camera_position_mm"])
            + " mm",
            tilt_line,
            f"  die edge {doc['die_edge_px_range'][0]:.1f}..{doc['die_edge_px_range'][1]:.1f} px "
            "across the box",
            f"  felt score p99 {doc['felt_score_p99']}",
            f"  table marks (what the die detector takes for dice on the empty box): {doc['table_marks']}"
            + ("" if marks else " (not looked for: --no-marks)"),
            f"  written to {path}" + (f"; overlay {overlay}" if overlay is not None else ""),
        ],
    )


def check(
    frame: Path = typer.Argument(..., help="A current frame from the table camera.", show_default=False),
    table: str = typer.Option(..., "--table", help="Table id."),
    data_dir: Path = typer.Option(DEFAULT_DATA_DIR, "--data-dir", help=DATA_DIR_HELP),
    threshold_px: float = typer.Option(1.5, "--threshold-px", help="Marker shift that counts as moved."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Is the camera still where it was calibrated? Exit 0 yes, 3 moved, 4 cannot tell, 2 error."""
    from calibration.errors import CalibrationError
    from calibration.images import read_image
    from calibration.moved import check_camera
    from calibration.store import load_table

    try:
        image = read_image(frame)
        cal = load_table(data_dir, table, resolution_wh=(image.shape[1], image.shape[0]))
        result = check_camera(cal, image, threshold_px=threshold_px)
    except (CalibrationError, ValueError) as exc:
        _fail("check", exc)
    doc = {
        "table_id": table,
        "calibration_id": cal.calibration_id,
        "status": result.status,
        "method": result.method,
        "moved": result.moved,
        "reason": result.reason,
        "markers_found": result.markers_found,
        "max_shift_px": result.max_shift_px,
        "median_shift_px": result.median_shift_px,
        "rotation_deg": result.rotation_deg,
        "threshold_px": result.threshold_px,
    }
    label = {"ok": "OK", "moved": "MOVED", "unknown": "UNKNOWN"}[result.status]
    _emit(doc, as_json=as_json, lines=[f"table {table}: {label}: {result.reason}"])
    if result.status == "moved":
        raise typer.Exit(EXIT_MOVED)
    if result.status == "unknown":
        raise typer.Exit(EXIT_UNKNOWN)


def overlay_cmd(
    frame: Path = typer.Argument(..., help="A frame from the table camera.", show_default=False),
    out: Path = typer.Option(..., "--out", help="Image file to write (PNG or JPEG)."),
    table: str = typer.Option(..., "--table", help="Table id."),
    data_dir: Path = typer.Option(DEFAULT_DATA_DIR, "--data-dir", help=DATA_DIR_HELP),
    grid_mm: float = typer.Option(50.0, "--grid-mm", min=5.0, help="Millimetre grid spacing."),
) -> None:
    """Draw the stored calibration (box, mm grid, labelled layout boxes, die scale) over a frame."""
    import cv2

    from calibration.errors import CalibrationError
    from calibration.images import read_image
    from calibration.overlay import draw_overlay
    from calibration.store import load_table

    try:
        image = read_image(frame)
        cal = load_table(data_dir, table, resolution_wh=(image.shape[1], image.shape[0]))
        out.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(out), draw_overlay(image, cal, grid_mm=grid_mm)):
            raise ValueError(f"cannot write {out} (unknown image extension?)")
    except (CalibrationError, ValueError) as exc:
        _fail("overlay", exc)
    typer.echo(f"overlay written to {out}")


def rectify(
    frame: Path = typer.Argument(..., help="A frame from the table camera.", show_default=False),
    out: Path = typer.Option(..., "--out", help="Image file to write (PNG or JPEG)."),
    table: str = typer.Option(..., "--table", help="Table id."),
    data_dir: Path = typer.Option(DEFAULT_DATA_DIR, "--data-dir", help=DATA_DIR_HELP),
    px_per_mm: float = typer.Option(2.0, "--px-per-mm", help="Scale of the top-down view."),
    margin_mm: float = typer.Option(0.0, "--margin-mm", min=0.0, help="Show this much beyond the walls."),
) -> None:
    """Write the top-down millimetre view of the throw box (undistorted; dealer's side at the bottom)."""
    import cv2

    from calibration.errors import CalibrationError
    from calibration.images import read_image
    from calibration.rectify import Rectifier
    from calibration.store import load_table

    try:
        image = read_image(frame)
        cal = load_table(data_dir, table, resolution_wh=(image.shape[1], image.shape[0]))
        top = Rectifier.build(cal, px_per_mm=px_per_mm, margin_mm=margin_mm).rectify(image)
        out.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(out), top):
            raise ValueError(f"cannot write {out} (unknown image extension?)")
    except (CalibrationError, ValueError) as exc:
        _fail("rectify", exc)
    typer.echo(f"top-down view ({top.shape[1]}x{top.shape[0]} px, {px_per_mm:g} px/mm) written to {out}")


def selftest(
    seed: int = typer.Option(0, "--seed", help="Scene seed."),
    views: int = typer.Option(12, "--views", min=5, help="ChArUco board views for the intrinsics."),
    width_px: int = typer.Option(1280, "--width", help="Synthetic camera width (px)."),
    height_px: int = typer.Option(720, "--height", help="Synthetic camera height (px)."),
    out_dir: Path | None = typer.Option(
        None, "--out-dir", help="Write the scene frames, stored calibration and overlay here."
    ),
    read: bool = typer.Option(
        True,
        "--read/--no-read",
        help="Also read the dice frame through the calibration with the committed models (table marks "
        "found as `calibrate table` finds them) and check the faces.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as JSON."),
) -> None:
    """Calibrate synthetic scenes with a known camera and report the errors against the truth."""
    from dataclasses import asdict

    from calibration.selftest.evaluate import evaluate_calibration

    log = None if as_json else typer.echo
    result = evaluate_calibration(
        seed=seed,
        views=views,
        width_px=width_px,
        height_px=height_px,
        log=log,
        out_dir=out_dir,
        read_dice=_read_through_calibration if read else None,
    )
    doc = asdict(result)
    doc["checks"] = result.checks
    doc["passed"] = result.passed
    if as_json:
        typer.echo(json.dumps(doc, sort_keys=True))
    else:
        r = result
        typer.echo(f"camera {r.resolution_wh[0]}x{r.resolution_wh[1]}, {r.views_used} board views")
        typer.echo(f"  intrinsics RMS reprojection     {r.intrinsics_rms_px:.3f} px")
        typer.echo(f"  focal length error fx / fy      {r.fx_error_pct:+.3f} % / {r.fy_error_pct:+.3f} %")
        typer.echo(f"  principal point error           {r.principal_point_error_px:.2f} px")
        typer.echo(
            f"  homography error across box     max {r.homography_max_mm:.3f} mm, "
            f"RMS {r.homography_rms_mm:.3f} mm"
        )
        typer.echo(f"  layout box corners              max {r.layout_corner_max_mm:.3f} mm")
        typer.echo(f"  layout box centres attributed   {r.layout_boxes_correct} / 6")
        typer.echo(f"  die scale vs measured dice      max {r.die_scale_max_deviation_pct:.2f} %")
        typer.echo(
            f"  not-felt score                  felt p99 {r.felt_score_p99:.2f}, "
            f"dice median {r.die_score_median:.1f}"
        )
        for m in r.moves:
            shift = "-" if m.max_shift_px is None else f"{m.max_shift_px:.2f} px"
            verdict = "right" if m.correct else "WRONG"
            typer.echo(
                f"  camera check ({m.method:<7}) {m.name:<38} {m.status:<7} max shift {shift:<10} {verdict}"
            )
        if r.dice_read is not None:
            typer.echo(
                f"  dice frame read through it      {r.dice_read_verdict} {list(r.dice_read)} "
                f"(rendered {sorted(r.dice_rendered)})"
            )
        for name, ok in r.checks.items():
            typer.echo(f"  [{'pass' if ok else 'FAIL'}] {name}")
    if not result.passed:
        raise typer.Exit(1)


def board(
    out: Path = typer.Option(..., "--out", help="Image file to write (PNG)."),
    board_spec: str = typer.Option(
        "charuco:7x5:40:30:DICT_5X5_100", "--board", help="Board to draw (see `calibrate intrinsics`)."
    ),
    px_per_mm: float = typer.Option(10.0, "--px-per-mm", min=1.0, help="Print resolution."),
) -> None:
    """Write a printable calibration board (print at 100 %, measure a square, pass the size)."""
    import cv2

    from calibration.board import BoardSpec
    from calibration.errors import CalibrationError

    try:
        spec = BoardSpec.parse(board_spec)
        out.parent.mkdir(parents=True, exist_ok=True)
        if not cv2.imwrite(str(out), spec.render(px_per_mm=px_per_mm)):
            raise ValueError(f"cannot write {out} (unknown image extension?)")
    except (CalibrationError, ValueError) as exc:
        _fail("board", exc)
    typer.echo(f"{spec.describe()} written to {out}")


def register(app: typer.Typer) -> None:
    """Attach the `calibrate` command group to the CLI."""
    calib = typer.Typer(
        name="calibrate",
        help="Calibrate a table's camera and throw box; check that the camera has not moved.",
        no_args_is_help=True,
    )
    app.add_typer(calib, name="calibrate")

    calib.command()(intrinsics)
    calib.command("table")(table_cmd)
    calib.command()(check)
    calib.command("overlay")(overlay_cmd)
    calib.command()(rectify)
    calib.command()(selftest)
    calib.command()(board)
