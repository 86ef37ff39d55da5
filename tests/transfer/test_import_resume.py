"""An import commits batch by batch; one stopped half-way resumes where it stopped."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.people.models import Person
from ridercrm.transfer.checks import ImportFailed
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import BadRow, import_csv
from ridercrm.transfer.models import ImportRun
from tests.transfer.helpers import assert_match_keys_in_step, cli, people, write_csv

HEADER = ["id", "first_name", "last_name", "email", "postcode", "merged_into"]


class Stop(Exception):
    """Stands for the process being stopped (a signal, a crash) at that point."""


def stop_after(last: int) -> Callable[[int], None]:
    """An on_progress that stops the import once a batch reaching line ``last`` is done."""

    def progress(line: int) -> None:
        if line >= last:
            raise Stop

    return progress


def runs(sessions: sessionmaker[Session]) -> list[tuple[int, int, int | None]]:
    with session_scope(sessions) as session:
        return [
            (run.imported, run.bad_rows, run.next_line)
            for run in session.scalars(select(ImportRun).order_by(ImportRun.id))
        ]


def a_file(tmp_path: Path) -> tuple[Path, str, str]:
    """30 people (lines 2-31): line 4 brings an id that line 26 repeats, line 3 is a record
    merged into line 29's person, line 12 is bad."""
    survivor, repeated, merged = (new_id(RecordKind.CONTACT) for _ in range(3))
    rows = [["", f"Person{n}", "Smith", f"p{n}@example.com", f"{3000 + n}", ""] for n in range(30)]
    rows[1] = [merged, "Old", "Record", "old@example.com", "3001", survivor]
    rows[2][0] = repeated
    rows[10][4] = "bad"
    rows[24][0] = repeated
    rows[27][0] = survivor
    return write_csv(tmp_path / "people.csv", HEADER, rows), survivor, merged


def test_an_import_stopped_between_batches_resumes_after_its_last_batch(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file, survivor, merged = a_file(tmp_path)

    with pytest.raises(Stop):
        import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                   on_progress=stop_after(15))  # fmt: skip
    # Lines 2-15 are stored (the merged record waits for the end), and where to go on.
    assert len(people(sessions)) == 12
    assert runs(sessions) == [(12, 1, 16)]
    assert_match_keys_in_step(sessions)

    bad: list[BadRow] = []
    resumed: list[int] = []
    result = import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                        on_bad_row=bad.append, on_resume=resumed.append)  # fmt: skip
    assert resumed == [16]
    # A repeat is still named by its first line, though that line was imported before.
    assert [str(row) for row in bad] == [f"line 26: id: {bad_id(file, 26)} repeats line 4"]
    assert result.summary() == "imported 28 contacts, 2 bad rows"
    stored = people(sessions)
    assert len(stored) == 28
    assert len({(p["first_name"], p["email"]) for p in stored.values()}) == 28
    with session_scope(sessions) as session:
        assert session.get(Person, merged).merged_into == survivor  # type: ignore[union-attr]
    assert runs(sessions) == [(28, 2, None)]
    assert_match_keys_in_step(sessions)

    again = cli(db_url, "import", "contacts", str(file))
    assert again.exit_code == 2
    assert "a file with the same content was imported" in again.output


def test_the_keys_of_several_batches_are_committed_with_their_people(
    tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    # Keys are written in key order once per transaction, not batch by batch: a stop
    # after a transaction of three batches leaves each of its people with every key.
    file, _survivor, _merged = a_file(tmp_path)

    with pytest.raises(Stop):
        import_csv(sessions, CONTACTS, file, batch_size=5, commit_rows=14, workers=0,
                   on_progress=stop_after(20))  # fmt: skip
    assert runs(sessions) == [(13, 1, 17)]  # lines 2-16, less the merged record and line 12
    assert len(people(sessions)) == 13
    assert_match_keys_in_step(sessions)


def bad_id(file: Path, line: int) -> str:
    return file.read_text().splitlines()[line - 1].split(",")[0]


def test_a_batch_stopped_half_way_leaves_nothing_of_itself(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file, _survivor, _merged = a_file(tmp_path)

    def stop_at_the_bad_row(row: BadRow) -> None:
        raise Stop  # line 12, in the second batch (lines 9-15), before it commits

    with pytest.raises(Stop):
        import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                   on_bad_row=stop_at_the_bad_row)  # fmt: skip
    assert len(people(sessions)) == 6  # the first batch, lines 2-8, less the merged record
    assert runs(sessions) == [(6, 0, 9)]

    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 1, result.output
    assert "resuming an unfinished import of this file at line 9" in result.output
    assert "imported 28 contacts, 2 bad rows" in result.output
    assert len(people(sessions)) == 28
    assert runs(sessions) == [(28, 2, None)]


def test_a_resumed_import_does_not_match_rows_its_earlier_batches_stored(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    # Someone stored before the import, so the matcher is on; the file holds one person
    # twice (lines 3 and 12), which the file says are two people.
    write_csv(
        tmp_path / "before.csv", HEADER, [["", "Zed", "Other", "zed@example.com", "4000", ""]]
    )
    assert cli(db_url, "import", "contacts", str(tmp_path / "before.csv")).exit_code == 0
    rows = [
        ["", f"Person{n}", f"Name{n}", f"p{n}@example.com", f"{3000 + n}", ""] for n in range(12)
    ]
    rows[10] = rows[1][:]
    file = write_csv(tmp_path / "twice.csv", HEADER, rows)

    with pytest.raises(Stop):
        import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                   on_progress=stop_after(8))  # fmt: skip
    result = import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0)
    assert result.summary() == "imported 12 contacts, 0 bad rows"
    stored = [p for p in people(sessions).values() if p["email"] == "p1@example.com"]
    assert len(stored) == 2


def test_a_dry_run_neither_resumes_nor_finishes_an_unfinished_import(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file, _survivor, _merged = a_file(tmp_path)

    def fail_after_line_8(line: int) -> None:
        if line >= 8:
            raise ImportFailed("stopped")

    with pytest.raises(ImportFailed):
        import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                   on_progress=fail_after_line_8)  # fmt: skip
    dry = cli(db_url, "import", "contacts", str(file), "--dry-run")
    assert dry.exit_code == 1, dry.output  # a dry run checks the whole file, records nothing
    assert runs(sessions) == [(6, 0, 9)]


def test_an_import_outwaited_by_another_programs_write_lock_says_what_it_kept(
    tmp_path: Path, sqlite_template: Path
) -> None:
    """Another program (not ridercrm: its writers take turns) takes SQLite's write lock
    between two of an import's transactions and holds it past the busy timeout: the
    import stops with one message naming the setting and the lines it kept, and the
    same file run again resumes after them (it said "nothing was changed", with the
    first transaction's people stored)."""
    path = tmp_path / "ridercrm.db"
    shutil.copy(sqlite_template, path)
    engine = build_engine(Settings(database_url=f"sqlite:///{path}", sqlite_busy_timeout_ms=200))
    sessions = session_factory(engine)
    file, _survivor, _merged = a_file(tmp_path)
    holder = sqlite3.connect(path, isolation_level=None)

    def take_the_lock_after_the_first_commit(line: int) -> None:
        if line >= 8 and not holder.in_transaction:
            holder.execute("BEGIN IMMEDIATE")

    try:
        with pytest.raises(ImportFailed) as refused:
            import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                       on_progress=take_the_lock_after_the_first_commit)  # fmt: skip
        said = str(refused.value)
        assert "the SQLite database is busy" in said
        assert "RIDERCRM_SQLITE_BUSY_TIMEOUT_MS" in said
        assert "nothing was changed" not in said
        assert "the rows before line 9 are imported" in said, said
    finally:
        holder.close()
    assert len(people(sessions)) == 6  # lines 2-8 but the merged record (it waits for the end)
    resumed: list[int] = []
    result = import_csv(sessions, CONTACTS, file, batch_size=7, commit_rows=7, workers=0,
                        on_resume=resumed.append)  # fmt: skip
    assert resumed == [9]
    assert result.summary() == "imported 28 contacts, 2 bad rows"
    assert len(people(sessions)) == 28
    engine.dispose()
