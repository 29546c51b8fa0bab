"""A calibrated table with its corner markers and printed layout, and the committed reader, shared.

Frames come from the calibration scene renderer (`calibration.selftest.scenes`): the selftest's throw box,
seen by its true 1280x720 camera (a die is about 25 px across; at half that size the detector boxes neither
the markers nor the print, so what vision/table/markers.py and vision/table/marks.py mend would not show). The
calibration is the real one (`calibrate_table` on the empty box, then the table marks the committed
detector finds on it and the corner markers' looks, as `throwbox calibrate table` stores them).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import pytest

from calibration.layout import ThrowBoxLayout
from calibration.markers import CornerMarkers
from calibration.selftest.scenes import TableScene, table_camera_pose, table_camera_truth
from calibration.table import TableCalibration, calibrate_table
from vision.reader import Reader
from vision.table.geometry import TableGeometry

LAYOUT = ThrowBoxLayout()
MARKERS = CornerMarkers()
# Three dice on the open felt, away from the markers and the printed layout strip: (x_mm, y_mm, face).
DICE = ((220.0, 300.0, 3), (340.0, 240.0, 5), (440.0, 340.0, 2))


@dataclass(frozen=True)
class Table:
    """A rendered table and its calibration (with the table marks found on its empty box)."""

    scene: TableScene
    empty: object
    cal: TableCalibration

    def geometry(self) -> TableGeometry:
        return TableGeometry.from_calibration(self.cal)


@pytest.fixture(scope="session")
def committed_reader() -> Reader:
    """The reader with the committed models, one thread."""
    return Reader(threads=1)


@pytest.fixture(scope="session")
def table(committed_reader: Reader) -> Table:
    truth = table_camera_truth(width_px=1280, height_px=720)
    scene = TableScene(LAYOUT, MARKERS, truth, table_camera_pose(LAYOUT), seed=5)
    empty = scene.frame(noise_seed=1)
    cal = calibrate_table(
        empty, table_id="t-marks", intrinsics=truth, intrinsics_rms_px=0.0, layout=LAYOUT, markers=MARKERS
    )
    marks = committed_reader.table_marks_of(cal, [empty])
    return Table(scene, empty, replace(cal, marks=marks))
