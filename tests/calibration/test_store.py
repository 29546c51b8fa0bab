"""Stored calibrations: round trip, checksum, and every way a file can be refused."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from calibration.errors import (
    CalibrationChangedError,
    CalibrationFileError,
    CalibrationNotFoundError,
    CalibrationVersionError,
    CorruptCalibrationError,
    InvalidTableIdError,
    ResolutionMismatchError,
)
from calibration.store import (
    intrinsics_path,
    load_intrinsics,
    load_table,
    save_intrinsics,
    save_table,
    table_path,
)
from calibration.table import canonical_json
from tests.calibration.conftest import Scenes


def test_round_trip(scenes: Scenes, tmp_path: Path) -> None:
    path = save_table(scenes.cal, tmp_path)
    assert path == tmp_path / "t-small.json"
    loaded = load_table(tmp_path, "t-small", resolution_wh=(640, 360))
    assert loaded.to_dict() == scenes.cal.to_dict()
    assert loaded.calibration_id == scenes.cal.calibration_id
    assert loaded.calibration_id.startswith("t-small@")
    doc = json.loads(path.read_text())
    assert doc["version"] == 1 and doc["body"]["resolution_wh"] == [640, 360]
    assert doc["checksum"] == f"sha256:{scenes.cal.checksum}"


def test_intrinsics_round_trip(scenes: Scenes, tmp_path: Path) -> None:
    path = intrinsics_path(tmp_path, "t-small")
    save_intrinsics(scenes.intrinsics, path)
    stored = load_intrinsics(path, resolution_wh=(640, 360))
    assert stored.intrinsics == scenes.intrinsics.intrinsics
    assert stored.board == scenes.board.describe()
    with pytest.raises(ResolutionMismatchError):
        load_intrinsics(path, resolution_wh=(1920, 1080))


def _rewrite(path: Path, edit: str) -> None:
    doc = json.loads(path.read_text())
    if edit == "version":
        doc["version"] = 2
    elif edit == "format":
        doc["format"] = "something.else"
    elif edit == "tamper":
        doc["body"]["intrinsics"]["fx"] *= 1.01  # checksum no longer matches
    elif edit == "drop_field":
        del doc["body"]["pose"]
        doc["checksum"] = (
            "sha256:" + __import__("hashlib").sha256(canonical_json(doc["body"]).encode()).hexdigest()
        )
    elif edit == "bad_value":
        doc["body"]["intrinsics"]["fx"] = -5.0
        doc["checksum"] = (
            "sha256:" + __import__("hashlib").sha256(canonical_json(doc["body"]).encode()).hexdigest()
        )
    elif edit == "bad_picture":
        doc["body"]["reference_picture"]["png_b64"] = "bm90IGEgcG5n"  # base64 of "not a png"
        doc["checksum"] = (
            "sha256:" + __import__("hashlib").sha256(canonical_json(doc["body"]).encode()).hexdigest()
        )
    elif edit == "no_checksum":
        del doc["checksum"]
    path.write_text(json.dumps(doc))


@pytest.mark.parametrize(
    ("edit", "exception", "match"),
    [
        # written by another format version
        ("version", CalibrationVersionError, "version 2"),
        # another kind of JSON document
        ("format", CorruptCalibrationError, "not a throwbox.table-calibration"),
        # edited by hand: checksum mismatch
        ("tamper", CorruptCalibrationError, "checksum mismatch"),
        # a field missing (with a matching checksum)
        ("drop_field", CorruptCalibrationError, "malformed"),
        # a field with an impossible value (with a matching checksum)
        ("bad_value", CorruptCalibrationError, "malformed"),
        # the reference picture is not an image (with a matching checksum)
        ("bad_picture", CorruptCalibrationError, "reference picture"),
        # checksum missing
        ("no_checksum", CorruptCalibrationError, "missing body or checksum"),
    ],
)
def test_refused_files(
    scenes: Scenes, tmp_path: Path, edit: str, exception: type[CalibrationFileError], match: str
) -> None:
    path = save_table(scenes.cal, tmp_path)
    _rewrite(path, edit)
    with pytest.raises(exception, match=match) as info:
        load_table(tmp_path, "t-small")
    assert info.value.path == path


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",  # truncated / not JSON
        b"\xff\xfe\x00garbage",  # not text
        b"[1, 2, 3]",  # JSON but not an object
        b"",  # empty file
    ],
)
def test_corrupt_bytes(scenes: Scenes, tmp_path: Path, content: bytes) -> None:
    table_path(tmp_path, "t-small").write_bytes(content)
    with pytest.raises(CorruptCalibrationError):
        load_table(tmp_path, "t-small")


def test_not_found(tmp_path: Path) -> None:
    with pytest.raises(CalibrationNotFoundError, match="no calibration file"):
        load_table(tmp_path, "t-none")


def test_other_resolution(scenes: Scenes, tmp_path: Path) -> None:
    save_table(scenes.cal, tmp_path)
    with pytest.raises(ResolutionMismatchError, match="640x360 px, but the camera delivers 1280x720"):
        load_table(tmp_path, "t-small", resolution_wh=(1280, 720))


def test_file_of_another_table(scenes: Scenes, tmp_path: Path) -> None:
    path = save_table(scenes.cal, tmp_path)
    path.rename(tmp_path / "t-other.json")
    with pytest.raises(CorruptCalibrationError, match="for table 't-small'"):
        load_table(tmp_path, "t-other")


@pytest.mark.parametrize("table_id", ["../etc", "", "a/b", ".hidden", "x" * 65, "sp ace"])
def test_unsafe_table_ids(tmp_path: Path, table_id: str) -> None:
    with pytest.raises(InvalidTableIdError, match="invalid table id"):
        table_path(tmp_path, table_id)


def test_load_by_recorded_calibration_id(scenes: Scenes, tmp_path: Path) -> None:
    save_table(scenes.cal, tmp_path)
    assert load_table(tmp_path, scenes.cal.calibration_id).to_dict() == scenes.cal.to_dict()
    # Recalibrated since: same table, another calibration.
    newer = replace(scenes.cal, created_at="2030-01-01T00:00:00Z")
    save_table(newer, tmp_path)
    with pytest.raises(CalibrationChangedError, match="recalibrated"):
        load_table(tmp_path, scenes.cal.calibration_id)
    with pytest.raises(InvalidTableIdError, match="invalid calibration id"):
        load_table(tmp_path, "t-small@2030")
    with pytest.raises(InvalidTableIdError, match="invalid table id"):
        load_table(tmp_path, "../t@x#y")
