"""A table worker process: its tables' runners, one outbox and spool, its reader, its health document."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from api.demo_table import DEMO_CLIPS, DEMO_SOURCE, DemoCroupier
from api.live import LiveConfig, LiveLoop, LiveRead
from api.live_service import camera_loop, demo_loop
from api.worker.errors import WorkerError
from api.worker.outbox import Outbox, response_detail
from api.worker.protocol import WORKER_ID, now_iso
from api.worker.remote import RemoteRecorder, WorkerRules
from api.worker.runner import (
    TableRunner,
)
from api.worker.spool import Spool
from api.worker.transport import FailoverTransport, service_client

log = logging.getLogger("throwbox.worker")


class Worker:
    """A table worker: its tables, its outbox and spool, its reader (see the package docstring).

    Args:
        services: the service's URL (several: replicas, tried in turn).
        key: a worker-role key.
        tables: the tables to watch (each while this worker holds its lease).
        worker_id: this worker's name at the service (leases, fencing headers).
        spool_dir: the spool's folder.
        croupier_key: a dealer key: demo-clip tables also play the demo croupier.
        reader: the loaded reader (default: `vision.reader.Reader`, loaded at `start`).
        demo_clips_dir: the throw clips `<demo clips>` tables play.
    """

    def __init__(
        self,
        *,
        services: Sequence[str],
        key: str,
        tables: Sequence[str],
        worker_id: str,
        spool_dir: Path,
        croupier_key: str | None = None,
        reader: Any = None,
        demo_clips_dir: Path = DEMO_CLIPS,
    ) -> None:
        if not WORKER_ID.match(worker_id):
            raise ValueError(f"worker id must be 1-100 of [A-Za-z0-9._:-]: {worker_id!r}")
        if not tables:
            raise ValueError("at least one --table is needed")
        self.worker_id = worker_id
        self.services = list(services)
        self.transport = FailoverTransport(services)  # one for all: a fail-over is learned once
        self.control = service_client(self.transport, key, timeout_s=5.0)
        self.spool = Spool(spool_dir)
        self.outbox = Outbox(
            service_client(self.transport, key, timeout_s=10.0),
            self.spool,
            holds=self._holds,
            on_superseded=self._superseded,
        )
        self.recorder = RemoteRecorder(self.outbox)
        self.croupier_client = (
            None if croupier_key is None else service_client(self.transport, croupier_key, raise_5xx=True)
        )
        self.reader = reader
        self.demo_clips_dir = demo_clips_dir
        self.started_at = now_iso()
        self.taking = threading.Lock()
        self.enrollments: dict[str, Any] = {}  # table -> its EnrollmentCopy, once its loop was built
        self.runners = {t: TableRunner(self, t) for t in dict.fromkeys(tables)}

    def _holds(self, table_id: str, epoch: int | None) -> bool:
        runner = self.runners.get(table_id)
        return runner is not None and runner.lease.held and runner.lease.epoch == epoch

    def _superseded(self, table_id: str, epoch: int | None) -> None:
        runner = self.runners.get(table_id)
        if runner is not None:
            runner.lost("a roll was refused: lease_superseded", epoch)

    def start(self) -> None:
        """Load the reader, start the courier (replaying a spool left by an earlier run) and the tables."""
        if self.reader is None:
            from vision.reader import Reader

            self.reader = Reader(threads=1)
        self.outbox.start()
        for runner in self.runners.values():
            runner.start()

    def stop(self, *, drain_s: float = 10.0) -> None:
        """Stop every loop, try `drain_s` seconds to empty the spool (the leases still renewed), release
        the leases, close."""
        for runner in self.runners.values():
            runner.pause()
        self.outbox.stop(drain_s=drain_s)
        for runner in self.runners.values():
            runner.stop()
        for runner in self.runners.values():
            if runner.lease.held:
                runner.release()
                runner.lease.state = "released"
        self.control.close()
        self.outbox.client.close()
        if self.croupier_client is not None:
            self.croupier_client.close()
        self.spool.close()

    def build_loop(self, runner: TableRunner) -> LiveLoop:
        """The table's live loop from its live-config (the lease is held)."""
        table_id = runner.table_id
        response = self.control.get(f"/v1/tables/{table_id}/live-config")
        if response.status_code != 200:
            raise WorkerError(
                f"live-config of table {table_id}: {response.status_code} {response_detail(response)}"
            )
        cfg = response.json()
        if cfg.get("lease_ttl_s"):
            runner.lease.ttl_s = float(cfg["lease_ttl_s"])
        expected = int(cfg.get("dice") or (10 if cfg.get("game") == "hrd10" else 6))
        source = cfg.get("camera_source")
        if not source:
            raise WorkerError(f"table {table_id} has no camera_source")
        rules = WorkerRules(self.outbox, runner.lease)
        reader = self._reader_for(table_id, cfg.get("enrollment"), cfg.get("no_die"))

        def on_read(read: LiveRead) -> None:
            runner.throws_read += 1
            log.info(
                "table %s: %s %s %s faces=%s%s",
                table_id,
                read.roll_id,
                read.kind,
                read.verdict,
                list(read.faces),
                f" ({read.error})"
                if read.error
                else (" (spooled)" if (read.answer or {}).get("spooled") else ""),
            )

        if source == DEMO_SOURCE:
            on_clip: Callable[[str], bool | None] | None = None
            if self.croupier_client is not None:
                self.outbox.croupiers[table_id] = DemoCroupier(
                    self.croupier_client, table_id=table_id
                ).prepare

                def on_clip(clip: str) -> bool:
                    return self.outbox.run_croupier(table_id, clip, runner.lease.epoch)

            else:
                log.warning(
                    "table %s plays the demo clips with no croupier (no --croupier-key-file)", table_id
                )
            return demo_loop(
                config=LiveConfig(table_id=table_id, expected_dice=expected),
                clips_dir=self.demo_clips_dir,
                reader=reader,
                rules=rules,
                recorder=self.recorder,
                on_clip=on_clip or (lambda clip: None),
                on_read=on_read,
            )
        geometry, calibration_id = self._geometry(table_id, cfg.get("calibration"), reader)
        return camera_loop(
            config=LiveConfig(table_id=table_id, expected_dice=expected, calibration_id=calibration_id),
            source=str(source),
            geometry=geometry,
            reader=reader,
            rules=rules,
            recorder=self.recorder,
            on_read=on_read,
        )

    def _reader_for(self, table_id: str, enrollment: Any, no_die: Any = None) -> Any:
        """The table's reader: this worker's reader through the table's enrollment record, copied into the
        spool folder with its fine-tuned file and followed as the table learns (`refresh_enrollment`;
        api/worker/enrollment.py, api/live_reader.py). A record that cannot be copied or used: the shipped
        models, and an `enrollment_unusable` alert saying why."""
        from api.live_reader import TableReader
        from api.worker.enrollment import EnrollmentCopy, EnrollmentCopyError

        def unusable(message: str) -> None:
            self.recorder.alert(
                table_id=table_id,
                kind="enrollment_unusable",
                message=f"worker {self.worker_id}: {message}",
                data={"worker_id": self.worker_id},
            )

        copy = EnrollmentCopy(self.control, self.spool.folder / "tables", table_id)
        try:
            copy.apply(enrollment or None)
        except EnrollmentCopyError as exc:
            copy.path.unlink(missing_ok=True)  # not what the service has: the shipped models until it is
            copy.problem = str(exc)
            unusable(f"the table's enrollment could not be copied ({exc}): it reads with the shipped models")
        copy.apply_no_die(no_die or None)
        self.enrollments[table_id] = copy
        return TableReader(self.reader, calibration_dir=copy.folder, table_id=table_id, on_unusable=unusable)

    def refresh_enrollment(self, table_id: str) -> bool:
        """Copy the table's enrollment record again if the service's changed (at most every `POLL_S`; from
        the table's lease thread); whether it changed."""
        copy = self.enrollments.get(table_id)
        return copy is not None and copy.refresh()

    def _geometry(self, table_id: str, calibration: Any, reader: Any) -> tuple[Any, str | None]:
        """The table's geometry and calibration id from its calibration document (None: uncalibrated)."""
        if not calibration:
            return None, None
        from calibration.store import load_table_file, table_path
        from calibration.table import TableCalibration, stale_marks_message
        from vision.table.geometry import TableGeometry

        if "body" in calibration:  # the stored file itself: checked against its checksum
            path = table_path(self.spool.folder / "tables", table_id)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(calibration), encoding="utf-8")
            cal = load_table_file(path, table_id=table_id)
        else:
            cal = TableCalibration.from_dict(calibration)
        if stale := stale_marks_message(cal, getattr(reader, "models", {}).get("detector")):
            self.recorder.alert(
                table_id=table_id,
                kind="calibration_stale",
                message=stale,
                data={"calibration_id": cal.calibration_id},
            )
        return TableGeometry.from_calibration(cal), cal.calibration_id

    def health(self) -> dict[str, Any]:
        """What /healthz answers."""
        dead, letters = self.spool.dead_letters()
        return {
            "worker_id": self.worker_id,
            "started_at": self.started_at,
            "service": self.transport.current,
            "services": self.services,
            "service_answering": not self.outbox.down,
            "tables": {t: r.health() for t, r in self.runners.items()},
            "spool": {
                "path": str(self.spool.path),
                "depth": self.spool.depth(),
                "replayed": self.outbox.replayed,
                "last_outage": self.outbox.last_outage,
            },
            "dead_letters": dead,
            "last_dead_letters": letters,
        }
