"""The live loops inside the service: the database recorder, the loops, start and stop with the app.

`LiveService.start()` (called from the app's lifespan) starts a `api.live.LiveLoop` thread

- for the demo table when `THROWBOX_DEMO` is set (`throwbox serve --demo`): table `demo` (hrd10) whose
  camera plays the shipped throw clips and rounds, with a croupier (api/demo_table.py);
- for every table with a `camera_source` when `THROWBOX_LIVE_TABLES` is set;

but for none of these when `THROWBOX_EXTERNAL_WORKERS` is set: then table workers (`throwbox worker`,
issue 50) run every table with a camera, the demo table's clips included, each under a lease
(api/leases.py); the demo's loaded-dice table, which has no camera, still plays here.

Each loop hands its rolls to this service's round logic in-process (`api.rules_door.LocalRules`, as
`reader:live-<table>`), unless `THROWBOX_RULES_URL` names another rules engine: then it posts them there
over REST with `THROWBOX_RULES_KEY` (or a reader-role key the service makes at start and revokes at stop),
and uploads each evidence frame there too. Reads, evidence frames and alerts are stored in this service's
database, with their audit entries and events (`read`, `alert`), so the dashboard and the event stream show
them.
"""

from __future__ import annotations

import logging
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from api import audit
from api.alerts import raise_alert
from api.audit import load_evidence
from api.auth import Role, authenticate, create_key, revoke_key
from api.db.models import GameTable
from api.db.session import Database
from api.demo_table import DEMO_ROUNDS, DEMO_SOURCE, DEMO_TABLE, DemoCroupier, PacedDemoGrabber, clip_geometry
from api.live import LiveConfig, LiveLoop, LiveRead, LiveRecorder, StoredRead
from api.live_reader import TableReader
from api.metrics import Metrics
from api.read_records import live_read_details, record_read
from api.rules_door import LocalRules, RulesClient, RulesDoor
from api.settings import Settings

if TYPE_CHECKING:
    from vision.capture import CapturedFrame
    from vision.table.geometry import TableGeometry
    from vision.types import Roll

log = logging.getLogger("throwbox.live")


def evidence_jpeg(frame: CapturedFrame, roll: Roll) -> bytes | None:
    """The read's evidence frame: the at-rest frame annotated with what was read, as JPEG (None: not
    encodable)."""
    import cv2

    from api.read_document import annotate_read

    ok, encoded = cv2.imencode(".jpg", annotate_read(frame.image, roll), [cv2.IMWRITE_JPEG_QUALITY, 85])
    return bytes(encoded) if ok else None


def live_read_document(frame: CapturedFrame, roll: Roll, extra: dict[str, Any]) -> dict[str, Any]:
    """The stored document of a live read: the read document with the loop's extras, its frame id, and
    `source: live` (the same whether the service's own loop or a table worker made it)."""
    from api.read_document import read_document

    return {**read_document(roll), **extra, "frame_id": frame.frame_id, "source": "live"}


@dataclass
class DatabaseRecorder:
    """Stores reads (with their annotated evidence frames) and alerts in the service's database."""

    database: Database
    settings: Settings
    metrics: Metrics
    actor: str

    def store_read(
        self, *, table_id: str, frame: CapturedFrame, roll: Roll, extra: dict[str, Any]
    ) -> StoredRead:
        """Annotate and store the frame (and the plain frame beside it), store the read, audit it and publish
        a `read` event."""
        from api.read_document import plain_jpeg

        jpeg = evidence_jpeg(frame, roll)
        read_id = uuid.uuid4().hex
        document = live_read_document(frame, roll, extra)
        with self.database.session() as session:
            sha256 = record_read(
                session,
                settings=self.settings,
                read_id=read_id,
                table_id=table_id,
                document=document,
                evidence_jpeg=jpeg,
                actor=self.actor,
                details=live_read_details(document),
                frame_jpeg=plain_jpeg(frame.image),
            )
        self.metrics.reads.labels(verdict=str(document["verdict"])).inc()
        return StoredRead(read_id=read_id, evidence_sha256=sha256, evidence_jpeg=jpeg)

    def alert(self, *, table_id: str, kind: str, message: str, data: dict[str, Any]) -> None:
        """Store, audit and publish an alert."""
        with self.database.session() as session:
            raise_alert(
                session,
                kind=kind,
                message=message,
                actor=self.actor,
                table_id=table_id,
                round_id=None,
                data=data,
                webhook_urls=self.settings.webhook_urls,
                metrics=self.metrics,
            )

    def evidence_bytes(self, sha256: str) -> bytes:
        """A stored evidence frame (checked against its SHA-256)."""
        with self.database.read_session() as session:
            data, _ = load_evidence(session, evidence_dir=self.settings.evidence_dir, sha256=sha256)
        return data


# ----------------------------------------------------------------------------------------------- loops
def box_outline_px(geometry: TableGeometry | None) -> Any:
    """The throw box's floor outline in pixels (the settle detector's region); None uncalibrated."""
    if geometry is None:
        return None
    import numpy as np

    corners = np.array([[x, y, 0.0] for x, y in geometry.layout.box.corners], np.float64)
    return geometry.camera.project(corners)


def demo_loop(
    *,
    config: LiveConfig,
    clips_dir: Path,
    reader: Any,
    rules: RulesDoor,
    recorder: LiveRecorder,
    on_clip: Callable[[str], bool | None],
    on_read: Callable[[LiveRead], None] | None = None,
    upload_evidence: bool = False,
) -> LiveLoop:
    """The live loop of a demo table: its camera plays the throw clips in `clips_dir` (and the whole rounds
    of `api/demo_rounds/`) in real time, each clip read through the camera it was rendered with
    (`clip_geometry`), `on_clip` (the croupier) readying a round before each throw. The service's demo table
    and a table worker's `<demo clips>` tables both run this."""
    from vision.capture import Capture, CaptureConfig
    from vision.settle import SettleDetector

    capture = Capture(
        PacedDemoGrabber(clips_dir, rounds_dir=DEMO_ROUNDS if DEMO_ROUNDS.is_dir() else None),
        table_id=config.table_id,
        source_id="demo",
        config=CaptureConfig(realtime=True),
    )

    def demo_geometry(clip: str) -> TableGeometry | None:
        geometry, cal_id = clip_geometry(clip)
        loop.calibration_id = cal_id
        return geometry

    loop = LiveLoop(
        config=config,
        items=capture,
        detector=SettleDetector(),
        reader=reader,
        rules=rules,
        recorder=recorder,
        geometry_for_clip=demo_geometry,
        on_clip=on_clip,
        on_read=on_read,
        upload_evidence=upload_evidence,
    )
    return loop


def camera_loop(
    *,
    config: LiveConfig,
    source: str,
    geometry: TableGeometry | None,
    reader: Any,
    rules: RulesDoor,
    recorder: LiveRecorder,
    on_read: Callable[[LiveRead], None] | None = None,
    upload_evidence: bool = False,
) -> LiveLoop:
    """The live loop of a table's camera (`vision.capture.open_capture`'s sources), the settle detector
    watching only the throw box where the table is calibrated. The service's live tables and a table
    worker's tables both run this."""
    from vision.capture import CaptureConfig, open_capture
    from vision.settle import SettleDetector

    return LiveLoop(
        config=config,
        # A recording (a file, `demo`) plays at its recorded pace, as a camera would deliver it.
        items=open_capture(source, table_id=config.table_id, config=CaptureConfig(realtime=True)),
        detector=SettleDetector(roi_xy=box_outline_px(geometry)),
        reader=reader,
        rules=rules,
        recorder=recorder,
        geometry=geometry,
        on_read=on_read,
        upload_evidence=upload_evidence,
    )


# --------------------------------------------------------------------------------------------- service
def read_or_create_key(database: Database, path: Path, *, role: Role, name: str) -> str:
    """The key stored in `path` if it still works, else a new one written there (mode 0600)."""
    if path.is_file():
        key = path.read_text(encoding="utf-8").strip()
        with database.read_session() as session:
            principal = authenticate(session, key)
        if principal is not None and principal.role is role:
            return key
    with database.session() as session:
        secret = create_key(session, role=role, name=name).secret
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(secret + "\n", encoding="utf-8")
    path.chmod(0o600)
    return secret


@dataclass
class LiveService:
    """The service's live loops (see the module docstring)."""

    settings: Settings
    database: Database
    metrics: Metrics
    app_state: Any
    loops: list[LiveLoop] = field(default_factory=list)
    _keys: list[int] = field(default_factory=list)
    _clients: list[httpx.Client] = field(default_factory=list)
    _starter: threading.Thread | None = None
    _stopping: threading.Event = field(default_factory=threading.Event)
    _dice_feeder: Any = None  # api.fairness_demo.DiceFeeder of the demo's loaded-dice table (issue 49)
    # Tables whose loop could not start here, and why (shown as the table's fault, api/table_faults.py).
    not_started: dict[str, str] = field(default_factory=dict)

    def start(self) -> None:
        """Start the loops in the background (the demo's once this service answers: its croupier deals over
        REST)."""
        if not (self.settings.demo or self.settings.live_tables):
            return
        if self.settings.demo:
            self._ensure_demo_table()
            if self.settings.demo_loaded_die:
                from api.fairness_demo import start_demo_dice

                self._dice_feeder = start_demo_dice(
                    settings=self.settings,
                    database=self.database,
                    dealer_key=self._new_key(Role.DEALER, "demo-dice"),
                )
        if self.settings.external_workers:  # no loop here: no reader to load either
            return
        self._starter = threading.Thread(target=self._start_loops, name="live-start", daemon=True)
        self._starter.start()

    def stop(self) -> None:
        """Stop every loop and revoke the keys made for them."""
        self._stopping.set()
        if self._dice_feeder is not None:
            self._dice_feeder.stop()
        if self._starter is not None:
            self._starter.join(10)
        for loop in self.loops:
            loop.stop()
            loop.rules.close()
        for client in self._clients:
            client.close()
        if self._keys:
            with self.database.session() as session:
                for key_id in self._keys:
                    revoke_key(session, key_id)

    def _new_key(self, role: Role, name: str) -> str:
        with self.database.session() as session:
            new = create_key(session, role=role, name=name)
        self._keys.append(new.key_id)
        return new.secret

    def _ensure_demo_table(self) -> None:
        with self.database.session() as session:
            if session.get(GameTable, DEMO_TABLE) is None:
                session.add(
                    GameTable(id=DEMO_TABLE, game="hrd10", settings={}, camera_source="demo:api/demo_clips")
                )
                audit.append(
                    session,
                    actor="system:demo",
                    action="table.create",
                    subject=f"table:{DEMO_TABLE}",
                    payload={"id": DEMO_TABLE, "game": "hrd10", "demo": True},
                )
        # A surveillance key for the dashboard, kept across restarts of the demo.
        read_or_create_key(
            self.database, self.settings.demo_key_path, role=Role.SURVEILLANCE, name="demo-dashboard"
        )

    def _wait_until_up(self) -> bool:
        deadline = time.monotonic() + 60.0
        while not self._stopping.is_set() and time.monotonic() < deadline:
            try:
                if httpx.get(self.settings.self_url.rstrip("/") + "/healthz", timeout=2.0).status_code == 200:
                    return True
            except httpx.HTTPError:
                pass
            self._stopping.wait(0.2)
        return False

    def _reader(self) -> Any:
        from vision.reader import Reader

        reader = getattr(self.app_state, "reader", None)
        if reader is None:
            reader = Reader(threads=1, manifest_path=self.settings.manifest_path)
            self.app_state.reader = reader
        return reader

    def _start_loops(self) -> None:
        from vision.onnx_session import ModelError

        if self.settings.demo and not self._wait_until_up():
            log.error("live: the service did not come up at %s; no live loop started", self.settings.self_url)
            return
        recorder = DatabaseRecorder(self.database, self.settings, self.metrics, actor="reader:live")
        try:
            reader = self._reader()
        except ModelError as exc:
            for table_id in self._table_ids():
                recorder.alert(
                    table_id=table_id,
                    kind="reader_unavailable",
                    message=f"the live table cannot read dice: {exc}",
                    data={"error": str(exc)},
                )
            return
        for table_id, game, source, calibration_id in self._tables():
            if self._stopping.is_set():
                return
            try:
                loop = self._loop(table_id, game, source, calibration_id, reader, recorder)
            except Exception as exc:  # a bad camera source or calibration: say so, start the others
                log.exception("live: table %s not started", table_id)
                self.not_started[table_id] = f"the live loop could not start: {exc}"
                recorder.alert(
                    table_id=table_id,
                    kind="live_loop_stopped",
                    message=f"the live loop could not start: {exc}",
                    data={"error": str(exc)},
                )
                continue
            self.loops.append(loop)
            loop.start()

    def loop_fault(self, table_id: str) -> str | None:
        """Why this service's live loop of the table is not watching it (None: it runs, or it is not
        run here)."""
        if table_id in self.not_started:
            return self.not_started[table_id]
        for loop in self.loops:
            if loop.config.table_id == table_id and loop.failure is not None:
                return f"the live loop stopped: {loop.failure}"
        return None

    def _table_ids(self) -> list[str]:
        return [t[0] for t in self._tables()]

    def _tables(self) -> list[tuple[str, str, str, str | None]]:
        from sqlalchemy import select

        with self.database.read_session() as session:
            rows = session.execute(
                select(GameTable.id, GameTable.game, GameTable.camera_source, GameTable.calibration_id)
            ).all()
        out: list[tuple[str, str, str, str | None]] = []
        if self.settings.external_workers:  # table workers run every table with a camera
            return out
        for table_id, game, source, calibration_id in rows:
            if table_id == DEMO_TABLE and self.settings.demo:
                out.append((table_id, game, DEMO_SOURCE, None))
            elif self.settings.live_tables and source and table_id != DEMO_TABLE:
                out.append((table_id, game, str(source), calibration_id))
        return out

    def _loop(
        self,
        table_id: str,
        game: str,
        source: str,
        calibration_id: str | None,
        reader: Any,
        recorder: DatabaseRecorder,
    ) -> LiveLoop:
        rules = self._rules_door(table_id)
        expected = 10 if game == "hrd10" else 6
        on_read = self._count_read
        shipped = reader
        reader = TableReader(  # through the table's refit or enrollment, followed as the table learns
            shipped,
            calibration_dir=self.settings.calibration_dir,
            table_id=table_id,
            on_unusable=lambda message: recorder.alert(
                table_id=table_id, kind="enrollment_unusable", message=message, data={}
            ),
        )
        if source == DEMO_SOURCE:
            dealer = httpx.Client(
                base_url=self.settings.self_url.rstrip("/"),
                headers={"Authorization": f"Bearer {self._new_key(Role.DEALER, 'demo-croupier')}"},
                timeout=10.0,
            )
            self._clients.append(dealer)
            croupier = DemoCroupier(dealer)
            return demo_loop(
                config=LiveConfig(table_id=table_id, expected_dice=expected),
                clips_dir=self.settings.demo_clips_dir,
                reader=reader,
                rules=rules,
                recorder=recorder,
                on_clip=croupier.prepare,
                on_read=on_read,
                upload_evidence=self.settings.rules_url is not None,
            )
        geometry = None
        if calibration_id:
            from calibration.store import load_table
            from calibration.table import stale_marks_message
            from vision.table.geometry import TableGeometry

            calibration = load_table(self.settings.calibration_dir, calibration_id)
            geometry = TableGeometry.from_calibration(calibration)
            if stale := stale_marks_message(calibration, getattr(shipped, "models", {}).get("detector")):
                recorder.alert(
                    table_id=table_id,
                    kind="calibration_stale",
                    message=stale,
                    data={"calibration_id": calibration_id},
                )
        return camera_loop(
            config=LiveConfig(table_id=table_id, expected_dice=expected, calibration_id=calibration_id),
            source=source,
            geometry=geometry,
            reader=reader,
            rules=rules,
            recorder=recorder,
            on_read=on_read,
            upload_evidence=self.settings.rules_url is not None,
        )

    def _rules_door(self, table_id: str) -> RulesDoor:
        """This service's round logic in-process, or, where `THROWBOX_RULES_URL` names another rules engine,
        that engine over REST (with `THROWBOX_RULES_KEY`, or a reader key made for the loop)."""
        if self.settings.rules_url is None:
            return LocalRules(
                self.database,
                self.metrics,
                actor=f"{Role.READER.value}:live-{table_id}",
                webhook_urls=self.settings.webhook_urls,
            )
        key = (
            self.settings.rules_key.get_secret_value()
            if self.settings.rules_key is not None
            else self._new_key(Role.READER, f"live-{table_id}")
        )
        return RulesClient(base_url=self.settings.rules_url, key=key)

    def _count_read(self, read: LiveRead) -> None:
        log.info(
            "live %s: %s %s faces=%s rest->posted %.0f ms%s",
            read.roll_id,
            read.kind,
            read.verdict,
            list(read.faces),
            read.rest_to_posted_ms,
            f" ({read.error})" if read.error else "",
        )

    def status(self) -> list[dict[str, Any]]:
        """Per loop: table, camera health, frames, throws read, last read (for the dashboard)."""
        out = []
        for loop in self.loops:
            last = loop.reads[-1] if loop.reads else None
            out.append(
                {
                    "table_id": loop.config.table_id,
                    "camera_ok": loop.camera_ok,
                    "frames": loop.frames,
                    "throws_read": len(loop.reads),
                    "running": loop.failure is None,
                    "last_rest_to_posted_ms": None if last is None else round(last.rest_to_posted_ms, 1),
                }
            )
        return out
