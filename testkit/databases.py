"""Per-run PostgreSQL databases: each test run (and benchmark) gets its own, created beside
the one RIDERCRM_TEST_POSTGRES_URL names and brought up to date by the migrations."""

from __future__ import annotations

import os

from sqlalchemy import Engine, create_engine, make_url, text
from sqlalchemy.pool import NullPool

from ridercrm.config import Settings
from ridercrm.db import build_engine
from ridercrm.migrate import upgrade

POSTGRES_ENV = "RIDERCRM_TEST_POSTGRES_URL"


def postgres_url() -> str | None:
    url = os.environ.get(POSTGRES_ENV)
    if not url:
        return None
    if url.startswith("postgresql://"):
        url = "postgresql+psycopg://" + url.removeprefix("postgresql://")
    return url


def _admin_engine(url: str) -> Engine:
    """An AUTOCOMMIT connection to the configured database, for CREATE/DROP DATABASE."""
    return create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)


def create_run_database(url: str, label: str) -> str:
    """Make a fresh database of this run's own next to the configured one; return its URL.

    Each test run (and each xdist worker) gets one, so runs at the same moment, or
    workers of one run, never empty each other's tables.
    """
    name = f"{make_url(url).database}_{label}_{os.getpid()}"
    engine = _admin_engine(url)
    with engine.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    engine.dispose()
    run_url = make_url(url).set(database=name).render_as_string(hide_password=False)
    run_engine = build_engine(Settings(database_url=run_url))
    upgrade(run_engine)
    run_engine.dispose()
    return run_url


def drop_run_database(url: str, run_url: str) -> None:
    engine = _admin_engine(url)
    with engine.connect() as connection:
        connection.execute(
            text(f'DROP DATABASE IF EXISTS "{make_url(run_url).database}" WITH (FORCE)')
        )
    engine.dispose()
