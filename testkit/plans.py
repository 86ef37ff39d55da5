"""The plan a database makes for a statement the service runs (SQLite's index choices)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import event


def sqlite_plan(engine: Any, action: Callable[[], Any], starts: str) -> str:
    """SQLite's plan for the statement beginning ``starts`` that ``action`` runs (the
    first one; asserted to exist): what its index choice would read in a large store."""
    statements: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if " ".join(statement.split()).upper().startswith(starts.upper()):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        action()
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert statements, f"no statement beginning {starts!r} was run"
    statement, parameters = statements[0]
    with engine.connect() as connection:
        rows = connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        return " | ".join(row[-1] for row in rows)


def sqlite_engine(sessions: Any) -> Any:
    """The engine of ``sessions``; the test is skipped on another database, whose planner
    chooses by its statistics (PostgreSQL)."""
    engine = sessions.kw["bind"]
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite's query planner: PostgreSQL chooses by its statistics")
    return engine
