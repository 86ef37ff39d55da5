"""The real `ridercrm` command at start-up: which database, no accidental new database,
and one line (not a traceback) when it cannot start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url
from testkit.databases import postgres_url

from tests.live import free_port

RIDERCRM = str(Path(sys.executable).with_name("ridercrm"))


def run(cwd: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")}
    return subprocess.run(
        [RIDERCRM, *args],
        cwd=cwd,
        env={**clean, **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


READERS = [["keys", "list"], ["keys", "create", "--name", "x", "--scope", "admin"],
           ["audit", "purge"], ["export", "contacts"]]  # fmt: skip


@pytest.mark.parametrize("command", READERS, ids=" ".join)
def test_a_command_that_reads_or_changes_data_does_not_create_a_database(
    tmp_path: Path, command: list[str]
) -> None:
    done = run(tmp_path, *command)
    assert done.returncode != 0
    assert not (tmp_path / "ridercrm.db").exists()
    lines = done.stderr.strip().splitlines()
    assert lines[0] == f"database: sqlite:///{tmp_path / 'ridercrm.db'}"
    assert "RIDERCRM_DATABASE_URL" in lines[-1]
    assert "ridercrm db upgrade" in lines[-1]
    assert len(lines) == 2, done.stderr
    assert done.stdout == ""


def test_every_command_names_its_database_on_stderr_only(tmp_path: Path) -> None:
    database = tmp_path / "crm.db"
    env = {"RIDERCRM_DATABASE_URL": f"sqlite:///{database}"}
    created = run(tmp_path, "db", "upgrade", **env)
    assert created.returncode == 0, created.stderr
    assert database.exists()
    for command in (["keys", "list"], ["export", "contacts"], ["audit", "purge"]):
        done = run(tmp_path, *command, **env)
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines()[0] == f"database: sqlite:///{database}"
        assert "database:" not in done.stdout


def test_a_password_in_the_url_is_not_shown(tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "keys",
        "list",
        RIDERCRM_DATABASE_URL="postgresql+psycopg://crm:s3cret-pw@127.0.0.1:1/crm",
    )
    assert done.returncode != 0
    assert "s3cret-pw" not in done.stderr + done.stdout
    assert "database: postgresql+psycopg://crm:***@127.0.0.1:1/crm" in done.stderr


# Each failure with another command: every command goes through the same start-up.
FAILURES = {
    "unparsable url": (
        {"RIDERCRM_DATABASE_URL": "ridercrm.db"}, "RIDERCRM_DATABASE_URL", ["keys", "list"]
    ),
    "unknown driver": (
        {"RIDERCRM_DATABASE_URL": "mysql+nosuch://x@h/db"}, "RIDERCRM_DATABASE_URL", ["demo"]
    ),
    "postgresql port": (
        {"RIDERCRM_DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:1/test"},
        "RIDERCRM_DATABASE_URL",
        ["serve"],
    ),
    "missing sqlite directory": (
        {"RIDERCRM_DATABASE_URL": "sqlite:///no/such/directory/crm.db"},
        "RIDERCRM_DATABASE_URL",
        ["serve"],
    ),
    "missing sqlite directory, import": (
        {"RIDERCRM_DATABASE_URL": "sqlite:///no/such/directory/crm.db"},
        "RIDERCRM_DATABASE_URL",
        ["import", "contacts", "people.csv"],
    ),
    "bad setting": ({"RIDERCRM_MAX_ITEMS": "lots"}, "RIDERCRM_MAX_ITEMS", ["db", "upgrade"]),
    "bad rate limit": ({"RIDERCRM_RATE_LIMIT": "fast"}, "RIDERCRM_RATE_LIMIT", ["serve"]),
}  # fmt: skip


@pytest.mark.parametrize("failure", FAILURES, ids=str)
def test_a_start_up_failure_is_one_line_naming_the_setting(tmp_path: Path, failure: str) -> None:
    env, setting, command = FAILURES[failure]
    if command[0] == "serve":
        command = ["serve", "--port", str(free_port())]
    done = run(tmp_path, *command, **env)
    assert done.returncode not in (0, None)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("database: ")]
    assert len(errors) == 1, done.stderr
    assert errors[0].startswith("error: ")
    assert setting in errors[0]
    assert "Traceback" not in done.stderr + done.stdout


@pytest.mark.parametrize("how", ["--debug", "RIDERCRM_DEBUG"])
def test_debug_shows_the_traceback(tmp_path: Path, how: str) -> None:
    env = {"RIDERCRM_DATABASE_URL": "postgresql+psycopg://postgres@127.0.0.1:1/test"}
    if how == "--debug":
        done = run(tmp_path, "--debug", "keys", "list", **env)
    else:
        done = run(tmp_path, "keys", "list", RIDERCRM_DEBUG="1", **env)
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr
    assert "OperationalError" in done.stderr
    assert len(done.stderr.splitlines()) > 5


@pytest.mark.postgresql
def test_a_missing_postgresql_database_is_one_line(tmp_path: Path) -> None:
    base = postgres_url()
    if base is None:
        pytest.skip("PostgreSQL tests need RIDERCRM_TEST_POSTGRES_URL")
    url = make_url(base).set(database="ridercrm_no_such_database")
    shown = url.render_as_string(hide_password=False)
    for command in (["keys", "list"], ["serve", "--port", str(free_port())]):
        done = run(tmp_path, *command, RIDERCRM_DATABASE_URL=shown)
        assert done.returncode != 0
        errors = [line for line in done.stderr.splitlines() if not line.startswith("database: ")]
        assert len(errors) == 1, done.stderr
        assert "ridercrm_no_such_database" in errors[0]
        assert "RIDERCRM_DATABASE_URL" in errors[0]


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("mysql://crm@127.0.0.1/crm", "names a mysql database; ridercrm supports SQLite"),
        ("mysql+pymysql://crm@127.0.0.1/crm", "or PostgreSQL (postgresql+psycopg://"),
        ("sqlite://crm.db", "three slashes after sqlite: (sqlite:///crm.db"),
    ],
)
def test_a_database_url_newcomers_write_gets_a_line_saying_what_works(
    tmp_path: Path, url: str, said: str
) -> None:
    for command in (["keys", "list"], ["db", "upgrade"]):
        done = run(tmp_path, *command, RIDERCRM_DATABASE_URL=url)
        assert done.returncode == 1
        errors = [line for line in done.stderr.splitlines() if not line.startswith("database: ")]
        assert errors == [errors[0]], done.stderr
        assert said in errors[0]
        assert "ModuleNotFoundError" not in done.stderr
    assert list(tmp_path.iterdir()) == []
