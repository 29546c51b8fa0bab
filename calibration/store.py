"""Per-table calibration files: versioned JSON with a SHA-256 checksum, written atomically.

Layout of a data directory (`--data-dir`, default `./data/calibration`; the service reads
`$THROWBOX_DATA_DIR/calibration`):

    <table_id>.json             the table calibration (`TableCalibration`)
    <table_id>.intrinsics.json  the camera intrinsics it was built from

Each file is `{"format": ..., "version": 1, "checksum": "sha256:<hex>", "body": {...}}` where the checksum
covers the canonical JSON of `body`. Loading checks, in order: the file exists (`CalibrationNotFoundError`),
is JSON with the right format tag and a body (`CorruptCalibrationError`), has this version
(`CalibrationVersionError`), matches its checksum and parses (`CorruptCalibrationError`), and, when the
caller says which resolution it will use, was made for it (`ResolutionMismatchError`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from calibration.camera import CameraIntrinsics
from calibration.errors import (
    CalibrationChangedError,
    CalibrationNotFoundError,
    CalibrationVersionError,
    CorruptCalibrationError,
    InvalidTableIdError,
    ResolutionMismatchError,
)
from calibration.intrinsics import IntrinsicsResult
from calibration.table import TableCalibration, canonical_json, intrinsics_from_dict, intrinsics_to_dict

FORMAT_VERSION = 1
TABLE_FORMAT = "throwbox.table-calibration"
INTRINSICS_FORMAT = "throwbox.camera-intrinsics"
DEFAULT_DATA_DIR = Path("data/calibration")

_TABLE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def check_table_id(table_id: str) -> str:
    """Table ids become file names: letters, digits, '_', '-', '.', at most 64, not starting with '.'."""
    if not _TABLE_ID.match(table_id) or ".." in table_id:
        raise InvalidTableIdError(
            f"invalid table id {table_id!r}: use 1-64 letters, digits, '_', '-' or '.', starting with a "
            "letter or digit"
        )
    return table_id


def table_path(data_dir: Path, table_id: str) -> Path:
    """Where a table's calibration lives."""
    return data_dir / f"{check_table_id(table_id)}.json"


def intrinsics_path(data_dir: Path, table_id: str) -> Path:
    """Where a table camera's intrinsics live."""
    return data_dir / f"{check_table_id(table_id)}.intrinsics.json"


def write_whole(path: Path, data: bytes, *, mode: int = 0o644) -> None:
    """Write `data` to `path` atomically (a temporary file beside it, then `os.replace`): a reader never sees
    half a file. `mode`: mkstemp makes 0600; 0644 lets the service (same host, maybe another user) read it.
    The one writer of the stored calibration, enrollment and a worker's copies of them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _write(path: Path, fmt: str, body: dict[str, Any]) -> str:
    text = canonical_json(body)
    checksum = hashlib.sha256(text.encode()).hexdigest()
    doc = {"format": fmt, "version": FORMAT_VERSION, "checksum": f"sha256:{checksum}", "body": body}
    write_whole(path, (json.dumps(doc, indent=1, sort_keys=True, allow_nan=False) + "\n").encode("utf-8"))
    return checksum


def _read(path: Path, fmt: str) -> dict[str, Any]:
    if not path.is_file():
        raise CalibrationNotFoundError("no calibration file (run `throwbox calibrate` first)", path=path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorruptCalibrationError(f"not valid JSON ({exc})", path=path) from exc
    if not isinstance(doc, dict) or doc.get("format") != fmt:
        got = doc.get("format") if isinstance(doc, dict) else type(doc).__name__
        raise CorruptCalibrationError(f"not a {fmt} file (format {got!r})", path=path)
    version = doc.get("version")
    if version != FORMAT_VERSION:
        raise CalibrationVersionError(
            f"format version {version!r}; this throwbox reads version {FORMAT_VERSION} "
            "(recalibrate the table)",
            path=path,
        )
    body = doc.get("body")
    checksum = doc.get("checksum")
    if not isinstance(body, dict) or not isinstance(checksum, str):
        raise CorruptCalibrationError("missing body or checksum", path=path)
    try:
        actual = hashlib.sha256(canonical_json(body).encode()).hexdigest()
    except ValueError as exc:  # NaN or infinity in the body
        raise CorruptCalibrationError(f"body is not canonical JSON ({exc})", path=path) from exc
    if checksum != f"sha256:{actual}":
        raise CorruptCalibrationError(
            f"checksum mismatch (file says {checksum[:20]}..., content is sha256:{actual[:12]}...): "
            "the file was edited or damaged",
            path=path,
        )
    return body


def _check_resolution(path: Path, got: tuple[int, int], want: tuple[int, int] | None) -> None:
    if want is not None and tuple(got) != tuple(want):
        raise ResolutionMismatchError(
            f"calibrated for {got[0]}x{got[1]} px, but the camera delivers {want[0]}x{want[1]} px",
            path=path,
        )


def save_table(cal: TableCalibration, data_dir: Path) -> Path:
    """Write a table calibration to `<data_dir>/<table_id>.json`; returns the path."""
    path = table_path(data_dir, cal.table_id)
    _write(path, TABLE_FORMAT, cal.to_dict())
    return path


def load_table(
    data_dir: Path, table_id: str, *, resolution_wh: tuple[int, int] | None = None
) -> TableCalibration:
    """Load and verify a table calibration; `resolution_wh` is the resolution the caller will feed it.

    `table_id` may also be a recorded calibration id (`table@created#checksum`, see
    `TableCalibration.calibration_id`): then the stored file must still be that very calibration, or
    `CalibrationChangedError` says the table was recalibrated since.
    """
    if "@" not in table_id:
        return load_table_file(table_path(data_dir, table_id), resolution_wh=resolution_wh, table_id=table_id)
    table, _, rest = table_id.partition("@")
    if "#" not in rest:
        raise InvalidTableIdError(f"invalid calibration id {table_id!r}: expected table@created#checksum")
    path = table_path(data_dir, table)
    cal = load_table_file(path, resolution_wh=resolution_wh, table_id=table)
    if cal.calibration_id != table_id:
        raise CalibrationChangedError(
            f"holds calibration {cal.calibration_id}, not the recorded {table_id}: the table was "
            "recalibrated since (update the table's calibration id)",
            path=path,
        )
    return cal


def load_table_file(
    path: Path, *, resolution_wh: tuple[int, int] | None = None, table_id: str | None = None
) -> TableCalibration:
    """Load and verify a table calibration file by path."""
    body = _read(path, TABLE_FORMAT)
    try:
        cal = TableCalibration.from_dict(body)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptCalibrationError(
            f"malformed calibration ({type(exc).__name__}: {exc})", path=path
        ) from exc
    if table_id is not None and cal.table_id != table_id:
        raise CorruptCalibrationError(f"file is for table {cal.table_id!r}, not {table_id!r}", path=path)
    _check_resolution(path, cal.resolution_wh, resolution_wh)
    return cal


@dataclass(frozen=True)
class StoredIntrinsics:
    """Intrinsics read back from disk, with the RMS error and board they were calibrated with."""

    intrinsics: CameraIntrinsics
    rms_px: float
    board: str
    views_used: int
    checksum: str


def save_intrinsics(result: IntrinsicsResult, path: Path) -> str:
    """Write an accepted intrinsics calibration; returns its checksum."""
    body = {
        "intrinsics": intrinsics_to_dict(result.intrinsics),
        "rms_px": result.rms_px,
        "board": result.board,
        "views_used": result.views_used,
        "coverage": result.coverage,
    }
    return _write(path, INTRINSICS_FORMAT, body)


def load_intrinsics(path: Path, *, resolution_wh: tuple[int, int] | None = None) -> StoredIntrinsics:
    """Load and verify stored intrinsics."""
    body = _read(path, INTRINSICS_FORMAT)
    try:
        stored = StoredIntrinsics(
            intrinsics=intrinsics_from_dict(body["intrinsics"]),
            rms_px=float(body["rms_px"]),
            board=str(body["board"]),
            views_used=int(body["views_used"]),
            checksum=hashlib.sha256(canonical_json(body).encode()).hexdigest(),
        )
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise CorruptCalibrationError(
            f"malformed intrinsics ({type(exc).__name__}: {exc})", path=path
        ) from exc
    _check_resolution(path, stored.intrinsics.resolution_wh, resolution_wh)
    return stored
