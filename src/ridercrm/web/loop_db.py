"""PostgreSQL from the event loop: light reads and the audit records of reads, no thread.

On PostgreSQL a light read (``operations.get(light=True)``: ``GET /crm/products``) went to
a worker thread for its two statements, and its audit record to the audit writer's
thread: two hand-offs a request, and the threads took the GIL from each other around
every round trip to the database: 31 voluntary context switches a product read, 0.5
with both on the event loop, and the server's CPU a read 1,330 µs against 1,074 side by
side (bench/README.md, "PostgreSQL reads on the event loop"; docs/decisions.md, same
title). Here both run on the loop, on psycopg's asynchronous connections:

- :class:`LoopConnections`: an app's connections for this, per event loop: at most
  ``RIDERCRM_DB_POOL_SIZE`` in use at once, idle ones kept for the next request, each in
  autocommit mode (a read is a statement, a batch of records one explicit transaction)
  with ``synchronous_commit`` off (what ``db.LAZY_COMMIT`` gives the audit writer's
  commits; a read commits nothing). One idle for more than
  ``db.PING_AFTER_IDLE_SECONDS``, or since a lost connection was last seen, is pinged
  before it serves; a broken one is dropped.
- :meth:`LoopConnections.run`: runs synchronous code (a light read's work, the audit
  records' rows) in a greenlet (SQLAlchemy's ``greenlet_spawn``) whose statements are
  awaited on the loop (:class:`AwaitingReads`, ``await_only``): the work functions stay
  the ones ``db.driver_reads`` runs elsewhere, statement for statement.

The group commit itself stays ``web.audit_batch``'s (``AuditBatcher``); on PostgreSQL it
writes each loop's batches from a task on that loop through these connections.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import psycopg
from sqlalchemy import Engine, Table
from sqlalchemy.util import await_only, greenlet_spawn

from ridercrm import db
from ridercrm.db import DriverReads, described, driver_insert

T = TypeVar("T")


class AwaitingReads(DriverReads):
    """``db.Reads`` whose statements are awaited on an asynchronous connection, for code
    that runs in :meth:`LoopConnections.run`'s greenlet."""

    def _fetched(
        self, sql: str, arguments: Any, many: bool
    ) -> tuple[Sequence[Any], tuple[Any, ...]]:
        return await_only(self._fetch(sql, arguments, many))

    async def _fetch(
        self, sql: str, arguments: Any, many: bool
    ) -> tuple[Sequence[Any], tuple[Any, ...]]:
        cursor = self.connection.cursor()
        try:
            await cursor.execute(sql, arguments)
            found = await cursor.fetchall() if many else await cursor.fetchmany(1)
            return found, described(cursor)
        finally:
            await cursor.close()

    def insert(self, table: Table, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Insert ``rows`` as ``db.bulk_insert`` does (the driver's executemany)."""
        if rows:
            sql, bound = driver_insert(self.dialect, table, columns, rows)
            await_only(self._insert(sql, bound))

    async def _insert(self, sql: str, bound: list[tuple[Any, ...]]) -> None:
        cursor = self.connection.cursor()
        try:
            await cursor.executemany(sql, bound)
        finally:
            await cursor.close()


@dataclass(eq=False)
class _LoopPool:
    turns: asyncio.Semaphore
    idle: list[tuple[psycopg.AsyncConnection[Any], float]] = field(default_factory=list)
    lost_at: float = 0.0


class LoopConnections:
    """An app's asynchronous PostgreSQL connections, per event loop (see module)."""

    def __init__(self, engine: Engine, size: int) -> None:
        self._dialect = engine.dialect
        # The engine's own connection arguments: the same server, database and options.
        args, kwargs = engine.dialect.create_connect_args(engine.url)
        self._args, self._kwargs = tuple(args), dict(kwargs)
        self._size = max(1, size)
        self._pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopPool] = (
            weakref.WeakKeyDictionary()
        )

    async def run(self, work: Callable[[AwaitingReads], T]) -> T:
        """``work(reads)`` in a greenlet, its statements awaited on one of the loop's
        connections; a statement that fails leaves no transaction open."""
        async with self.connection() as connection:
            reads = AwaitingReads(connection, self._dialect)
            return await greenlet_spawn(work, reads)

    async def in_transaction(
        self, connection: psycopg.AsyncConnection[Any], work: Callable[[AwaitingReads], T]
    ) -> T:
        """``work(reads)`` as :meth:`run` runs it, on ``connection`` (one of
        :meth:`connection`'s) in one transaction, committed when ``work`` returns."""
        async with connection.transaction():
            reads = AwaitingReads(connection, self._dialect)
            return await greenlet_spawn(work, reads)

    @contextlib.asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """One of the loop's connections, for as long as the block runs; back to the idle
        ones after it (closed if it was lost or the block was cancelled)."""
        pool = self._pool()
        async with pool.turns:
            connection = await self._take(pool)
            try:
                yield connection
            except psycopg.Error:
                if connection.broken or connection.closed:
                    # Lost: every idle connection is pinged before it serves again.
                    pool.lost_at = time.monotonic()
                    await _close(connection)
                else:
                    pool.idle.append((connection, time.monotonic()))
                raise
            except Exception:
                # The work refused (a key, a missing record): its statements are done.
                pool.idle.append((connection, time.monotonic()))
                raise
            except BaseException:
                await _close(connection)  # cancelled: a statement may still be running
                raise
            if connection.broken:  # lost in a failure the block handled itself
                pool.lost_at = time.monotonic()
                await _close(connection)
            else:
                pool.idle.append((connection, time.monotonic()))

    def _pool(self) -> _LoopPool:
        loop = asyncio.get_running_loop()
        pool = self._pools.get(loop)
        if pool is None:
            pool = self._pools[loop] = _LoopPool(asyncio.Semaphore(self._size))
        return pool

    async def _take(self, pool: _LoopPool) -> psycopg.AsyncConnection[Any]:
        while pool.idle:
            connection, since = pool.idle.pop()
            if connection.broken or connection.closed:
                continue
            if time.monotonic() - since <= db.PING_AFTER_IDLE_SECONDS and since > pool.lost_at:
                return connection
            try:
                await connection.execute("SELECT 1")
            except psycopg.Error:
                await _close(connection)
                continue
            return connection
        connection = await psycopg.AsyncConnection.connect(
            *self._args, **self._kwargs, autocommit=True
        )
        await connection.execute("SET synchronous_commit TO OFF")
        return connection

    async def close(self) -> None:
        """Close the idle connections of the running loop (the app's shutdown)."""
        pool = self._pools.pop(asyncio.get_running_loop(), None)
        if pool is not None:
            for connection, _since in pool.idle:
                await _close(connection)
            pool.idle.clear()


async def _close(connection: psycopg.AsyncConnection[Any]) -> None:
    with contextlib.suppress(psycopg.Error):
        await connection.close()
