"""A table worker reads a table as the service does, as it learns (api/worker/enrollment.py): the table's
fine-tuned file served to workers (`GET /v1/tables/{id}/enrollment/model`), the worker's copy of the record
and the file made at the loop's start and again when the service's record changes or goes, and the table's
reader following that copy."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from api.live_reader import TableReader
from api.worker.enrollment import EnrollmentCopy, EnrollmentCopyError
from tests.api.conftest import Service
from vision.pips.enrolled import Enrollment, delete_enrollment, enrollment_path, save_enrollment

SHA = "c" * 64


def store(folder: Path, *, model: bytes | None, bias: float = 0.0) -> Enrollment:
    """A table's record as the service stores it: with a fine-tuned file beside it (`model`) or the head's."""
    name = None
    if model is not None:
        name = f"W.finetune-{hashlib.sha256(model).hexdigest()[:12]}.onnx"
        (folder / name).write_bytes(model)
    return save_enrollment(
        Enrollment(
            table_id="W",
            model_sha256=SHA,
            d_weight=np.zeros((6, 4), np.float32),
            d_bias=np.full(6, bias, np.float32),
            examples={"1": 3},
            model_file=name,
            model_file_sha256=None if model is None else hashlib.sha256(model).hexdigest(),
        ),
        folder,
    )


@pytest.fixture
def table(service: Service) -> Service:
    service.ok("POST", "/v1/tables", "admin", 201, json={"id": "W", "game": "hrd10"})
    service.settings.calibration_dir.mkdir(parents=True, exist_ok=True)
    return service


def test_the_tables_fine_tuned_file_is_served_to_workers_checked(table: Service) -> None:
    svc, folder = table, table.settings.calibration_dir
    path = "/v1/tables/W/enrollment/model"
    assert "no enrollment" in svc.ok("GET", path, "worker", 404)["detail"]
    assert svc.ok("GET", "/v1/tables/nosuch/enrollment/model", "worker", 404)["detail"] == "no table 'nosuch'"
    store(folder, model=None)
    assert "no fine-tuned model" in svc.ok("GET", path, "worker", 404)["detail"]
    tuned = store(folder, model=b"onnx bytes of the table's fine-tune")
    got = svc.call("GET", path, "worker")
    assert got.status_code == 200 and got.content == b"onnx bytes of the table's fine-tune"
    assert got.headers["x-throwbox-sha256"] == tuned.model_file_sha256
    assert got.headers["content-type"] == "application/octet-stream"
    assert svc.call("GET", path, "admin").status_code == 200
    for who in ("reader", "dealer", "surveillance"):
        assert svc.call("GET", path, who).status_code == 403
    (folder / str(tuned.model_file)).write_bytes(b"changed on disk")
    assert "SHA-256 differs" in svc.ok("GET", path, "worker", 409)["detail"]
    (folder / str(tuned.model_file)).unlink()
    assert svc.ok("GET", path, "worker", 409)["detail"].startswith("table 'W': its fine-tuned model")


def _copy(svc: Service, folder: Path) -> EnrollmentCopy:
    import httpx

    client = httpx.Client(
        base_url=svc.base_url, headers={"Authorization": f"Bearer {svc.keys['worker']}"}, timeout=10.0
    )
    return EnrollmentCopy(client, folder, "W", poll_s=30.0)


def test_the_workers_copy_follows_the_services_record_and_its_file(table: Service, tmp_path: Path) -> None:
    svc, folder, spool = table, table.settings.calibration_dir, tmp_path / "spool" / "tables"
    copy = _copy(svc, spool)
    try:
        assert copy.apply(None) is False and not copy.path.exists()  # no record: nothing to copy
        first = store(folder, model=b"first fine-tune")
        config = svc.ok("GET", "/v1/tables/W/live-config", "worker")
        assert copy.apply(config["enrollment"]) is True
        assert (spool / str(first.model_file)).read_bytes() == b"first fine-tune"
        assert json.loads(copy.path.read_text())["checksum"] == f"sha256:{first.checksum}"
        assert copy.apply(config["enrollment"]) is False  # the same record: nothing fetched again
        assert copy.refresh(now=copy.checked_at + 1.0) is False  # not yet time to ask
        second = store(folder, model=b"second fine-tune", bias=0.5)  # the next refit stored
        assert copy.refresh(now=copy.checked_at + 31.0) is True and copy.problem is None
        assert (spool / str(second.model_file)).read_bytes() == b"second fine-tune"
        assert json.loads(copy.path.read_text())["checksum"] == f"sha256:{second.checksum}"
        assert delete_enrollment(folder, "W")  # rolled back to the shipped model
        assert copy.refresh(force=True) is True and not copy.path.exists()
    finally:
        copy.control.close()


def test_a_file_that_cannot_be_had_keeps_the_copy_and_says_why(table: Service, tmp_path: Path) -> None:
    svc, folder, spool = table, table.settings.calibration_dir, tmp_path / "spool" / "tables"
    copy = _copy(svc, spool)
    try:
        first = store(folder, model=b"first fine-tune")
        assert copy.refresh(force=True) is True
        second = store(folder, model=b"second fine-tune", bias=0.5)
        (folder / str(second.model_file)).write_bytes(b"damaged after it was stored")
        assert copy.refresh(force=True) is False
        assert copy.problem is not None and "refused (409)" in copy.problem
        assert json.loads(copy.path.read_text())["checksum"] == f"sha256:{first.checksum}"  # kept
        with pytest.raises(EnrollmentCopyError, match="not a file name"):
            copy.apply(
                {"checksum": "sha256:x", "body": {"model_file": "../x.onnx", "model_file_sha256": "0"}}
            )
    finally:
        copy.control.close()


class _Shipped:
    def __init__(self) -> None:
        self.models = {"pips": "shipped"}

    def enrolled(self, enrollment: Enrollment) -> Any:
        from vision.pips.enrolled import EnrollmentError

        folder = enrollment.model_dir
        if enrollment.model_file is not None and not (folder and (folder / enrollment.model_file).is_file()):
            raise EnrollmentError("its fine-tuned model is missing")
        reader = _Shipped()
        reader.models = {"pips": enrollment.tag("shipped")}
        return reader

    def with_no_die(self, no_die: Any) -> Any:
        reader = _Shipped()
        reader.models = {**self.models, "no_die": f"table:{no_die.table_id}:{no_die.checksum[:8]}"}
        return reader


def test_a_workers_table_reads_through_its_copy_as_the_table_learns(table: Service, tmp_path: Path) -> None:
    """`Worker._reader_for` as a worker's loop gets it: the copy made from the live-config, a TableReader on
    it, the next refit followed by `refresh_enrollment`."""
    from api.worker import Worker

    svc, folder = table, table.settings.calibration_dir
    first = store(folder, model=b"first fine-tune")
    worker = Worker(
        services=[svc.base_url],
        key=svc.keys["worker"],
        tables=["W"],
        worker_id="w-1",
        spool_dir=tmp_path / "spool",
        reader=_Shipped(),
    )
    try:
        config = svc.ok("GET", "/v1/tables/W/live-config", "worker")
        reader = worker._reader_for("W", config["enrollment"])
        assert isinstance(reader, TableReader)
        assert reader.models["pips"] == f"shipped+tune:W:{first.checksum[:8]}"
        second = store(folder, model=b"second fine-tune", bias=0.5)
        worker.enrollments["W"].checked_at -= 60.0
        assert worker.refresh_enrollment("W") is True
        assert reader.models["pips"] == f"shipped+tune:W:{second.checksum[:8]}"
        assert enrollment_path(tmp_path / "spool" / "tables", "W").is_file()
    finally:
        worker.control.close()
        worker.outbox.client.close()
        worker.spool.close()


def test_the_workers_copy_follows_the_tables_no_die_filter(table: Service, tmp_path: Path) -> None:
    """The no-die filter learned from the table's struck-out boxes (vision/table/no_die.py) travels in the
    live-config and is copied, changed and removed as the service's is; the worker's table reader uses it."""
    from tests.vision.test_no_die import table_boxes
    from vision.table.no_die import delete_no_die, fit_no_die, no_die_path, save_no_die

    svc, folder, spool = table, table.settings.calibration_dir, tmp_path / "spool" / "tables"
    copy = _copy(svc, spool)
    try:
        assert svc.ok("GET", "/v1/tables/W/live-config", "worker")["no_die"] is None
        x, struck, _ = table_boxes(12)
        saved = save_no_die(fit_no_die(x, struck, table_id="W"), folder)
        config = svc.ok("GET", "/v1/tables/W/live-config", "worker")
        assert config["no_die"]["checksum"] == f"sha256:{saved.checksum}"
        assert copy.apply_no_die(config["no_die"]) is True and copy.apply_no_die(config["no_die"]) is False
        reader = TableReader(_Shipped(), calibration_dir=spool, table_id="W")
        assert reader.models["no_die"] == f"table:W:{saved.checksum[:8]}"
        assert delete_no_die(folder, "W")
        assert copy.refresh(force=True) is True and not no_die_path(spool, "W").exists()
        assert "no_die" not in reader.models
        # a damaged filter at the service is that table's fault, named, not a worker reading half of it
        save_no_die(fit_no_die(x, struck, table_id="W"), folder)
        no_die_path(folder, "W").write_text("{broken")
        refused = svc.call("GET", "/v1/tables/W/live-config", "worker")
        assert refused.status_code == 409 and "no-die filter" in refused.json()["detail"]
    finally:
        copy.control.close()
