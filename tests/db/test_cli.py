"""`ridercrm db upgrade`, on a new, an empty and a migrated database."""

from __future__ import annotations

from pathlib import Path

from click.testing import Result
from sqlalchemy import inspect
from typer.testing import CliRunner

from ridercrm.cli import app
from ridercrm.config import Settings
from ridercrm.db import build_engine
from ridercrm.migrate import current_revision, head_revision

runner = CliRunner()


def ridercrm(db_url: str, *args: str) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url})


def test_db_upgrade_on_an_empty_sqlite_file_reaches_head(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    path.touch()
    url = f"sqlite:///{path}"
    result = ridercrm(url, "db", "upgrade")
    assert result.exit_code == 0, result.output
    engine = build_engine(Settings(database_url=url))
    try:
        head = head_revision(engine)
        assert head is not None
        assert current_revision(engine) == head
        assert head in result.stdout
        tables = set(inspect(engine).get_table_names())
        assert {"people", "products", "assets", "audit_records", "api_keys"} <= tables
    finally:
        engine.dispose()
    # Running it again changes nothing.
    assert ridercrm(url, "db", "upgrade").exit_code == 0


def test_db_upgrade_creates_a_missing_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'new.db'}"
    assert ridercrm(url, "db", "upgrade").exit_code == 0
    engine = build_engine(Settings(database_url=url))
    try:
        assert current_revision(engine) == head_revision(engine)
    finally:
        engine.dispose()


def test_db_upgrade_on_a_migrated_database_is_a_no_op(db_url: str) -> None:
    result = ridercrm(db_url, "db", "upgrade")
    assert result.exit_code == 0, result.output
    engine = build_engine(Settings(database_url=db_url))
    try:
        assert current_revision(engine) == head_revision(engine)
    finally:
        engine.dispose()
