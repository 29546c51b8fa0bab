"""The same evidence frame stored at once by several writers (threads of one replica, or two replicas on one
database and shared storage): every writer gets the frame's SHA-256, none an error (the load benchmark of
issue 50 found a 500 here when two reads of the same frame arrived together)."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from api.audit import evidence_path, store_evidence
from tests.api.conftest import database_url

FRAME = b"\xff\xd8 a frame " * 1000


class _NoRows:
    """A session stand-in for the file half: the frame's row is always already there."""

    def get(self, *_: Any) -> object:
        return object()


def test_threads_writing_the_same_frame_all_succeed(tmp_path: Path) -> None:
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []
    got: list[str] = []

    def write() -> None:
        barrier.wait()
        try:
            got.append(
                store_evidence(
                    _NoRows(),  # type: ignore[arg-type]
                    evidence_dir=tmp_path,
                    data=FRAME,
                    media_type="image/jpeg",
                    max_bytes=10**6,
                )
            )
        except BaseException as exc:
            errors.append(exc)

    for _ in range(5):  # each round starts from no file, so the writers race to create it
        for child in tmp_path.iterdir():
            for leftover in child.iterdir():
                leftover.unlink()
        threads = [threading.Thread(target=write) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    sha = hashlib.sha256(FRAME).hexdigest()
    assert errors == [] and got == [sha] * 40
    path = evidence_path(tmp_path, sha)
    assert path.read_bytes() == FRAME
    assert list(path.parent.iterdir()) == [path]  # no temporary file left behind


def test_two_transactions_recording_the_same_frame_on_postgresql(tmp_path: Path) -> None:
    from api.db.models import Evidence
    from api.db.session import Database

    with database_url("postgres", tmp_path) as url:
        assert url is not None
        database = Database(url)
        try:
            database.migrate()
            stored = threading.Event()
            errors: list[BaseException] = []

            def first() -> None:
                try:
                    with database.session() as session:
                        store_evidence(
                            session,
                            evidence_dir=tmp_path,
                            data=FRAME,
                            media_type="image/jpeg",
                            max_bytes=10**6,
                        )
                        stored.set()
                        time.sleep(0.5)  # the second transaction inserts the same row meanwhile, and waits
                except BaseException as exc:
                    errors.append(exc)
                    stored.set()

            thread = threading.Thread(target=first)
            thread.start()
            assert stored.wait(30)
            with database.session() as session:
                sha = store_evidence(
                    session, evidence_dir=tmp_path, data=FRAME, media_type="image/jpeg", max_bytes=10**6
                )
            thread.join()
            assert errors == []
            with database.read_session() as session:
                row = session.get(Evidence, sha)
                assert row is not None and row.size_bytes == len(FRAME)
        finally:
            database.dispose()
