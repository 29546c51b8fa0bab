"""A lost lease taken over while a round opens at its table: no deadlock on PostgreSQL.

The replica load benchmark with workers (`throwbox lab loadtest --replicas 2 --workers 4`) met a PostgreSQL
`deadlock detected`: opening a round locks the table row (`FOR UPDATE`) and then the audit head; taking over
a lost lease raised its `worker_lost` alert (the audit head) and then updated the lease row, whose foreign
key check share-locks the same table row. `take_lease` now locks the table row first, as opening a round
does, so the two queue instead of waiting on each other.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from api import audit
from api.db.models import GameTable, TableLease
from api.db.session import Database
from api.leases import take_lease
from api.metrics import Metrics
from tests.api.conftest import database_url


def test_a_lease_takeover_and_a_round_opening_at_the_same_table_both_finish(tmp_path: Path) -> None:
    with database_url("postgres", tmp_path) as url:
        assert url is not None
        database = Database(url)
        try:
            database.migrate()
            long_ago = datetime.now(UTC) - timedelta(minutes=1)
            with database.session() as session:
                session.add(GameTable(id="T1", game="hrd10", settings={}))
                session.flush()
                session.add(  # expired, never released, not yet said lost: a takeover raises worker_lost
                    TableLease(
                        table_id="T1",
                        worker_id="w1",
                        epoch=1,
                        acquired_at=long_ago,
                        heartbeat_at=long_ago,
                        expires_at=long_ago + timedelta(seconds=5),
                    )
                )
            table_locked = threading.Event()
            errors: list[BaseException] = []

            def open_round() -> None:  # api/routes/rounds.py: the table row, then the audit head
                try:
                    with database.session() as session:
                        session.get(GameTable, "T1", with_for_update=True)
                        table_locked.set()
                        time.sleep(1.0)  # the takeover starts meanwhile
                        audit.append(
                            session, actor="dealer:test", action="round.open", subject="table:T1", payload={}
                        )
                except BaseException as exc:
                    errors.append(exc)
                    table_locked.set()

            thread = threading.Thread(target=open_round)
            thread.start()
            assert table_locked.wait(30)
            lease = take_lease(
                database,
                table_id="T1",
                worker_id="w2",
                ttl_s=5.0,
                actor="worker:test",
                webhook_urls=[],
                metrics=Metrics(),
            )
            thread.join(30)
            assert errors == []
            assert lease.worker_id == "w2" and lease.epoch == 2
        finally:
            database.dispose()
