"""`ridercrm duplicates list|show` as people read them, and `--json` for programs."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.demo import load_demo
from ridercrm.demo_courses import CHLOE, CHLOE_AGAIN
from ridercrm.duplicates.models import PersonMerge
from ridercrm.people.models import Person
from tests.transfer.helpers import cli


def test_list_and_show_print_tables_by_default_and_json_when_asked(
    db_url: str, sessions: sessionmaker[Session]
) -> None:
    load_demo(sessions)
    assert cli(db_url, "duplicates", "scan").exit_code == 0
    machines = cli(db_url, "duplicates", "list", "--json")
    assert machines.exit_code == 0, machines.output
    clusters = json.loads(machines.stdout)["clusters"]
    assert clusters
    listed = cli(db_url, "duplicates", "list")
    assert listed.exit_code == 0, listed.output
    header, *rows = listed.stdout.splitlines()
    assert header.split() == ["cluster", "score", "status", "people"]
    assert len(rows) == len(clusters)
    first = clusters[0]
    assert rows[0].split()[0] == str(first["id"])
    for person_id in first["people"]:
        assert person_id in rows[0]
    assert "{" not in listed.stdout  # a table, not JSON

    shown = cli(db_url, "duplicates", "show", str(first["id"]))
    assert shown.exit_code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0].startswith(f"cluster {first['id']}: open, score")
    # One column per record, one row per field; the fields that differ are marked.
    assert all(person_id in lines[1] for person_id in first["people"])
    detail = json.loads(cli(db_url, "duplicates", "show", str(first["id"]), "--json").stdout)
    marked = [line.split()[0] for line in lines if " differs " in line]
    assert marked == detail["differing"]
    assert any(line.startswith("last_name ") for line in lines)
    assert "total" in shown.stdout


def test_ids_past_what_the_store_holds_are_refused_by_the_command_line(db_url: str) -> None:
    """An INTEGER column's largest value (32 bits on PostgreSQL) is the most an id can
    be: a larger one is a usage error naming the range (exit 2), never the driver's
    OverflowError (SQLite) or DataError (PostgreSQL)."""
    huge = str(2**64)
    for args in (
        ["duplicates", "show", huge],
        ["duplicates", "dismiss", huge],
        ["duplicates", "unmerge", huge],
        ["duplicates", "merge", "--cluster", huge],
        ["duplicates", "list", "--before", huge],
    ):
        result = cli(db_url, *args)
        assert result.exit_code == 2, (args, result.output, result.exception)
        assert "2147483647" in result.output, result.output
    missing = cli(db_url, "duplicates", "show", str(2**31 - 1))
    assert missing.exit_code == 1, missing.output
    assert "no cluster with id 2147483647" in missing.output
    assert cli(db_url, "duplicates", "show", str(2**31)).exit_code == 2


def test_merge_refuses_options_it_would_otherwise_ignore(
    db_url: str, sessions: sessionmaker[Session]
) -> None:
    """A `--field` without `=`, a field named twice, or person ids given with
    `--cluster` are usage errors (exit 2) that change nothing: they were dropped, and the
    merge went ahead with the defaults (or merged the cluster's people, not the ids
    named)."""
    load_demo(sessions)
    assert cli(db_url, "duplicates", "scan").exit_code == 0
    clusters = json.loads(cli(db_url, "duplicates", "list", "--json").stdout)["clusters"]
    other = next(c for c in clusters if CHLOE not in c["people"])
    for args, said in (
        (["--field", "email", "--survivor", CHLOE], "'--field': email: give it as name=person id"),
        (
            ["--field", f"email={CHLOE}", "--field", f"email={CHLOE_AGAIN}"],
            "'--field': email is given twice",
        ),
    ):
        refused = cli(db_url, "duplicates", "merge", CHLOE, CHLOE_AGAIN, *args)
        assert refused.exit_code == 2, (args, refused.output)
        assert said in " ".join(refused.output.split()), refused.output
    both = cli(db_url, "duplicates", "merge", CHLOE, CHLOE_AGAIN, "--cluster", str(other["id"]))
    assert both.exit_code == 2, both.output
    assert "person ids or --cluster, not both" in " ".join(both.output.split()), both.output
    with session_scope(sessions) as session:
        assert session.scalars(select(PersonMerge.id)).all() == []
        assert session.scalars(select(Person.id).where(Person.merged_into.is_not(None))).all() == []


@contextmanager
def write_lock_held(path: Path, *, for_s: float) -> Iterator[None]:
    """Another program's write transaction on the SQLite file (not ridercrm's: it takes
    no turn on the lock file), open from the block's start for ``for_s`` seconds."""
    holding = threading.Event()

    def hold() -> None:
        connection = sqlite3.connect(path, isolation_level=None)
        try:
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("UPDATE people SET city = city WHERE 0")
            holding.set()
            time.sleep(for_s)
            connection.execute("ROLLBACK")
        finally:
            connection.close()

    thread = threading.Thread(target=hold)
    thread.start()
    try:
        assert holding.wait(10)
        yield
    finally:
        thread.join()


def ridercrm_process(
    url: str, *args: str, busy_timeout_ms: int
) -> subprocess.CompletedProcess[str]:
    """The real command in its own process, as an operator runs it (main's one-line errors)."""
    env = {
        **os.environ,
        "RIDERCRM_DATABASE_URL": url,
        "RIDERCRM_SQLITE_BUSY_TIMEOUT_MS": str(busy_timeout_ms),
    }
    env.pop("RIDERCRM_DEBUG", None)
    return subprocess.run(
        [sys.executable, "-m", "ridercrm.cli", *args],
        capture_output=True, text=True, timeout=120, check=False, env=env,
    )  # fmt: skip


def test_unmerge_on_a_busy_sqlite_database_waits_its_turn_or_says_so_in_one_line(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """`duplicates unmerge --dry-run` makes the undo to check it, then rolls it back: it
    waits for the write lock as a write does (it failed at once with "database is
    locked", whatever RIDERCRM_SQLITE_BUSY_TIMEOUT_MS said). A lock held longer than the
    timeout is one line naming that setting, exit 1, nothing changed: no traceback, and
    not the database URL to check."""
    path = tmp_path / "ridercrm.db"
    shutil.copy(sqlite_template, path)
    url = f"sqlite:///{path}"
    engine = build_engine(Settings(database_url=url))
    try:
        load_demo(session_factory(engine))
    finally:
        engine.dispose()
    merged = cli(url, "duplicates", "merge", CHLOE, CHLOE_AGAIN, "--survivor", CHLOE)
    assert merged.exit_code == 0, merged.output
    merge_id = str(json.loads(merged.stdout)["merge_id"])

    with write_lock_held(path, for_s=1.0):
        waited = ridercrm_process(
            url, "duplicates", "unmerge", merge_id, "--dry-run", busy_timeout_ms=30_000
        )
    assert waited.returncode == 0, waited.stderr
    assert json.loads(waited.stdout)["dry_run"] is True

    for args in (["--dry-run"], []):
        with write_lock_held(path, for_s=3.0):
            busy = ridercrm_process(
                url, "duplicates", "unmerge", merge_id, *args, busy_timeout_ms=200
            )
        assert busy.returncode == 1, (args, busy.stdout, busy.stderr)
        assert "Traceback" not in busy.stderr
        said = busy.stderr.splitlines()
        assert said[0] == f"database: {url}"
        assert len(said) == 2, busy.stderr
        assert said[1].startswith("error: the SQLite database is busy (database is locked)")
        assert "RIDERCRM_SQLITE_BUSY_TIMEOUT_MS" in said[1]
        assert "RIDERCRM_DATABASE_URL" not in said[1]
        assert busy.stdout == ""
    engine = build_engine(Settings(database_url=url))
    try:
        with session_scope(session_factory(engine)) as session:
            record = session.get(PersonMerge, int(merge_id))
            assert record is not None
            assert record.undone_at is None
    finally:
        engine.dispose()
