"""Readiness: can the database take the writes every request makes (its audit record)?

Answering a read is not enough: a read-only SQLite file, a PostgreSQL hot standby or
a database in a read-only transaction mode answers ``SELECT 1`` while every request
fails. So the check starts a write transaction, runs an update that changes no row
(the statement still needs write access) and rolls back. On SQLite it also wants some
free space on the database's filesystem, since a full disk fails every audit record.
"""

from __future__ import annotations

import os
import shutil
import sqlite3

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from ridercrm.config import Settings

NO_ROW_UPDATE = "UPDATE alembic_version SET version_num = version_num WHERE 1 = 0"
PROBE_BUSY_TIMEOUT_MS = 200


def problem(engine: Engine, settings: Settings) -> str | None:
    """None when the database takes writes, else "unreachable", "read-only" or "disk full"."""
    try:
        if engine.dialect.name == "sqlite":
            return _sqlite_problem(engine, settings)
        with engine.connect() as connection, connection.begin():
            connection.execute(text(NO_ROW_UPDATE))
            connection.rollback()
    except DBAPIError as exc:
        return "read-only" if _read_only(exc) else "unreachable"
    except Exception:
        return "unreachable"
    return None


def _read_only(exc: DBAPIError) -> bool:
    # PostgreSQL 25006: read_only_sql_transaction (a standby, default_transaction_read_only).
    return getattr(exc.orig, "sqlstate", None) == "25006"


def _sqlite_problem(engine: Engine, settings: Settings) -> str | None:
    database = engine.url.database or ""
    if database and database != ":memory:":
        path = database.removeprefix("file:").split("?", 1)[0]
        directory = os.path.dirname(os.path.abspath(path))
        if shutil.disk_usage(directory).free < settings.ready_min_free_mb * 1024 * 1024:
            return "disk full"
    raw = engine.raw_connection()
    try:
        cursor = raw.cursor()
        # Do not queue behind writers: a busy write lock proves writes are going on.
        cursor.execute(f"PRAGMA busy_timeout={PROBE_BUSY_TIMEOUT_MS}")
        try:
            cursor.execute("BEGIN IMMEDIATE")
            cursor.execute(NO_ROW_UPDATE)
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_BUSY":
                return None
            if getattr(exc, "sqlite_errorname", "") == "SQLITE_READONLY":
                return "read-only"
            raise
        finally:
            if raw.driver_connection is not None and raw.driver_connection.in_transaction:
                cursor.execute("ROLLBACK")
            cursor.execute(f"PRAGMA busy_timeout={int(settings.sqlite_busy_timeout_ms)}")
    finally:
        raw.close()
    return None
