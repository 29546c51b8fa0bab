"""A live table's reader: the service's reader through the table's enrollment, followed as the table learns.

A table's refit (api/learning.py) or enrollment (api/enrollment.py) is stored as its enrollment record beside
its calibration (`vision.pips.enrolled.enrollment_path`, replaced whole by `os.replace`, or deleted by a roll
back to the shipped model). `POST /v1/reads` loads it on every request; a live loop reads many frames a
second, so `TableReader` looks at the record's file (its inode, size and modification time, one `stat`)
before each read and loads it again only when it changed: the next throw after a refit is stored is read with
it, and a roll back takes effect the same way, without restarting the loop.

The table's no-die filter (`vision.table.no_die`, `<table>.no-die.json`, fitted from the boxes its people
struck out) is followed the same way, by its own file: a reader through the enrollment, then the filter.

A record that cannot be used (damaged, edited, its fine-tuned file missing, fitted on another face model)
makes the table read with the shipped models, as a table with no enrollment does, and raises one
`enrollment_unusable` alert naming why (once per state of the file; the dashboard's table faults name it too,
`api.table_faults.enrollment_fault`). The shipped reader, with its second opinions, is the reader every table
starts with; reads name the models they used (`models["pips"]`), so the evidence says which it was.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from vision.table.geometry import TableGeometry
from vision.types import Frame, Roll

log = logging.getLogger("throwbox.live")

FileState = tuple[int, int, int] | None  # (inode, size, mtime ns) of a record; None: no record


class TableReader:
    """The live loop's reader of one table (`api.live.RollReader`): `shipped` through the table's enrollment
    record in `calibration_dir` where it has one, loaded again whenever the record's file changes.

    `on_unusable(message)` is called once each time the record changes into one that cannot be used."""

    def __init__(
        self,
        shipped: Any,
        *,
        calibration_dir: Path,
        table_id: str,
        on_unusable: Callable[[str], None] | None = None,
    ) -> None:
        from vision.pips.enrolled import enrollment_path
        from vision.table.no_die import no_die_path

        self.shipped = shipped
        self.table_id = table_id
        self.calibration_dir = calibration_dir
        self.path = enrollment_path(calibration_dir, table_id)
        self.no_die_path = no_die_path(calibration_dir, table_id)  # the table's no-die filter, followed too
        self.on_unusable = on_unusable
        self._state: tuple[FileState, FileState] | object = (
            object()
        )  # never the files' state: first read loads
        self._reader: Any = shipped
        self.problem: str | None = None  # why the table's record is not used (None: it is, or there is none)

    @staticmethod
    def _file_state(path: Path) -> FileState:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        return st.st_ino, st.st_size, st.st_mtime_ns

    def current(self) -> Any:
        """The reader for the next read (the records loaded again if either file changed)."""
        state = (self._file_state(self.path), self._file_state(self.no_die_path))
        if state == self._state:
            return self._reader
        self._state = state
        self._reader, self.problem = self.shipped, None
        if state == (None, None):
            return self._reader
        from vision.pips.enrolled import EnrollmentError, load_enrollment
        from vision.table.no_die import NoDieError, load_no_die

        try:
            enrollment = load_enrollment(self.calibration_dir, self.table_id)
            if enrollment is not None:
                self._reader = self.shipped.enrolled(enrollment)
                log.info("table %s: reading with %s", self.table_id, self._reader.models.get("pips"))
        except (EnrollmentError, OSError, ValueError) as exc:
            self._unusable(
                f"the table's enrollment cannot be used ({exc}): it reads with the shipped models "
                "until the enrollment is fitted again or removed"
            )
        try:
            no_die = load_no_die(self.calibration_dir, self.table_id)
            if no_die is not None:
                self._reader = self._reader.with_no_die(no_die)
        except (NoDieError, OSError) as exc:
            self._unusable(
                f"the table's no-die filter cannot be used ({exc}): it reads without it until the table "
                "learns again"
            )
        return self._reader

    def _unusable(self, problem: str) -> None:
        self.problem = problem if self.problem is None else f"{self.problem}; {problem}"
        log.warning("table %s: %s", self.table_id, problem)
        if self.on_unusable is not None:
            self.on_unusable(problem)

    @property
    def models(self) -> dict[str, str]:
        """The models the next read uses (names the table's refit where it reads through one)."""
        return dict(self.current().models)

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        """Read the frame with the table's current reader."""
        roll: Roll = self.current().read(frame, expected_dice=expected_dice, geometry=geometry)
        return roll
