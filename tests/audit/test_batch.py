"""The audit group commit (web.audit_batch): every record handed over is stored and its
request answered, whenever it arrives (the README's Guarantees).

Each test runs the batcher as the app makes it for its database: on SQLite its writer
thread, on PostgreSQL its batches written on the requests' event loop (web.loop_db)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from starlette.requests import Request

from ridercrm.audit import subjects
from ridercrm.audit.call import Call
from ridercrm.audit.models import AuditRecord, AuditSubject
from ridercrm.audit.service import Finished
from ridercrm.db import session_scope
from ridercrm.web import audit_batch
from ridercrm.web.audit_batch import AuditBatcher, Expected
from ridercrm.web.loop_db import LoopConnections
from ridercrm.web.runtime import NOT_HANDING, not_handing_a_record
from tests.courses import builders


def batcher_of(
    sessions: sessionmaker[Session], kind: type[AuditBatcher] = AuditBatcher, **options: Any
) -> AuditBatcher:
    """A batcher on the sessions' database, as ``create_app`` makes it there."""
    engine = sessions.kw["bind"]
    connections = None if engine.dialect.name == "sqlite" else LoopConnections(engine, 10)
    return kind(engine, loop_connections=connections, **options)


def run_in_own_loop(
    coroutine: Coroutine[Any, Any, None], batcher: AuditBatcher | None = None
) -> None:
    """Run on a thread of its own: the main thread may still hold a running loop left by
    another test in this worker (Playwright's sync API keeps one for its session).
    ``batcher``'s connections on that loop are closed at its end, as the app's shutdown
    closes them."""

    async def whole() -> None:
        try:
            await coroutine
        finally:
            if batcher is not None and batcher.loop_connections is not None:
                await batcher.loop_connections.close()

    with ThreadPoolExecutor(max_workers=1) as pool:
        pool.submit(asyncio.run, whole()).result()


def finished(path: str) -> Finished:
    return Finished(Call(method="GET", path=path), status=200, response_body=b"[]", duration_ms=1)


def test_a_record_handed_over_as_the_writer_stops_is_stored_and_answered(
    sessions: sessionmaker[Session],
) -> None:
    """The next record arrives in the step after the writer found nothing pending (the
    moment a request answered by the last batch hands over another): it must not wait
    for a request that may never come."""
    batcher = batcher_of(sessions, redact=False, max_batch=100)

    async def two_requests() -> None:
        await batcher.write(finished("/first"))
        # Awaited directly, so that it starts in this very step (asyncio.wait_for would
        # start it in a task of its own, a step later); a watchdog ends a wait for ever.
        task = asyncio.current_task()
        assert task is not None
        watchdog = asyncio.get_running_loop().call_later(10, task.cancel)
        await batcher.write(finished("/second"))
        watchdog.cancel()

    run_in_own_loop(two_requests(), batcher)
    with session_scope(sessions) as session:
        paths = session.scalars(select(AuditRecord.path).order_by(AuditRecord.path)).all()
    assert paths == ["/first", "/second"]


def test_records_from_many_requests_at_once_are_all_stored(
    sessions: sessionmaker[Session],
) -> None:
    batcher = batcher_of(sessions, redact=False, max_batch=7)

    async def many() -> None:
        async def one(index: int) -> None:
            await asyncio.sleep(index % 5 / 1000)
            await batcher.write(finished(f"/r{index:03d}"))

        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(60))), timeout=30)

    run_in_own_loop(many(), batcher)
    with session_scope(sessions) as session:
        stored = session.scalars(select(AuditRecord.path)).all()
    assert sorted(stored) == [f"/r{i:03d}" for i in range(60)]


def test_a_record_a_database_refuses_fails_only_its_own_request(
    sessions: sessionmaker[Session],
) -> None:
    """One record that cannot be stored (here: an id already taken) fails its own
    request's write; the others of its batch are stored."""
    batcher = batcher_of(sessions, redact=False, max_batch=50)
    taken = finished("/taken")
    again = Finished(
        Call(method="GET", path="/again", audit_id=taken.call.audit_id),
        status=200,
        response_body=b"[]",
        duration_ms=1,
    )
    items = [finished(f"/ok{i}") for i in range(5)]
    items.insert(2, again)
    outcomes: list[str] = []

    async def requests() -> None:
        await batcher.write(taken)

        async def one(item: Finished) -> str:
            try:
                await batcher.write(item)
            except Exception:
                return "refused"
            return "stored"

        outcomes.extend(await asyncio.wait_for(asyncio.gather(*map(one, items)), timeout=60))

    run_in_own_loop(requests(), batcher)
    assert outcomes == ["stored", "stored", "refused", "stored", "stored", "stored"]
    with session_scope(sessions) as session:
        stored = session.scalars(select(AuditRecord.path)).all()
    assert sorted(stored) == ["/ok0", "/ok1", "/ok2", "/ok3", "/ok4", "/taken"]


def test_writers_end_when_idle_and_start_again(
    sessions: sessionmaker[Session], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer thread ends once no record has come for a while; a record handed over
    after that starts another, and is stored and answered. On PostgreSQL no thread
    writes: the loop's task ends as its last batch is stored."""
    monkeypatch.setattr(audit_batch, "IDLE_SECONDS", 0.05)
    batcher = batcher_of(sessions, redact=False, max_batch=10)
    on_loop = batcher.loop_connections is not None

    def thread_writing() -> bool:
        # This batcher's writer only: other tests' apps in this process have theirs.
        return any(
            thread.name == "ridercrm-audit" and getattr(thread, "_target", None) == batcher._writer
            for thread in threading.enumerate()
        )

    def writing() -> bool:
        if on_loop:
            tasks = [batches.task for batches in batcher._loops.values()]
            return any(task is not None and not task.done() for task in tasks)
        return thread_writing()

    async def later() -> None:
        await batcher.write(finished("/before"))
        if on_loop:
            assert not thread_writing()
        for _ in range(100):
            if not writing():
                break
            await asyncio.sleep(0.02)
        assert not writing(), "the idle writer did not end"
        await asyncio.wait_for(batcher.write(finished("/after")), timeout=10)

    run_in_own_loop(later(), batcher)
    with session_scope(sessions) as session:
        stored = session.scalars(select(AuditRecord.path)).all()
    assert sorted(stored) == ["/after", "/before"]


class CountingBatcher(AuditBatcher):
    """A batcher that notes the size of each batch it stores (and stores it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches: list[int] = []

    def _store(self, connection: Any, batch: list[Finished]) -> None:
        super()._store(connection, batch)
        self.batches.append(len(batch))

    async def _store_on_loop(self, connection: Any, batch: list[Finished]) -> None:
        await super()._store_on_loop(connection, batch)
        self.batches.append(len(batch))


GATHER = 5.0  # seconds: far longer than any of these tests may take


def test_the_records_of_requests_in_flight_share_one_commit(
    sessions: sessionmaker[Session],
) -> None:
    """Six requests in flight hand their records over at different moments: the writer
    waits for all of them and commits one batch (not one for the first, one for the
    rest), and answers as soon as the last one is there, not at the end of the window."""
    batcher = batcher_of(
        sessions, CountingBatcher, redact=False, max_batch=100, gather_seconds=GATHER
    )

    async def six() -> float:
        expected = [batcher.expect() for _ in range(6)]

        async def one(index: int) -> None:
            await asyncio.sleep(index * 0.02)
            await batcher.write(finished(f"/g{index}"), expected[index])

        loop = asyncio.get_running_loop()
        began = loop.time()
        await asyncio.wait_for(asyncio.gather(*(one(i) for i in range(6))), timeout=30)
        return loop.time() - began

    took: list[float] = []

    async def run() -> None:
        took.append(await six())

    run_in_own_loop(run(), batcher)
    assert batcher.batches == [6]
    assert took[0] < GATHER / 2, f"the batch waited out the window: {took[0]:.2f} s"
    with session_scope(sessions) as session:
        stored = session.scalars(select(AuditRecord.path)).all()
    assert sorted(stored) == [f"/g{i}" for i in range(6)]


def test_a_lone_request_is_written_at_once(sessions: sessionmaker[Session]) -> None:
    """No other request in flight: the writer does not wait the gathering window."""
    batcher = batcher_of(
        sessions, CountingBatcher, redact=False, max_batch=100, gather_seconds=GATHER
    )
    took: list[float] = []

    async def lone() -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        await asyncio.wait_for(batcher.write(finished("/lone"), batcher.expect()), timeout=30)
        took.append(loop.time() - began)

    run_in_own_loop(lone(), batcher)
    assert batcher.batches == [1]
    assert took[0] < GATHER / 2, f"a lone record waited out the window: {took[0]:.2f} s"


async def _read_beside_a_write(
    batcher: CountingBatcher, release: Callable[[Expected, Expected], Awaitable[None]]
) -> float:
    """A read's record handed over while a write is in flight; ``release`` (given both
    requests' tokens, the read's first) says the write hands none over. The read must
    wait for the write until then, and go at once after: the seconds it took."""
    reading, writing = batcher.expect(), batcher.expect()
    loop = asyncio.get_running_loop()
    began = loop.time()
    written = asyncio.ensure_future(batcher.write(finished("/read"), reading))
    await asyncio.sleep(0.05)
    assert not written.done(), "the writer did not wait for the request in flight"
    await release(reading, writing)
    await asyncio.wait_for(written, timeout=30)
    return loop.time() - began


def test_a_request_that_hands_no_record_over_ends_the_wait(
    sessions: sessionmaker[Session],
) -> None:
    """Two requests in flight; one commits its own record (a write) and says so: the
    other's record is written then, without waiting out the window for the first."""
    batcher = batcher_of(
        sessions, CountingBatcher, redact=False, max_batch=100, gather_seconds=GATHER
    )

    async def forget(reading: Expected, writing: Expected) -> None:
        batcher.forget(writing)
        batcher.forget(reading)  # handed over already: nothing changes

    took: list[float] = []

    async def run() -> None:
        took.append(await _read_beside_a_write(batcher, forget))

    run_in_own_loop(run(), batcher)
    assert batcher.batches == [1]
    assert took[0] < GATHER / 2, f"the record waited out the window: {took[0]:.2f} s"


def test_a_request_known_to_write_no_longer_holds_the_batch(
    sessions: sessionmaker[Session],
) -> None:
    """The middleware leaves the request a way to say it will hand no record over
    (``runtime.not_handing_a_record``, called by a write once it knows it writes): a
    read's record then goes without waiting out the window for the write's whole work."""
    batcher = batcher_of(
        sessions, CountingBatcher, redact=False, max_batch=100, gather_seconds=GATHER
    )

    async def known_to_write(_reading: Expected, writing: Expected) -> None:
        # As the middleware leaves it in the request's state, and _run_post calls it.
        write_request = Request({"type": "http", "state": {NOT_HANDING: writing.forget}})
        await asyncio.to_thread(not_handing_a_record, write_request)

    took: list[float] = []

    async def run() -> None:
        took.append(await _read_beside_a_write(batcher, known_to_write))

    run_in_own_loop(run(), batcher)
    assert batcher.batches == [1]
    assert took[0] < GATHER / 2, f"the record waited out the window: {took[0]:.2f} s"


def test_a_reads_record_naming_a_course_names_its_person_and_booking_number(
    sessions: sessionmaker[Session],
) -> None:
    """The related look-up of the group commit (on PostgreSQL, the loop's: ``= ANY``
    arrays): a record whose path names a course is found by the course's person and
    booking number too, and one naming only a booking number by the course and person."""
    with session_scope(sessions, write=True) as session:
        lap, ann = builders.product(session), builders.person(session)
        course_id = builders.course(session, ann, lap, booking_number="HB-77")
    batcher = batcher_of(sessions, redact=False, max_batch=10)
    by_course = finished(f"/admin/courses/{course_id}")
    by_number = Finished(
        Call(method="GET", path="/admin/courses"),
        status=200,
        response_body=b'{"booking_number": "HB-77"}',
        duration_ms=1,
    )

    async def two() -> None:
        await asyncio.gather(batcher.write(by_course), batcher.write(by_number))

    run_in_own_loop(two(), batcher)
    expected = {subjects.course(course_id), subjects.person(ann), subjects.booking("HB-77")}
    with session_scope(sessions) as session:
        for record in (by_course, by_number):
            named = session.scalars(
                select(AuditSubject.subject).where(AuditSubject.audit_id == record.call.audit_id)
            ).all()
            assert set(named) == expected, record.call.path
