"""A server's SQLite connections carry the settings README "SQLite settings" describes."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from ridercrm.config import Settings
from ridercrm.db import build_engine, start_checkpointer


def _pragmas(tmp_path: Path, **settings: object) -> dict[str, int]:
    engine = build_engine(Settings(database_url=f"sqlite:///{tmp_path / 'p.db'}", **settings))
    try:
        with engine.connect() as connection:
            return {
                name: int(connection.execute(text(f"PRAGMA {name}")).scalar_one())
                for name in ("synchronous", "temp_store", "cache_size")
            }
    finally:
        engine.dispose()


def test_the_defaults_keep_every_acknowledged_commit_through_a_power_loss(tmp_path: Path) -> None:
    pragmas = _pragmas(tmp_path)
    assert pragmas["synchronous"] == 2  # FULL
    assert pragmas["temp_store"] == 2  # MEMORY: savepoint journals write no file
    assert pragmas["cache_size"] == -64 * 1024


def test_normal_and_the_page_cache_are_settings(tmp_path: Path) -> None:
    pragmas = _pragmas(tmp_path, sqlite_synchronous="NORMAL", sqlite_cache_mb=8)
    assert (pragmas["synchronous"], pragmas["cache_size"]) == (1, -8 * 1024)


def _page_size(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute("PRAGMA page_size").fetchone()[0])
    finally:
        connection.close()


def _create(path: Path, **settings: object) -> None:
    engine = build_engine(Settings(database_url=f"sqlite:///{path}", **settings))
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE IF NOT EXISTS t (n INTEGER)"))
            connection.execute(text("INSERT INTO t VALUES (1)"))
    finally:
        engine.dispose()


def test_a_new_store_takes_small_pages_and_an_existing_one_keeps_its_own(tmp_path: Path) -> None:
    """New stores are made of 1 KiB pages (a key scattered into a large index rewrites
    a page: bytes a booking writes); a store made with other pages keeps them, since a
    WAL database's page size cannot change."""
    new = tmp_path / "new.db"
    _create(new)
    assert _page_size(new) == 1024
    old = tmp_path / "old.db"
    _create(old, sqlite_page_size=4096)
    _create(old)
    assert _page_size(old) == 4096
    with pytest.raises(ValueError, match="sqlite_page_size"):
        Settings(database_url="sqlite://", sqlite_page_size=3000)


def test_an_unknown_synchronous_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        Settings(database_url="sqlite://", sqlite_synchronous="OFF")


def _rows_in_database_file(path: Path, copy: Path) -> int:
    """The rows of table t that the database file itself holds, its log left aside."""
    copy.write_bytes(path.read_bytes())
    connection = sqlite3.connect(copy)
    try:
        return int(connection.execute("SELECT count(*) FROM t").fetchone()[0])
    except sqlite3.OperationalError:  # not even the table yet
        return -1
    finally:
        connection.close()


def test_serve_s_checkpointer_copies_the_log_into_the_database(tmp_path: Path) -> None:
    """A commit's pages reach the database file within a period, though no commit filled
    the log enough to checkpoint itself (the server's connections leave it to the thread)."""
    path = tmp_path / "c.db"
    settings = Settings(database_url=f"sqlite:///{path}", sqlite_checkpoint_seconds=0.1)
    engine = build_engine(settings)
    stop = start_checkpointer(settings)
    assert stop is not None
    try:
        with engine.begin() as connection:
            connection.execute(text("CREATE TABLE t (n INTEGER)"))
        with engine.connect() as connection:  # held open: closing it would checkpoint
            assert connection.execute(text("PRAGMA wal_autocheckpoint")).scalar_one() == 10_000
            connection.commit()
            with connection.begin():
                connection.execute(text("INSERT INTO t VALUES (1), (2), (3)"))
            deadline = time.monotonic() + 10
            while _rows_in_database_file(path, tmp_path / "copy.db") != 3:
                assert time.monotonic() < deadline, "the log was not checkpointed"
                time.sleep(0.05)
    finally:
        stop()
        engine.dispose()


def test_without_the_checkpointer_commits_checkpoint_as_sqlite_does(tmp_path: Path) -> None:
    settings = Settings(database_url=f"sqlite:///{tmp_path / 'n.db'}", sqlite_checkpoint_seconds=0)
    assert start_checkpointer(settings) is None
    engine = build_engine(settings)
    try:
        with engine.connect() as connection:
            assert connection.execute(text("PRAGMA wal_autocheckpoint")).scalar_one() == 1000
    finally:
        engine.dispose()
