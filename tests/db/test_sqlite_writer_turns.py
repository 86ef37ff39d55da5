"""SQLite writers take turns: one waiting behind a long write is served, not refused.

Two engines on one file stand for two worker processes (or the server and
``ridercrm import``). SQLite's busy handler alone gives up after the busy timeout with
"database is locked"; queued on the lock file next to the database, the second writer
waits for the first one's commit however long it takes, then writes.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.exc import OperationalError

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.keys.models import ApiKey
from ridercrm.keys.service import create_key

BUSY_TIMEOUT_MS = 50
HOLD_S = 0.6


@pytest.fixture
def database(tmp_path: Path, sqlite_template: Path) -> Path:
    path = tmp_path / "ridercrm.db"
    shutil.copy(sqlite_template, path)
    return path


@contextmanager
def write_held(engine: Engine, name: str, *, for_s: float | None = None) -> Iterator[None]:
    """Another thread's write transaction (adding key ``name``) open during the block,
    committed when the block ends, or after ``for_s`` seconds if that comes first."""
    holding, release = threading.Event(), threading.Event()

    def writer() -> None:
        with session_scope(session_factory(engine), write=True) as session:
            create_key(session, name=name, scopes=["admin"])
            holding.set()
            release.wait(10 if for_s is None else for_s)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        release.set()
        thread.join()


def key_names(engine: Engine) -> set[str]:
    with session_scope(session_factory(engine)) as session:
        return set(session.scalars(select(ApiKey.name)))


def test_a_writer_waits_its_turn_beyond_the_busy_timeout(database: Path) -> None:
    settings = Settings(
        database_url=f"sqlite:///{database}", sqlite_busy_timeout_ms=BUSY_TIMEOUT_MS
    )
    first, second = build_engine(settings), build_engine(settings)
    with write_held(first, "first", for_s=HOLD_S):
        started = time.monotonic()
        with session_scope(session_factory(second), write=True) as session:
            create_key(session, name="second", scopes=["admin"])
            # It got its turn only once the first writer had committed.
            assert "first" in key_names(second)
        assert time.monotonic() - started > BUSY_TIMEOUT_MS / 1000
    assert {"first", "second"} <= key_names(first)
    assert (database.parent / "ridercrm.db.writelock").exists()
    first.dispose()
    second.dispose()


def test_without_the_queue_the_busy_timeout_refuses_the_waiting_writer(database: Path) -> None:
    """RIDERCRM_SQLITE_WRITER_QUEUE=false: SQLite's busy handler alone, as the setting says."""
    settings = Settings(
        database_url=f"sqlite:///{database}",
        sqlite_busy_timeout_ms=BUSY_TIMEOUT_MS,
        sqlite_writer_queue=False,
    )
    first, second = build_engine(settings), build_engine(settings)
    with (
        write_held(first, "first"),
        pytest.raises(OperationalError, match="locked"),
        session_scope(session_factory(second), write=True),
    ):
        pass
    assert not (database.parent / "ridercrm.db.writelock").exists()
    first.dispose()
    second.dispose()


def test_readers_do_not_wait_for_a_writer(database: Path) -> None:
    engine = build_engine(Settings(database_url=f"sqlite:///{database}"))
    with write_held(engine, "held"):
        started = time.monotonic()
        names = key_names(engine)
        assert time.monotonic() - started < 1.0
        assert "held" not in names  # the writer has not committed yet
    engine.dispose()


def test_a_lock_file_that_cannot_be_opened_costs_the_queue_not_the_write(
    database: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (database.parent / "ridercrm.db.writelock").mkdir()  # a directory cannot be flocked here
    engine = build_engine(Settings(database_url=f"sqlite:///{database}"))
    with caplog.at_level("WARNING", logger="ridercrm.db"):
        for name in ("one", "two"):
            with session_scope(session_factory(engine), write=True) as session:
                create_key(session, name=name, scopes=["admin"])
    assert {"one", "two"} <= key_names(engine)
    warnings = [r for r in caplog.records if r.getMessage() == "SQLite writers not queued"]
    assert len(warnings) == 1  # once, not per write
    engine.dispose()
