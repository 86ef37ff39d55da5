"""A server's SQLite connections carry the settings README "SQLite settings" describes."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from ridercrm.config import Settings
from ridercrm.db import build_engine


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


def test_an_unknown_synchronous_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="sqlite_synchronous"):
        Settings(database_url="sqlite://", sqlite_synchronous="OFF")
