"""Test fixtures: a real database per test (SQLite file, or PostgreSQL when configured).

Every test that takes ``db_url`` runs once on SQLite and once on PostgreSQL. The
PostgreSQL run needs RIDERCRM_TEST_POSTGRES_URL (e.g.
postgresql+psycopg://postgres@127.0.0.1:5432/test); without it that half is skipped
with a reason. Schemas are built by the real migrations, never by create_all.
"""

from __future__ import annotations

import gc
import shutil
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool
from testkit.databases import POSTGRES_ENV, create_run_database, drop_run_database, postgres_url

from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.keys.service import create_key
from ridercrm.migrate import upgrade
from ridercrm.models import Base

# Tests write only in their temporary directories: never in the checkout, where an
# operator's `make run` keeps its database and its first start's credentials files
# (ridercrm-admin-key.txt, ridercrm-console-admin.txt). The checkout's top-level files are
# noted when the session starts and compared when it ends; a test that wrote one fails
# the run. The database files are left out: a `make run` serving meanwhile writes them.
CHECKOUT = Path(__file__).resolve().parent.parent
_SERVED_BY_MAKE_RUN = (".db", ".db-wal", ".db-shm", ".db-journal", ".writelock")


def checkout_files() -> dict[str, tuple[int, int]]:
    """The checkout's top-level files (not directories) with their size and mtime."""
    found = {}
    for entry in CHECKOUT.iterdir():
        if entry.is_file() and not entry.name.endswith(_SERVED_BY_MAKE_RUN):
            status = entry.stat()
            found[entry.name] = (status.st_size, status.st_mtime_ns)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_checkout_key] = checkout_files()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    before = session.config.stash.get(_checkout_key, None)
    if before is None:
        return
    after = checkout_files()
    written = sorted(name for name, seen in after.items() if before.get(name) != seen)
    if written:
        session.config.get_terminal_writer().line(
            f"error: the tests wrote into the checkout {CHECKOUT}: {', '.join(written)}"
            " (tests must write only in their temporary directories)",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_checkout_key = pytest.StashKey[dict[str, tuple[int, int]]]()


# The slow tests, by path (so that tests added on any branch are marked without editing
# them): real `serve` processes with several workers, Chromium, 8 MB headers, scan
# workers. Measured with `--durations` (docs/decisions.md, "The newcomer and the CLI (issue 26, the CLI and security half)"):
# together most of the suite's time. `make test` skips them with one line saying so;
# `make test-all` (and .ci/run) runs them (`pytest --run-slow`).
SLOW_PATHS = (
    "tests/browser/",
    "tests/events/test_metrics_across_processes.py",
    "tests/events/test_ordering.py",
    "tests/security/test_serve_limits.py",
    "tests/duplicates/test_scan_workers.py",
)
SLOW_REASON = "slow: make test-all runs it"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--run-slow",
        action="store_true",
        help="also run the slow tests (browser, multi-worker serve...); make test-all sets it",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"slow: {SLOW_REASON} (marked by path: {', '.join(SLOW_PATHS)})"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run_slow = config.getoption("--run-slow") or "slow" in (config.getoption("markexpr") or "")
    for item in items:
        where = _relative(item)
        if where.startswith(SLOW_PATHS):
            item.add_marker(pytest.mark.slow)
            if not run_slow:
                item.add_marker(pytest.mark.skip(reason=SLOW_REASON))


def _relative(item: pytest.Item) -> str:
    try:
        return Path(str(item.path)).resolve().relative_to(CHECKOUT).as_posix()
    except ValueError:
        return ""


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """One line for everything skipped, grouped by reason, instead of one line a test."""
    reasons: dict[str, int] = {}
    for report in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(report, "longrepr", None)
        reason = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else "skipped"
        reason = reason.removeprefix("Skipped: ")
        if "PostgreSQL tests need" in reason:
            reason = "PostgreSQL: set RIDERCRM_TEST_POSTGRES_URL"
        reasons[reason] = reasons.get(reason, 0) + 1
    if reasons:
        parts = [
            f"{count} {reason}" for reason, count in sorted(reasons.items(), key=lambda r: -r[1])
        ]
        terminalreporter.write_line("skipped: " + "; ".join(parts))


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("template") / "template.db"
    engine = build_engine(Settings(database_url=f"sqlite:///{path}"))
    upgrade(engine)
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()
    return path


@pytest.fixture(scope="session")
def postgres_ready(worker_id: str) -> Iterator[str]:
    url = postgres_url()
    if url is None:
        pytest.skip(
            f"PostgreSQL tests need {POSTGRES_ENV} (e.g. postgresql+psycopg://postgres@127.0.0.1:5432/test)"
        )
    run_url = create_run_database(url, worker_id)
    yield run_url
    drop_run_database(url, run_url)


def truncate_all(url: str) -> None:
    """Empty every table and restart the id sequences, as TRUNCATE ... RESTART IDENTITY
    would; DELETE is used because on tables this small it takes milliseconds, not 0.2 s."""
    engine = build_engine(Settings(database_url=url))
    with engine.begin() as connection:
        for table in reversed(Base.metadata.sorted_tables):
            connection.execute(table.delete())
        sequences = connection.execute(
            text(
                "SELECT sequence_name FROM information_schema.sequences"
                " WHERE sequence_schema = current_schema()"
            )
        ).scalars()
        for sequence in list(sequences):
            connection.execute(text(f'ALTER SEQUENCE "{sequence}" RESTART'))
    engine.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def db_url(request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path) -> Iterator[str]:
    """A migrated, empty database of each kind."""
    if request.param == "sqlite":
        path = tmp_path / "ridercrm.db"
        shutil.copy(sqlite_template, path)
        yield f"sqlite:///{path}"
        return
    url = request.getfixturevalue("postgres_ready")
    truncate_all(url)
    yield url
    release_connections(url)


def release_connections(url: str) -> None:
    """Close the connections of this test's dropped engines when the server's are a third
    used: an engine is a reference cycle, so its pool's connections stay open until the
    collector's next full pass, which a long run of PostgreSQL tests (two workers, each
    test with its app's engine and its own) can outpace to the server's max_connections.
    A service has one engine for its life; only a test process drops them by hundreds."""
    engine = create_engine(url, poolclass=NullPool)
    try:
        with engine.connect() as connection:
            used, limit = connection.execute(
                text(
                    "SELECT count(*), current_setting('max_connections')::int FROM pg_stat_activity"
                )
            ).one()
    finally:
        engine.dispose()
    if used > limit // 3:
        gc.collect()


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url, log_json=True)


@pytest.fixture
def engine(settings: Settings) -> Iterator[Engine]:
    engine = build_engine(settings)
    yield engine
    engine.dispose()


@pytest.fixture
def sessions(engine: Engine) -> sessionmaker[Session]:
    # As the app and the CLI make them.
    return session_factory(engine)


@pytest.fixture
def client(settings: Settings) -> Iterator[TestClient]:
    app = create_app(settings)
    with TestClient(app) as test_client:
        yield test_client
    app.state.context.engine.dispose()


@pytest.fixture
def make_client(settings: Settings) -> Iterator[Callable[..., TestClient]]:
    """Build a client of an app on the same database with some settings changed.

    ``make_client(max_body_bytes=64)`` or ``make_client(base_path="/services/apexrest")``;
    every field of :class:`Settings` may be changed, the database URL too.
    """
    apps: list[FastAPI] = []
    with ExitStack() as stack:

        def make(**changes: Any) -> TestClient:
            app = create_app(Settings(**{**settings.model_dump(), **changes}))
            apps.append(app)
            return stack.enter_context(TestClient(app))

        yield make
    for app in apps:
        app.state.context.engine.dispose()


@pytest.fixture
def make_key(sessions: sessionmaker[Session]) -> Callable[..., str]:
    """Create an API key with the given scopes and return its plaintext."""

    def make(*scopes: str, name: str = "test") -> str:
        with session_scope(sessions, write=True) as session:
            _key, plaintext = create_key(session, name=name, scopes=scopes)
        return plaintext

    return make


@pytest.fixture
def admin_headers(make_key: Callable[..., str]) -> dict[str, str]:
    return {"Authorization": f"Bearer {make_key('admin', name='admin')}"}
