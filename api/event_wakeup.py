"""Wakes the event streams of this process when any replica commits an event (PostgreSQL LISTEN/NOTIFY).

`api.events.publish` sends `NOTIFY throwbox_events` in the event's transaction, so PostgreSQL delivers it
when the transaction commits, to every listening connection of every replica. Each `throwbox serve`
process runs one `EventWakeup`: a thread with its own psycopg connection (outside the pool) doing
`LISTEN`, which wakes every waiting SSE stream of the process. The streams still read the events table
(the notification carries no data they rely on), and still poll, more slowly, so a lost notification
or a dropped listener connection only delays an event. The thread reconnects after a drop, and wakes
the streams once it listens again, since notifications sent meanwhile were lost.

psycopg is imported in the thread: it is the `postgres` extra, and SQLite (the embedded default) has no
listener (its streams poll).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from typing import Any

from api.db.session import Database
from api.events import NOTIFY_CHANNEL

log = logging.getLogger("throwbox.events")

APPLICATION_NAME = "throwbox-event-listener"


class EventWakeup:
    """One LISTEN connection per process; async waiters are woken when an event commits anywhere."""

    def __init__(
        self, database: Database, *, reconnect_s: float = 1.0, listen_timeout_s: float = 0.5
    ) -> None:
        self._db = database
        self._reconnect_s = reconnect_s
        self._listen_timeout_s = listen_timeout_s
        self._lock = threading.Lock()
        self._generation = 0
        self._waiters: set[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = set()
        self._stop = threading.Event()
        self._listening = threading.Event()
        self.notifications = 0  # heard since start (a figure for tests and metrics)
        self.connections = 0  # LISTEN connections opened since start (1 + reconnects)
        self._thread = threading.Thread(target=self._run, name="throwbox-event-listener", daemon=True)

    @property
    def listening(self) -> bool:
        """True while the LISTEN connection is up (streams then poll only as a fallback)."""
        return self._listening.is_set()

    @property
    def generation(self) -> int:
        """A counter bumped on every wake: read it before reading the events table, pass it to `wait`."""
        return self._generation

    def start(self) -> None:
        """Start listening."""
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and close the connection."""
        self._stop.set()
        self._thread.join(timeout=self._listen_timeout_s + 5)

    def wait_listening(self, timeout: float) -> bool:
        """Block until the listener is connected (for start-up and tests)."""
        return self._listening.wait(timeout)

    async def wait(self, generation: int, timeout: float) -> bool:
        """Wait until something was heard after `generation` was read, or `timeout`; True when woken.

        Comparing generations closes the gap between a stream's last read and this wait: a notification
        that arrived in between returns at once.
        """
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()
        entry = (loop, woken)
        with self._lock:
            if self._generation != generation:
                return True
            self._waiters.add(entry)
        try:
            await asyncio.wait_for(woken.wait(), timeout)
            return True
        except TimeoutError:
            return False
        finally:
            with self._lock:
                self._waiters.discard(entry)

    def wake(self) -> None:
        """Wake every waiting stream (the listener calls it; so may anything that knows of a new event)."""
        with self._lock:
            self._generation += 1
            waiters = list(self._waiters)
            self._waiters.clear()
        for loop, woken in waiters:
            with contextlib.suppress(RuntimeError):  # the loop closed
                loop.call_soon_threadsafe(woken.set)

    def _connect(self) -> Any:
        import psycopg

        engine = self._db.engine
        cargs, cparams = engine.dialect.create_connect_args(engine.url)
        cparams = {**cparams, "autocommit": True, "application_name": APPLICATION_NAME}
        connection = psycopg.connect(*cargs, **cparams)
        connection.execute(f"LISTEN {NOTIFY_CHANNEL}")
        return connection

    @staticmethod
    def supported(database: Database) -> bool:
        """True on PostgreSQL through psycopg (3), the driver this listener speaks."""
        return not database.is_sqlite and database.engine.dialect.driver == "psycopg"

    def _run(self) -> None:
        failing = False
        while not self._stop.is_set():
            try:
                with self._connect() as connection:
                    if failing:
                        log.info("event listener listening again")
                    failing = False
                    self.connections += 1
                    self._listening.set()
                    self.wake()  # whatever was committed while no one listened
                    while not self._stop.is_set():
                        heard = 0
                        for _notify in connection.notifies(timeout=self._listen_timeout_s, stop_after=1000):
                            heard += 1
                            self.notifications += 1
                            self.wake()
                        if heard == 0 and connection.closed:
                            break
            except Exception as exc:  # a refused or dropped connection: poll meanwhile, then reconnect
                if not self._stop.is_set() and not failing:  # once per outage, not once per retry
                    log.warning("event listener lost its connection (%s); reconnecting", type(exc).__name__)
                failing = True
            finally:
                self._listening.clear()
            self._stop.wait(self._reconnect_s)
