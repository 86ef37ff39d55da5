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

On SQLite the writer is one thread, started when records arrive and gone after
``IDLE_SECONDS`` without any; it keeps a connection while records keep coming
(``LINGER_SECONDS``). One is enough: its commits do not wait for the disk, and while it
writes a batch the next one gathers.

On PostgreSQL (``loop_connections``, web.loop_db) no thread writes: each event loop's
records are gathered and written, the same way, by a task on that loop, on the loop's
asynchronous connections (``synchronous_commit`` off there, as ``db.LAZY_COMMIT`` gives
the thread's). A thread taking the GIL from the event loop around every round trip cost a
product read more CPU than the read itself (docs/decisions.md,
"PostgreSQL reads on the event loop"). What is stored, and when it is answered, are the
same.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import psycopg
from sqlalchemy import Connection, Engine

from ridercrm.audit.service import (
    RECORD_COLUMNS,
    RECORDS,
    SUBJECT_COLUMNS,
    SUBJECTS,
    Finished,
    record_calls,
    record_rows,
    related_subjects_read,
)
from ridercrm.db import write_transaction, writing_connection
from ridercrm.web.loop_db import AwaitingReads, LoopConnections

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
class _LoopBatches:
    """The records handed over on one event loop, written by a task on that loop
    (``AuditBatcher`` with ``loop_connections``)."""

    loop: asyncio.AbstractEventLoop
    pending: deque[tuple[Finished, asyncio.Future[None]]] = field(default_factory=deque)
    task: asyncio.Task[None] | None = None
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    gathering: bool = False


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
        self,
        engine: Engine,
        *,
        redact: bool,
        max_batch: int,
        gather_seconds: float = 0.0,
        loop_connections: LoopConnections | None = None,
    ) -> None:
        self._engine = engine
        # PostgreSQL: batches written on the requests' event loops (module).
        self._loop_connections = loop_connections
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopBatches] = (
            weakref.WeakKeyDictionary()
        )
        self._redact = redact
        self._max_batch = max(1, max_batch)
        self._gather_seconds = max(0.0, gather_seconds)
        self._pending: deque[_Handed] = deque()
        self._expected = 0  # requests in flight whose records may yet be handed over
        self._running = False  # the writer thread is alive
        self._idle = False  # and waiting for records
        self._gathering = False  # or for the records of the requests in flight
        self._turn = threading.Condition()

    @property
    def loop_connections(self) -> LoopConnections | None:
        """PostgreSQL: the connections its batches are written with on the event loop."""
        return self._loop_connections

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
            gathering = (
                [batches for batches in self._loops.values() if batches.gathering]
                if self._expected <= 0
                else []
            )
        for batches in gathering:  # from a worker thread, or from the loop itself
            with contextlib.suppress(RuntimeError):  # a closed loop: nobody waits there
                batches.loop.call_soon_threadsafe(batches.wake.set)

    def _settle(self, expected: Expected) -> None:
        """No longer count ``expected`` as in flight, once (the lock held by the caller)."""
        if not expected.settled:
            expected.settled = True
            self._expected -= 1

    async def write(self, finished: Finished, expected: Expected | None = None) -> None:
        """Store ``finished``'s record; return once it is committed (raise if it cannot be).
        ``expected``: what :meth:`expect` gave its request."""
        if self._loop_connections is not None:
            await self._write_on_loop(finished, expected)
            return
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

    async def _write_on_loop(self, finished: Finished, expected: Expected | None) -> None:
        """``write`` on PostgreSQL: the record joins its loop's next batch, which a task on
        the loop writes (``_loop_writer``)."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        with self._turn:  # forget() reads the loops' batches from other threads
            batches = self._loops.get(loop)
            if batches is None:
                batches = self._loops[loop] = _LoopBatches(loop)
            batches.pending.append((finished, done))
            if expected is not None:
                self._settle(expected)
            ready = self._expected <= 0 or len(batches.pending) >= self._max_batch
        if batches.task is None or batches.task.done():
            batches.task = loop.create_task(self._loop_writer(batches))
        elif ready and batches.gathering:
            batches.wake.set()
        await done

    async def _loop_writer(self, batches: _LoopBatches) -> None:
        """Write the loop's batches while records wait, each once the requests in flight
        have handed theirs over or ``gather_seconds`` passed (as ``_gather``)."""
        batch: list[tuple[Finished, asyncio.Future[None]]] = []
        try:
            while batches.pending:
                await self._gather_on_loop(batches)
                batch = [
                    batches.pending.popleft()
                    for _ in range(min(self._max_batch, len(batches.pending)))
                ]
                outcomes = await self._loop_outcomes([finished for finished, _done in batch])
                for (_finished, done), error in zip(batch, outcomes, strict=True):
                    if done.done():  # its request was cancelled; the record is stored anyway
                        continue
                    if error is None:
                        done.set_result(None)
                    else:
                        done.set_exception(error)
                batch = []
        except BaseException as exc:
            # Cancelled (the loop is closing): no request may wait for ever for its record.
            failure = RuntimeError(f"the audit writer stopped: {exc!r}")
            for _finished, done in [*batch, *batches.pending]:
                if not done.done():
                    done.set_exception(failure)
            batches.pending.clear()
            raise

    async def _gather_on_loop(self, batches: _LoopBatches) -> None:
        loop = batches.loop
        deadline = loop.time() + self._gather_seconds
        while self._expected > 0 and len(batches.pending) < self._max_batch:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            batches.wake.clear()
            batches.gathering = True
            try:
                await asyncio.wait_for(batches.wake.wait(), remaining)
            except TimeoutError:
                return
            finally:
                batches.gathering = False

    async def _loop_outcomes(self, batch: list[Finished]) -> list[BaseException | None]:
        """What became of each record of ``batch``, written on one of the loop's
        connections; with none to be had, the batch's requests fail at once (as
        ``_writer``'s do)."""
        assert self._loop_connections is not None
        try:
            async with self._loop_connections.connection() as connection:
                return await self._outcomes_on_loop(connection, batch)
        except Exception as exc:
            return [exc] * len(batch)

    async def _outcomes_on_loop(
        self, connection: psycopg.AsyncConnection[Any], batch: list[Finished]
    ) -> list[BaseException | None]:
        """``_outcomes`` on the loop: ``batch`` in one transaction, or if it cannot be,
        each record alone."""
        try:
            await self._store_on_loop(connection, batch)
        except Exception:
            outcomes: list[BaseException | None] = []
            for finished in batch:
                try:
                    await self._store_on_loop(connection, [finished])
                except Exception as exc:
                    outcomes.append(exc)
                else:
                    outcomes.append(None)
            return outcomes
        return [None] * len(batch)

    async def _store_on_loop(
        self, connection: psycopg.AsyncConnection[Any], batch: list[Finished]
    ) -> None:
        assert self._loop_connections is not None
        redact = self._redact

        def store(reads: AwaitingReads) -> None:
            rows, subject_rows = record_rows(
                batch, redact=redact, related=lambda named: related_subjects_read(reads, named)
            )
            reads.insert(RECORDS, RECORD_COLUMNS, rows)
            reads.insert(SUBJECTS, SUBJECT_COLUMNS, subject_rows)

        await self._loop_connections.in_transaction(connection, store)

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
