"""Group commit for the audit records of requests that wrote nothing (reads, refusals).

A writing request's record is committed in its own transaction, with its work
(``runtime.run_post``). Every other request's record used to cost a transaction and a
durable commit (an fsync on SQLite, a WAL flush on PostgreSQL) of its own: a third of a
read's time. Here the records of requests finishing at the same moment share one:

- a request hands its record to the app's ``AuditBatcher`` (from the audit middleware,
  on the event loop) and waits for it, without holding a worker thread;
- a writer thread of the batcher's own takes every record waiting, at most
  ``RIDERCRM_AUDIT_BATCH_MAX``, and stores them in one transaction of two bulk INSERTs
  (``audit.service.record_calls``) on a Core connection; the records that arrive
  meanwhile wait for its next batch;
- every request of the batch is answered only once the batch is committed;
- before it takes a batch, the writer waits up to ``RIDERCRM_AUDIT_GATHER_MS`` for the
  records of the requests still in flight (the middleware counts them: ``expect``),
  so that they share its commit; it does not wait when none is in flight (a lone
  client's read is written at once), nor once they have all handed their records.

So the guarantee is unchanged: the ``X-Audit-Id`` a client sees always names a stored
record, a SIGKILL loses no record of an answered request (only those of requests still
in flight, which got no answer), and shutting down loses nothing: no record waits for
anything but the batches before it, which the writer is writing. What changes is the
cost: under concurrency one commit serves many requests, and a commit is not synced
to disk before they are answered (``db.LAZY_COMMIT``): in the database's log, where a
crash of this process cannot take it; a power loss or an operating-system crash can
take the records committed since the last durable commit or checkpoint (README,
"Guarantees").

If a batch cannot be stored, each of its records is tried alone, so one record that a
database refuses (or a full disk that frees up) fails only its own request (503, as
before).

The writer is one thread, started when records arrive and gone after ``IDLE_SECONDS``
without any; it keeps a connection while records keep coming (``LINGER_SECONDS``). One
is enough on either database: its commits do not wait for the disk, and while it writes
a batch the next one gathers (several writers on PostgreSQL, which
the durable commits needed, each took batches of one record, at more CPU a request).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections import deque
from dataclasses import dataclass

from sqlalchemy import Connection, Engine

from ridercrm.audit.service import Finished, record_calls
from ridercrm.db import write_transaction, writing_connection

IDLE_SECONDS = 5.0
"""How long a writer thread waits for records before it ends (a new one starts when
records arrive again)."""
LINGER_SECONDS = 0.05
"""How long the writer keeps its connection after a batch for the next one; then it goes
back to the pool (an app with nothing to write holds none: tests make many apps, and
PostgreSQL's connections are counted)."""


@dataclass(eq=False)
class _Handed:
    """A record handed over, and the future its request waits on, on its loop."""

    finished: Finished
    loop: asyncio.AbstractEventLoop
    done: asyncio.Future[None]


@dataclass(eq=False)
class Expected:
    """A request ``batcher`` counts as in flight, until it hands its record over
    (``batcher.write``) or not (:meth:`forget`)."""

    batcher: AuditBatcher
    settled: bool = False

    def forget(self) -> None:
        """This request hands no record over (see ``AuditBatcher.forget``)."""
        self.batcher.forget(self)


class AuditBatcher:
    """Writes the records handed to :meth:`write` in shared transactions (see module)."""

    def __init__(
        self, engine: Engine, *, redact: bool, max_batch: int, gather_seconds: float = 0.0
    ) -> None:
        self._engine = engine
        self._redact = redact
        self._max_batch = max(1, max_batch)
        self._gather_seconds = max(0.0, gather_seconds)
        self._pending: deque[_Handed] = deque()
        self._expected = 0  # requests in flight whose records may yet be handed over
        self._running = False  # the writer thread is alive
        self._idle = False  # and waiting for records
        self._gathering = False  # or for the records of the requests in flight
        self._turn = threading.Condition()

    def expect(self) -> Expected:
        """A request began whose record may be handed over (``write``) or not (``forget``):
        the writer waits for it, a little, before it commits a batch."""
        with self._turn:
            self._expected += 1
        return Expected(self)

    def forget(self, expected: Expected) -> None:
        """The request ``expected`` hands no record over (a write's record is committed
        with its work; a flood's refusal has none). Nothing if it handed one over."""
        with self._turn:
            self._settle(expected)
            if self._gathering and self._expected <= 0:
                self._turn.notify()

    def _settle(self, expected: Expected) -> None:
        """No longer count ``expected`` as in flight, once (the lock held by the caller)."""
        if not expected.settled:
            expected.settled = True
            self._expected -= 1

    async def write(self, finished: Finished, expected: Expected | None = None) -> None:
        """Store ``finished``'s record; return once it is committed (raise if it cannot be).
        ``expected``: what :meth:`expect` gave its request."""
        loop = asyncio.get_running_loop()
        handed = _Handed(finished, loop, loop.create_future())
        with self._turn:
            self._pending.append(handed)
            if expected is not None:
                self._settle(expected)
            if self._idle or (
                self._gathering and (self._expected <= 0 or len(self._pending) >= self._max_batch)
            ):
                self._turn.notify()
            elif not self._running:
                self._running = True
                threading.Thread(target=self._writer, name="ridercrm-audit", daemon=True).start()
        await handed.done

    def _writer(self) -> None:
        """Write batches while records arrive, on one connection kept while they keep
        coming (``LINGER_SECONDS``); end after ``IDLE_SECONDS`` without any."""
        connection: Connection | None = None
        try:
            while True:
                holding = connection is not None
                batch = self._next_batch(
                    LINGER_SECONDS if holding else IDLE_SECONDS, last=not holding
                )
                if batch is None:
                    if connection is None:
                        return
                    # Back to the pool between bursts: an idle app holds no connection.
                    connection.close()
                    connection = None
                    continue
                try:
                    if connection is None:
                        # Not synced to disk before the requests are answered
                        # (db.LAZY_COMMIT; module).
                        connection = writing_connection(self._engine, durable=False)
                    outcomes = self._outcomes(connection, [handed.finished for handed in batch])
                except Exception as exc:  # no connection to be had: the batch's requests fail
                    outcomes = [exc] * len(batch)
                self._answer(batch, outcomes)
        finally:
            if connection is not None:
                connection.close()

    def _next_batch(self, timeout: float, *, last: bool) -> list[_Handed] | None:
        """The records waiting, at most a batch of them, once there are any; None after
        ``timeout`` seconds without any (with ``last``, this writer counted out then)."""
        with self._turn:
            if not self._pending:
                self._idle = True
                self._turn.wait(timeout)
                self._idle = False
                if not self._pending:
                    if last:
                        # Decided under the lock: a record handed over after this starts
                        # a writer of its own (``write``).
                        self._running = False
                    return None
            self._gather()
            return [
                self._pending.popleft() for _ in range(min(self._max_batch, len(self._pending)))
            ]

    def _gather(self) -> None:
        """Wait (the lock held by the caller) up to ``gather_seconds`` for the records of
        the requests still in flight, while the batch has room. Without it, eight
        clients' product reads came in batches of one record (2,103 of 2,500 batches),
        and a record alone cost the writer 160 µs of CPU on SQLite, one of four 66 µs
        (docs/decisions.md, "Group commit that waits for the requests in flight")."""
        deadline = time.monotonic() + self._gather_seconds
        while self._expected > 0 and len(self._pending) < self._max_batch:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._gathering = True
            try:
                self._turn.wait(remaining)
            finally:
                self._gathering = False

    def _outcomes(
        self, connection: Connection, batch: list[Finished]
    ) -> list[BaseException | None]:
        """Store ``batch`` in one transaction, or if it cannot be, each record alone: what
        became of each (None: stored)."""
        try:
            self._store(connection, batch)
        except Exception:
            outcomes: list[BaseException | None] = []
            for finished in batch:
                try:
                    self._store(connection, [finished])
                except Exception as exc:
                    outcomes.append(exc)
                else:
                    outcomes.append(None)
            return outcomes
        return [None] * len(batch)

    def _store(self, connection: Connection, batch: list[Finished]) -> None:
        # A connection the database dropped is replaced at the next transaction's start.
        with write_transaction(connection):
            record_calls(connection, batch, redact=self._redact)

    @staticmethod
    def _answer(batch: list[_Handed], outcomes: list[BaseException | None]) -> None:
        """Settle each request's future, with one call into each event loop."""
        by_loop: dict[asyncio.AbstractEventLoop, list[tuple[_Handed, BaseException | None]]] = {}
        for handed, error in zip(batch, outcomes, strict=True):
            by_loop.setdefault(handed.loop, []).append((handed, error))
        for loop, settled in by_loop.items():
            # A closed loop (RuntimeError) has nobody left to answer.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_settle, settled)


def _settle(settled: list[tuple[_Handed, BaseException | None]]) -> None:
    for handed, error in settled:
        if handed.done.done():  # its request was cancelled; the record is stored all the same
            continue
        if error is None:
            handed.done.set_result(None)
        else:
            handed.done.set_exception(error)
