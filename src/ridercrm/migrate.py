"""Run Alembic migrations from code (CLI `db upgrade`, service start, tests)."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine


def alembic_config(engine: Engine) -> Config:
    config = Config()
    config.set_main_option("script_location", "ridercrm:migrations")
    config.set_main_option("file_template", "%%(year)d_%%(month).2d_%%(day).2d_%%(rev)s_%%(slug)s")
    config.attributes["engine"] = engine
    return config


def _with_connection(engine: Engine, action: str, revision: str) -> None:
    config = alembic_config(engine)
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        getattr(command, action)(config, revision)


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Bring the database schema up to ``revision`` (default: the newest)."""
    _with_connection(engine, "upgrade", revision)


def downgrade(engine: Engine, revision: str) -> None:
    """Take the database schema down to ``revision`` (e.g. "-1")."""
    _with_connection(engine, "downgrade", revision)


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision(engine: Engine) -> str | None:
    return ScriptDirectory.from_config(alembic_config(engine)).get_current_head()
