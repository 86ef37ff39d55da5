"""PostgreSQL's pooled connections are pinged after they sat idle, or after a lost one was
seen, not at every checkout (docs/decisions.md, "Driver reads and idle pings"): a
connection that died in the pool is replaced before it serves."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, create_engine, literal, select, text

from ridercrm import db
from ridercrm.config import Settings
from ridercrm.db import build_engine, driver_reads, session_factory, session_scope

pytestmark = pytest.mark.postgresql

ONE = select(literal(1).label("one"))


@pytest.fixture
def pool(postgres_ready: str) -> Iterator[Engine]:
    engine = build_engine(Settings(database_url=postgres_ready, db_pool_size=2))
    yield engine
    engine.dispose()


def backends(engine: Engine, count: int) -> list[int]:
    """Check out ``count`` connections at once (so the pool holds that many), then give
    them back; their server process ids."""
    connections = [engine.connect() for _ in range(count)]
    pids = [c.execute(text("SELECT pg_backend_pid()")).scalar_one() for c in connections]
    for connection in connections:
        connection.close()
    return pids


def terminate(url: str, pids: list[int]) -> None:
    other = create_engine(url)
    with other.connect() as connection:
        for pid in pids:
            connection.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
    other.dispose()
    time.sleep(0.2)  # the server closes their sockets


def test_a_connection_that_died_while_idle_is_replaced_before_it_serves(
    pool: Engine, postgres_ready: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    killed = backends(pool, 2)
    terminate(postgres_ready, killed)
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 0.1)  # they sat idle 0.2 s
    with driver_reads(pool) as reads:
        assert reads.first(ONE).one == 1
    with session_scope(session_factory(pool)) as session:
        pid = session.execute(text("SELECT pg_backend_pid()")).scalar_one()
    assert pid not in killed


def test_a_connection_found_dead_in_use_has_the_others_pinged(
    pool: Engine, postgres_ready: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 60.0)  # never idle long enough
    killed = backends(pool, 2)
    terminate(postgres_ready, killed)
    # Used a moment ago, the first is not pinged: its read fails, as one in flight would.
    with pytest.raises(pool.dialect.loaded_dbapi.OperationalError):  # noqa: SIM117
        with driver_reads(pool) as reads:
            reads.first(ONE)
    # The other, checked in before the loss was seen, is pinged and replaced.
    for _ in range(2):
        with driver_reads(pool) as reads:
            assert reads.first(ONE).one == 1
    assert set(backends(pool, 2)).isdisjoint(killed)
