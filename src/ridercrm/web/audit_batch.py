"""Group commit for the audit records of requests that wrote nothing (reads, refusals).

A writing request's record is committed in its own transaction, with its work
(``runtime.run_post``). Every other request's record used to cost a transaction and a
durable commit (an fsync on SQLite, a WAL flush on PostgreSQL) of its own: a third of a
read's time. Here the records of requests finishing at the same moment share one:

- a request hands its record to the app's ``AuditBatcher`` and waits;
- if no batch is being written, it starts one; otherwise its record waits for the next;
- one batch is one transaction of two multi-row INSERTs (``audit.service.record_calls``)
  holding every record that arrived while the previous batch was being committed, at
  most ``RIDERCRM_AUDIT_BATCH_MAX`` of them;
- every request of the batch is answered only once the batch is committed.

So the guarantee is unchanged: the ``X-Audit-Id`` a client sees always names a stored
record, a SIGKILL loses no record of an answered request (only those of requests still
in flight, which got no answer), and shutting down loses nothing: no record waits for
anything but the batch being written, which the request it belongs to is waiting for.
What changes is the cost: under concurrency one commit serves many reads.

If a batch cannot be stored, each of its records is tried alone, so one record that a
database refuses (or a full disk that frees up) fails only its own request (503, as
before).

A read that succeeded hands its record over from the worker thread that ran it
(:meth:`AuditBatcher.write_here`, ``runtime.run_read``), where the same group commit is
done between threads: the first thread to find no batch being written writes every
record pending (its own and those that arrived meanwhile) and wakes their threads; the
others wait for theirs. The read's request then goes back to the event loop once, with
its record already committed, instead of handing the record to the loop and waiting
there for another thread to write it.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from ridercrm.audit.service import Finished, record_calls
from ridercrm.db import session_scope


@dataclass
class _LoopState:
    """The batcher's state on one event loop (futures belong to their loop)."""

    pending: list[tuple[Finished, asyncio.Future[None]]] = field(default_factory=list)
    writers: set[asyncio.Task[None]] = field(default_factory=set)  # tasks writing batches


@dataclass(eq=False)
class _Handed:
    """A record handed over by a worker thread, and what became of it."""

    finished: Finished
    done: bool = False
    error: BaseException | None = None


class AuditBatcher:
    """Writes the records handed to :meth:`write` in shared transactions (see module)."""

    def __init__(
        self,
        sessions: sessionmaker[Session],
        *,
        redact: bool,
        max_batch: int,
        writers: int = 1,
    ) -> None:
        """``writers``: batches written at the same time at most. One on SQLite (its
        writers take turns anyway); a few on PostgreSQL, which commits transactions side by
        side and groups their log flushes itself: one writer there would make every
        record wait for the batch before its own."""
        self._sessions = sessions
        self._redact = redact
        self._max_batch = max(1, max_batch)
        self._writers = max(1, writers)
        self._states: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopState] = (
            weakref.WeakKeyDictionary()
        )
        # The worker threads' group commit (write_here): records waiting, batches being
        # written, and the condition their threads wait on.
        self._handed: list[_Handed] = []
        self._writing = 0
        self._turn = threading.Condition()

    def write_here(self, finished: Finished) -> None:
        """Store ``finished``'s record from a worker thread, in a transaction shared with
        the records other threads hand over meanwhile; return once it is committed (raise
        if it cannot be)."""
        mine = _Handed(finished)
        with self._turn:
            self._handed.append(mine)
            while not mine.done:
                if self._writing >= self._writers or not self._handed:
                    self._turn.wait()
                    continue
                batch = self._handed[: self._max_batch]
                del self._handed[: self._max_batch]
                self._writing += 1
                self._turn.release()
                try:
                    outcomes = self._outcomes([handed.finished for handed in batch])
                finally:
                    self._turn.acquire()
                    self._writing -= 1
                for handed, error in zip(batch, outcomes, strict=True):
                    handed.done, handed.error = True, error
                self._turn.notify_all()
        if mine.error is not None:
            raise mine.error

    def _outcomes(self, batch: list[Finished]) -> list[BaseException | None]:
        """Store ``batch`` in one transaction, or if it cannot be, each record alone: what
        became of each (None: stored)."""
        try:
            self._store(batch)
        except Exception:
            outcomes: list[BaseException | None] = []
            for finished in batch:
                try:
                    self._store([finished])
                except Exception as exc:
                    outcomes.append(exc)
                else:
                    outcomes.append(None)
            return outcomes
        return [None] * len(batch)

    async def write(self, finished: Finished) -> None:
        """Store ``finished``'s record; return once it is committed (raise if it cannot be)."""
        loop = asyncio.get_running_loop()
        state = self._states.get(loop)
        if state is None:
            state = self._states[loop] = _LoopState()
        done: asyncio.Future[None] = loop.create_future()
        state.pending.append((finished, done))
        if len(state.writers) < self._writers:
            writer = loop.create_task(self._drain(state))
            state.writers.add(writer)
            writer.add_done_callback(state.writers.discard)
        await done

    async def _drain(self, state: _LoopState) -> None:
        """Write batches until nothing is pending (started by the request that found no
        batch being written; every request waits for its own future only).

        The writer leaves ``state.writers`` in the same step as it finds nothing pending,
        with no ``await`` between: a record handed over after that check starts a writer
        of its own. Left to the task's done callback, which runs a step later, a record
        arriving in between would find a writer that had already stopped, and wait until
        some later request started one (for ever, if none came).
        """
        task = asyncio.current_task()
        try:
            await self._write_pending(state)
        finally:
            if task is not None:
                state.writers.discard(task)

    async def _write_pending(self, state: _LoopState) -> None:
        while state.pending:
            batch = state.pending[: self._max_batch]
            del state.pending[: self._max_batch]
            try:
                await run_in_threadpool(self._store, [finished for finished, _ in batch])
            except Exception:
                for finished, done in batch:
                    try:
                        await run_in_threadpool(self._store, [finished])
                    except Exception as exc:
                        _settle(done, exc)
                    else:
                        _settle(done, None)
            else:
                for _, done in batch:
                    _settle(done, None)

    def _store(self, batch: list[Finished]) -> None:
        with session_scope(self._sessions, write=True) as session:
            record_calls(session, batch, redact=self._redact)


def _settle(done: asyncio.Future[None], error: BaseException | None) -> None:
    if done.done():  # its request was cancelled; the record is stored all the same
        return
    if error is None:
        done.set_result(None)
    else:
        done.set_exception(error)
