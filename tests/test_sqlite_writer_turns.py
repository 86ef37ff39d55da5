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
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.exc import OperationalError

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.keys.models import ApiKey
from ridercrm.keys.service import create_key

BUSY_TIMEOUT_MS = 50
HOLD_S = 0.6


def test_a_writer_waits_its_turn_beyond_the_busy_timeout(
    tmp_path: Path, sqlite_template: Path
) -> None:
    path = tmp_path / "ridercrm.db"
    shutil.copy(sqlite_template, path)
    settings = Settings(database_url=f"sqlite:///{path}", sqlite_busy_timeout_ms=BUSY_TIMEOUT_MS)
    first, second = build_engine(settings), build_engine(settings)
    committed: list[tuple[str, float]] = []
    holding = threading.Event()

    def long_writer() -> None:
        with session_scope(session_factory(first), write=True) as session:
            create_key(session, name="first", scopes=["admin"])
            holding.set()
            time.sleep(HOLD_S)
        committed.append(("first", time.monotonic()))

    thread = threading.Thread(target=long_writer)
    thread.start()
    try:
        assert holding.wait(10)
        with session_scope(session_factory(second), write=True) as session:
            create_key(session, name="second", scopes=["admin"])
        committed.append(("second", time.monotonic()))
    finally:
        thread.join()

    assert [name for name, _ in committed] == ["first", "second"]
    with session_scope(session_factory(first)) as session:
        names = set(session.scalars(select(ApiKey.name)))
    assert {"first", "second"} <= names
    assert (path.parent / "ridercrm.db.writelock").exists()
    first.dispose()
    second.dispose()


def test_without_the_queue_the_busy_timeout_refuses_the_waiting_writer(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """RIDERCRM_SQLITE_WRITER_QUEUE=false: SQLite's busy handler alone, as the setting says."""
    path = tmp_path / "ridercrm.db"
    shutil.copy(sqlite_template, path)
    settings = Settings(
        database_url=f"sqlite:///{path}",
        sqlite_busy_timeout_ms=BUSY_TIMEOUT_MS,
        sqlite_writer_queue=False,
    )
    first, second = build_engine(settings), build_engine(settings)
    holding, release = threading.Event(), threading.Event()

    def long_writer() -> None:
        with session_scope(session_factory(first), write=True) as session:
            create_key(session, name="first", scopes=["admin"])
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=long_writer)
    thread.start()
    try:
        assert holding.wait(10)
        with (
            pytest.raises(OperationalError, match="locked"),
            session_scope(session_factory(second), write=True),
        ):
            pass
    finally:
        release.set()
        thread.join()
    assert not (path.parent / "ridercrm.db.writelock").exists()
    first.dispose()
    second.dispose()


def test_readers_do_not_wait_for_a_writer(tmp_path: Path, sqlite_template: Path) -> None:
    path = tmp_path / "ridercrm.db"
    shutil.copy(sqlite_template, path)
    engine = build_engine(Settings(database_url=f"sqlite:///{path}"))
    sessions = session_factory(engine)
    release = threading.Event()
    holding = threading.Event()

    def writer() -> None:
        with session_scope(sessions, write=True) as session:
            create_key(session, name="held", scopes=["admin"])
            holding.set()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        assert holding.wait(10)
        started = time.monotonic()
        with session_scope(sessions) as session:
            names = set(session.scalars(select(ApiKey.name)))
        assert time.monotonic() - started < 1.0
        assert "held" not in names  # the writer has not committed yet
    finally:
        release.set()
        thread.join()
    engine.dispose()
