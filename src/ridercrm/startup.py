"""What every `ridercrm` command does before its work, and how it fails.

Each command says on standard error which database it uses (standard output stays the
command's own). Only the commands that are meant to make a database (`db upgrade`,
`serve`, `import`, `demo`) may start on one that does not exist yet; the others refuse,
naming RIDERCRM_DATABASE_URL, instead of creating an empty one in whatever directory
they run in. A failure prints one line with its cause and the setting to fix; the
traceback only with `ridercrm --debug` or RIDERCRM_DEBUG=1.
"""

from __future__ import annotations

import getpass
import os
import sys
from pathlib import Path

from pydantic import ValidationError
from sqlalchemy import Engine, inspect
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError

from ridercrm.config import Settings
from ridercrm.db import build_engine
from ridercrm.fields import control_problem
from ridercrm.migrate import upgrade

URL_SETTING = "RIDERCRM_DATABASE_URL"
_announced: set[str] = set()


class StartupProblem(Exception):
    """A command cannot start; the message says why and what to change."""


def sqlite_file(url: URL) -> Path | None:
    """The file of a SQLite database URL (absolute), or None for memory or other backends."""
    database = url.database
    if url.get_backend_name() != "sqlite" or not database or database == ":memory:":
        return None
    if database.startswith("file:"):
        return None
    return Path(database).resolve()


def describe(settings: Settings) -> str:
    """The database URL as shown to the operator: no password, a SQLite file's full path."""
    url = _parse(settings.database_url)
    path = sqlite_file(url)
    if path is not None:
        url = url.set(database=str(path))
    return url.render_as_string(hide_password=True)


def open_database(settings: Settings, *, may_create: bool, revision: str = "head") -> Engine:
    """Say which database this command uses, check it exists (unless ``may_create``),
    and return its engine with the schema brought to ``revision`` (the newest)."""
    shown = describe(settings)
    if shown not in _announced:
        _announced.add(shown)
        print(f"database: {shown}", file=sys.stderr, flush=True)
    path = sqlite_file(_parse(settings.database_url))
    if path is not None:
        if not path.parent.is_dir():
            raise StartupProblem(
                f"the directory {path.parent} of the SQLite database does not exist;"
                f" create it or set {URL_SETTING}"
            )
        if not may_create and (not path.exists() or path.stat().st_size == 0):
            raise StartupProblem(_no_database(shown))
    engine = build_engine(settings)
    try:
        if not may_create and "alembic_version" not in inspect(engine).get_table_names():
            raise StartupProblem(_no_database(shown))
        upgrade(engine, revision)
    except BaseException:
        engine.dispose()
        raise
    return engine


def _no_database(shown: str) -> str:
    return (
        f"no ridercrm database at {shown}; set {URL_SETTING} to yours,"
        " or create this one with `ridercrm db upgrade`"
    )


_SUPPORTED = "SQLite (sqlite:///path/to/file.db) or PostgreSQL (postgresql+psycopg://user@host:5432/database)"


def _parse(raw: str) -> URL:
    """The database URL, or StartupProblem naming what is wrong with it and what works."""
    try:
        url = make_url(raw)
    except ArgumentError:
        raise StartupProblem(
            f"{URL_SETTING} is not a database URL; write sqlite:///path/to/file.db"
            " or postgresql+psycopg://user@host:5432/database"
        ) from None
    backend = url.get_backend_name()
    if backend not in ("sqlite", "postgresql"):
        raise StartupProblem(
            f"{URL_SETTING} names a {backend} database; ridercrm supports {_SUPPORTED}"
        )
    if backend == "sqlite" and url.host:
        # sqlite://x.db reads x.db as a host name and would open an empty memory database.
        raise StartupProblem(
            f"{URL_SETTING}: a SQLite file needs three slashes after sqlite: (sqlite:///{url.host}"
            f"{'/' + url.database if url.database else ''} for a file in this directory,"
            " four for an absolute path: sqlite:////var/lib/ridercrm.db)"
        )
    return url


BUSY_SETTING = "RIDERCRM_SQLITE_BUSY_TIMEOUT_MS"


def sqlite_busy(error: DBAPIError) -> bool:
    """SQLite's SQLITE_BUSY (and its extended codes): the write lock was not had in time."""
    return str(getattr(error.orig, "sqlite_errorname", "")).startswith("SQLITE_BUSY")


def failure_line(error: BaseException) -> str:
    """One line that says why a command failed and, where it can, which setting to fix."""
    if isinstance(error, StartupProblem):
        return f"error: {error}"
    if isinstance(error, ValidationError):
        problems = []
        for item in error.errors():
            name = "RIDERCRM_" + "_".join(str(part) for part in item["loc"]).upper()
            problems.append(f"{name}: {item['msg']}")
        return "error: bad setting: " + "; ".join(problems)
    if isinstance(error, NoSuchModuleError):
        return (
            f"error: {URL_SETTING} names a database driver that is not installed or unknown;"
            " use sqlite:/// or postgresql+psycopg://"
        )
    if isinstance(error, ArgumentError):
        # The message may quote the URL, password and all: leave it out.
        return f"error: {URL_SETTING} could not be used as a database URL"
    if isinstance(error, DBAPIError) and sqlite_busy(error):
        # The URL is right: another program held the write lock (a busy server's writers
        # queue in turn; a program that is not ridercrm does not, and outlasted the wait).
        return (
            "error: the SQLite database is busy (database is locked): another program held"
            f" its write lock longer than {BUSY_SETTING} allows, so the write that waited"
            f" was not made (raise {BUSY_SETTING} if that program's writes are long)"
        )
    if isinstance(error, DBAPIError):
        cause = str(error.orig).strip().splitlines()
        reason = cause[0] if cause else type(error.orig).__name__
        return f"error: the database could not be used: {reason} (check {URL_SETTING})"
    if isinstance(error, SQLAlchemyError):
        return f"error: database error: {type(error).__name__} (check {URL_SETTING})"
    if isinstance(error, OSError):
        where = f": {error.filename}" if error.filename else ""
        return f"error: {error.strerror or error}{where}"
    return f"error: {type(error).__name__}: {error}"


def write_owner_only(path: Path, text: str) -> Path:
    """Write a secret to a new owner-only file at ``path``, never over an existing file.

    A credentials file already there (an earlier first start's admin key or sign-in that
    the operator has not collected yet) is kept as it is: the secret goes to the first
    free sibling name (``name-2.txt``, ``name-3.txt``, ...), which is returned.
    """
    candidate, number = path, 1
    while True:
        try:
            descriptor = os.open(candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            break
        except FileExistsError:
            number += 1
            candidate = path.with_name(f"{path.stem}-{number}{path.suffix}")
    try:
        os.fchmod(descriptor, 0o600)  # whatever the umask
        os.write(descriptor, text.encode("utf-8"))
    finally:
        os.close(descriptor)
    return candidate


_operator: str | None = None


def operator_problem(name: str) -> str | None:
    """Why ``name`` cannot name who runs a command (`--as`), or None: it is written into
    audit records and shown on terminals and pages, where a control character (a line
    break, an escape sequence, a direction override) could forge or hide what follows."""
    return control_problem(name)


def set_operator(name: str | None) -> None:
    """The person running this command (`ridercrm --as NAME`); None: the OS user."""
    global _operator
    _operator = name.strip()[:80] if name and name.strip() else None


def operator() -> str:
    """Who runs this command, as its audit records name them: ``--as NAME`` or the OS user."""
    if _operator:
        return _operator
    try:
        return getpass.getuser()[:80]
    except (KeyError, OSError):  # no name for this uid (a container), no LOGNAME/USER
        return f"uid {os.getuid()}"
