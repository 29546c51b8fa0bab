"""The live loop's remote doors: the rules engine and the read/alert recorder, through the outbox."""

from __future__ import annotations

import hashlib
import logging
import uuid
from dataclasses import dataclass
from typing import Any

from api.live import StoredRead
from api.live_service import evidence_jpeg, live_read_document
from api.rules_door import RollRejectedError
from api.schemas.rolls import RollSubmission
from api.worker.outbox import Outbox, alert_request, is_superseded, response_detail
from api.worker.protocol import EPOCH_HEADER, WORKER_HEADER
from api.worker.runner import TableLease
from api.worker.spool import Outgoing
from vision.capture import CapturedFrame

log = logging.getLogger("throwbox.worker")


@dataclass
class WorkerRules:
    """The rules engine's door for a worker's loop (`api.rules_door.RulesDoor`): through the outbox, each roll
    with the table's lease epoch. A spooled roll answers `{"spooled": true}` (the loop follows no round
    from it)."""

    outbox: Outbox
    lease: TableLease

    def upload_evidence(self, data: bytes, *, media_type: str = "image/jpeg") -> str:
        """Upload an evidence frame (now or spooled); its SHA-256."""
        item = Outgoing("evidence", self.lease.table_id, "POST", "/v1/evidence", data, media_type)
        response = self.outbox.submit(item)
        if response is not None and response.status_code >= 400:
            raise RollRejectedError(response.status_code, response_detail(response))
        return hashlib.sha256(data).hexdigest()

    def post_roll(self, table_id: str, submission: RollSubmission) -> dict[str, Any]:
        """Post a roll (now or spooled)."""
        epoch = self.lease.epoch
        item = Outgoing.json(
            "roll",
            table_id,
            "POST",
            f"/v1/tables/{table_id}/rolls",
            submission.wire(),
            headers={EPOCH_HEADER: str(epoch), WORKER_HEADER: self.lease.worker_id},
            epoch=epoch,
        )
        response = self.outbox.submit(item)
        if response is None:
            return {"spooled": True, "roll_id": submission.roll_id}
        if response.status_code >= 400:
            if is_superseded(response):
                self.outbox.refused(item, response)
            raise RollRejectedError(response.status_code, response_detail(response))
        self.outbox.note_roll(item, response, replayed=False)
        answer: dict[str, Any] = response.json()
        return answer

    def close(self) -> None:
        """Nothing to close: the worker owns the connections."""


@dataclass
class RemoteRecorder:
    """Where a worker's loop keeps reads, evidence and alerts (`api.live.LiveRecorder`): the service's
    POST /v1/evidence, PUT /v1/reads/{id} and POST /v1/alerts, through the outbox. The read id is made
    here, and the evidence frame's SHA-256 computed here, so nothing waits for an answer."""

    outbox: Outbox

    def _send(self, item: Outgoing) -> bool:
        response = self.outbox.submit(item)
        if response is not None and response.status_code >= 400:
            self.outbox.refused(item, response)
            return False
        return True

    def store_read(
        self, *, table_id: str, frame: CapturedFrame, roll: Any, extra: dict[str, Any]
    ) -> StoredRead:
        """Upload the annotated frame, the plain frame (the document's `frame_sha256`, what the table learns
        its dice from) and the read (now or spooled)."""
        from api.read_document import plain_jpeg
        from api.read_records import FRAME_KEY

        jpeg = evidence_jpeg(frame, roll)
        sha256 = None
        if jpeg is not None:
            evidence = Outgoing("evidence", table_id, "POST", "/v1/evidence", jpeg, "image/jpeg")
            if self._send(evidence):
                sha256 = hashlib.sha256(jpeg).hexdigest()
        document = live_read_document(frame, roll, extra)
        plain = plain_jpeg(frame.image)
        if plain is not None:
            upload = Outgoing("evidence", table_id, "POST", "/v1/evidence", plain, "image/jpeg")
            if self._send(upload):
                document[FRAME_KEY] = hashlib.sha256(plain).hexdigest()
        read_id = uuid.uuid4().hex
        body = {"table_id": table_id, "document": document, "evidence_sha256": sha256}
        self._send(Outgoing.json("read", table_id, "PUT", f"/v1/reads/{read_id}", body))
        return StoredRead(read_id=read_id, evidence_sha256=sha256, evidence_jpeg=jpeg)

    def alert(self, *, table_id: str, kind: str, message: str, data: dict[str, Any]) -> None:
        """Raise an alert at the service (now or spooled)."""
        self._send(alert_request(table_id, kind, message, data))
