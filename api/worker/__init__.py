"""The table worker (`throwbox worker`, issue 50): live loops on their own machine, against a remote service.

One worker process runs `api.live.LiveLoop` for the tables it is given, each only while it holds that
table's lease at the service (docs/floor.md, WORKER_CONTRACT.md):

    per table (`TableRunner`, a thread): take the lease (about once a second until it is free) -> fetch the
    table's live-config (game, camera, calibration, enrollment, lease TTL) -> run the loop -> renew the
    lease every TTL/3 -> stop the loop at once when a renewal is refused (409: another worker holds it);
    the table's enrollment record (and its fine-tuned file) copied at the start and again when the service's
    changes (every `enrollment.POLL_S`), the loop reading through the copy (`api.live_reader.TableReader`)

Everything the loops send (evidence frames, reads, rolls, alerts, and the demo croupier's steps) goes
through one `Outbox`: sent at once while the service answers and nothing of that table waits in the spool;
otherwise kept in the `Spool` (a stdlib sqlite3 file, in order) and replayed strictly in that order (each
table's requests in the order made, by a courier thread per table) once the service answers again.
Rolls carry the lease epoch (`X-Throwbox-Lease-Epoch`), so the service refuses (409 `lease_superseded`) a
spooled roll of a table another worker has taken over since; such a refusal is kept in the spool's dead
letters, logged, and shown on /healthz, never retried.

Several `--service` URLs (replicas of one service) are tried in turn (`FailoverTransport`): a replica that
refuses the connection is skipped for the next one.

Errors::

    WorkerError               base class
    +-- ServiceDownError      the service answered 5xx (treated as no answer: spooled, retried)
    +-- SpoolBusyError        another worker process holds this spool (the same --worker-id / --spool)

The modules, one job each::

    protocol    the fencing headers, the worker id's pattern, the clock
    errors      the error tree above, and what counts as no answer
    transport   fail-over between replicas (`FailoverTransport`) and the httpx client
    spool       the local ordered spool and its dead letters (`Spool`, `Outgoing`)
    outbox      send now or spool and replay in order (`Outbox`)
    remote      the live loop's doors to the service (`WorkerRules`, `RemoteRecorder`)
    runner      one table: lease, live-config, loop, renewal (`TableRunner`)
    enrollment  the worker's copy of a table's enrollment record and fine-tuned file (`EnrollmentCopy`)
    worker      the process: its runners, outbox, reader and health document (`Worker`)
    health      `GET /healthz` (`serve_health`)
"""

from api.worker.errors import UNREACHABLE, ServiceDownError, SpoolBusyError, WorkerError
from api.worker.health import serve_health
from api.worker.outbox import REPLAY_RETRY_S, Outbox, alert_request, is_superseded
from api.worker.protocol import EPOCH_HEADER, SUPERSEDED, WORKER_HEADER, WORKER_ID, now_iso
from api.worker.remote import RemoteRecorder, WorkerRules
from api.worker.runner import (
    LEASE_REFUSED_RETRY_S,
    LEASE_RETRY_S,
    LOOP_RESTART_S,
    TAKE_STAGGER_S,
    TableLease,
    TableRunner,
)
from api.worker.spool import Outgoing, Spool
from api.worker.transport import FailoverTransport, service_client
from api.worker.worker import Worker

__all__ = [
    "EPOCH_HEADER",
    "LEASE_REFUSED_RETRY_S",
    "LEASE_RETRY_S",
    "LOOP_RESTART_S",
    "REPLAY_RETRY_S",
    "SUPERSEDED",
    "TAKE_STAGGER_S",
    "UNREACHABLE",
    "WORKER_HEADER",
    "WORKER_ID",
    "FailoverTransport",
    "Outbox",
    "Outgoing",
    "RemoteRecorder",
    "ServiceDownError",
    "Spool",
    "SpoolBusyError",
    "TableLease",
    "TableRunner",
    "Worker",
    "WorkerError",
    "WorkerRules",
    "alert_request",
    "is_superseded",
    "now_iso",
    "serve_health",
    "service_client",
]
