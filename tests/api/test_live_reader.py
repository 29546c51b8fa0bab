"""A live table's reader follows the table's enrollment record (api/live_reader.py): the next throw after a
refit is stored reads with it, a roll back to the shipped model takes effect the same way, a record that
cannot be used reads with the shipped models and says so once; and the service's live loops read this way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api.db.models import GameTable
from api.db.session import Database
from api.live_reader import TableReader
from api.live_service import DatabaseRecorder, LiveService
from api.metrics import Metrics
from api.settings import Settings
from vision.pips.enrolled import (
    Enrollment,
    EnrollmentError,
    delete_enrollment,
    enrollment_path,
    save_enrollment,
)

SHA = "a" * 64


class FakeReader:
    """A reader that says which models it reads with; `enrolled` as the real one, refusing a record fitted
    on another face model."""

    def __init__(self, tag: str = "pips_shipped") -> None:
        self.models = {"detector": "det", "pips": tag, "pips_peer": "peer"}
        self.enrolled_calls = 0

    def enrolled(self, enrollment: Enrollment) -> FakeReader:
        self.enrolled_calls += 1
        if enrollment.model_sha256 != SHA:
            raise EnrollmentError(f"fitted on {enrollment.model_sha256[:12]}..., not the shipped model")
        return FakeReader(enrollment.tag("pips_shipped"))

    def read(self, frame: Any, *, expected_dice: int | None = None, geometry: Any = None) -> Any:
        return {"models": dict(self.models), "frame": frame, "expected": expected_dice}


def record(folder: Path, bias: float, *, sha: str = SHA) -> Enrollment:
    return save_enrollment(
        Enrollment(
            table_id="T",
            model_sha256=sha,
            d_weight=np.zeros((6, 4), np.float32),
            d_bias=np.full(6, bias, np.float32),
            examples={"1": 3},
        ),
        folder,
    )


def test_the_table_reads_through_its_record_as_it_is_stored_replaced_and_rolled_back(tmp_path: Path) -> None:
    shipped = FakeReader()
    unusable: list[str] = []
    table = TableReader(shipped, calibration_dir=tmp_path, table_id="T", on_unusable=unusable.append)
    assert table.read("f0", expected_dice=10)["models"] == shipped.models  # no record: the shipped models
    first = record(tmp_path, 0.1)
    assert table.read("f1")["models"]["pips"] == f"pips_shipped+enroll:T:{first.checksum[:8]}"
    assert table.models["pips"] == f"pips_shipped+enroll:T:{first.checksum[:8]}"  # what the next read uses
    for k in range(5):  # an unchanged record is not loaded again
        table.read(f"again-{k}")
    assert shipped.enrolled_calls == 1
    second = record(tmp_path, 0.2)  # the next refit replaces it
    assert second.checksum != first.checksum
    assert table.read("f2")["models"]["pips"].endswith(second.checksum[:8]) and shipped.enrolled_calls == 2
    assert delete_enrollment(tmp_path, "T")  # rolled back to the shipped model
    assert table.read("f3")["models"] == shipped.models and table.problem is None
    assert unusable == []


def test_a_record_that_cannot_be_used_reads_with_the_shipped_models_and_says_so_once(tmp_path: Path) -> None:
    shipped = FakeReader()
    unusable: list[str] = []
    table = TableReader(shipped, calibration_dir=tmp_path, table_id="T", on_unusable=unusable.append)
    good = record(tmp_path, 0.1)
    path = enrollment_path(tmp_path, "T")
    doc = json.loads(path.read_text())
    doc["body"]["d_bias"][0] = 9.0  # edited by hand: its checksum no longer holds
    path.write_text(json.dumps(doc))
    for k in range(3):
        assert table.read(f"f{k}")["models"] == shipped.models
    assert len(unusable) == 1 and "checksum" in unusable[0] and "shipped models" in unusable[0]
    assert table.problem == unusable[0]
    record(tmp_path, 0.1, sha="b" * 64)  # fitted on another face model
    assert table.read("g")["models"] == shipped.models
    assert len(unusable) == 2 and "not the shipped model" in unusable[1]
    again = record(tmp_path, 0.1)  # fitted again
    assert again.checksum == good.checksum
    assert table.read("h")["models"]["pips"].endswith(good.checksum[:8]) and table.problem is None


@pytest.fixture
def live(tmp_path: Path) -> Any:
    settings = Settings(data_dir=tmp_path / "data", live_tables=True)
    database = Database(settings.resolved_database_url)
    database.migrate()
    with database.session() as session:
        session.add(GameTable(id="T", game="hrd10", settings={}, camera_source="rtsp://cam/1"))
    try:
        yield LiveService(settings=settings, database=database, metrics=Metrics(), app_state=None), database
    finally:
        database.dispose()


def test_the_services_live_loop_reads_through_the_tables_record_and_alerts_on_a_bad_one(live: Any) -> None:
    from api.db.models import Alert

    service, database = live
    shipped = FakeReader()
    recorder = DatabaseRecorder(database, service.settings, Metrics(), actor="reader:live")
    loop = service._loop("T", "hrd10", "rtsp://cam/1", None, shipped, recorder)
    assert isinstance(loop.reader, TableReader) and loop.reader.shipped is shipped
    folder = service.settings.calibration_dir
    stored = record(folder, 0.3)
    assert loop.reader.read("f")["models"]["pips"].endswith(stored.checksum[:8])
    enrollment_path(folder, "T").write_text("{not json")
    assert loop.reader.read("g")["models"] == shipped.models
    with database.read_session() as session:
        alerts = session.query(Alert).filter(Alert.kind == "enrollment_unusable").all()
    assert len(alerts) == 1 and alerts[0].table_id == "T" and "not readable JSON" in alerts[0].message
