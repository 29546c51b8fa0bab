"""Typed errors of the calibration package.

Every refusal says why in its message; callers catch the class that fits what they can do about it.

    CalibrationError                 base of everything below (a ValueError: the input was wrong)
    ├── BadImageError                an image is missing, unreadable, empty or not 8-bit grey/BGR
    ├── BoardSpecError               a `--board` description cannot be parsed or describes no board
    ├── CalibrationRefusedError      a calibration ran but its result is not trustworthy (`reason` says why:
    │                                too few views, reprojection error too high, poor coverage, implausible
    │                                focal length or principal point, mixed image sizes, a box
    │                                plane the markers do not fit: settings that do not match the table)
    ├── MarkersNotFoundError         the throw-box corner markers are not all visible in a frame
    ├── BadCornerPointsError         four hand-given corner points are missing, malformed or degenerate
    ├── InvalidTableIdError          a table id (or calibration id) cannot name a calibration file
    └── CalibrationFileError         a stored calibration cannot be used (`path`: which file, if any)
        ├── CalibrationNotFoundError     there is no file for this table
        ├── CorruptCalibrationError      not JSON, wrong format tag, checksum mismatch, missing/bad fields
        ├── CalibrationVersionError      written by another format version
        ├── CalibrationChangedError      the table was recalibrated since the calibration id was recorded
        └── ResolutionMismatchError      made for another camera resolution than the frame at hand
"""

from __future__ import annotations

from pathlib import Path


class CalibrationError(ValueError):
    """Base class: a calibration input or result cannot be used."""


class BadImageError(CalibrationError):
    """An image is missing, unreadable, empty, or of an unsupported type."""


class BoardSpecError(CalibrationError):
    """A calibration-board description is malformed."""


class CalibrationRefusedError(CalibrationError):
    """A calibration was computed but is not trustworthy; `reason` is a short machine-readable tag."""

    def __init__(self, message: str, *, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


class MarkersNotFoundError(CalibrationError):
    """Not all throw-box corner markers were found in the frame."""

    def __init__(self, message: str, *, missing_ids: tuple[int, ...]) -> None:
        super().__init__(message)
        self.missing_ids = missing_ids


class BadCornerPointsError(CalibrationError):
    """Hand-given box corner points are malformed or degenerate."""


class InvalidTableIdError(CalibrationError):
    """A table id or calibration id that cannot name a calibration file."""


class CalibrationFileError(CalibrationError):
    """A stored calibration file cannot be used."""

    def __init__(self, message: str, *, path: Path | None = None) -> None:
        super().__init__(message if path is None else f"{path}: {message}")
        self.path = path


class CalibrationNotFoundError(CalibrationFileError):
    """No calibration file exists for the table."""


class CorruptCalibrationError(CalibrationFileError):
    """The file is not a valid calibration document (syntax, checksum or fields)."""


class CalibrationVersionError(CalibrationFileError):
    """The file was written by another version of the calibration format."""


class CalibrationChangedError(CalibrationFileError):
    """The stored calibration is not the one a recorded calibration id names (recalibrated since)."""


class ResolutionMismatchError(CalibrationFileError):
    """The calibration was made for another image resolution than the frame being used."""
