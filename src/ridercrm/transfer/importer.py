"""Import contacts, leads or products from a CSV file.

Rows are read and checked in batches; the good rows of each batch are written with one
Core bulk insert, all batches inside one write transaction, so a file that turns out
to be unreadable half-way leaves nothing behind. A bad row is reported with its line
number and reasons and skipped; it never stops the good rows.
"""

from __future__ import annotations

import csv
import gc
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import bulk_insert, session_scope, utcnow
from ridercrm.events import service as events
from ridercrm.people.models import CONTACT, Person
from ridercrm.products.models import Product
from ridercrm.transfer.checks import (
    Checked,
    ImportFailed,
    RowSpec,
    UnreadableFile,
    checked_batches,
    default_workers,
    read_header,
)
from ridercrm.transfer.columns import HeaderProblem, Target, plan_columns
from ridercrm.transfer.rows import (
    PEOPLE_TABLE,
    PERSON_KEYS_TABLE,
    PERSON_ROW_COLUMNS,
    PRODUCT_ROW_COLUMNS,
    PRODUCTS_TABLE,
)

BATCH_SIZE = 5_000
IMPORT_CACHE_KIB = 256 * 1024  # SQLite page cache while importing (taken only as needed)
_QUERY_CHUNK = 500  # values per IN (...) query: well under every backend's limit


@dataclass(frozen=True)
class BadRow:
    """A row that was not imported: its line in the file (the header is line 1) and why."""

    line: int
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"line {self.line}: {'; '.join(self.reasons)}"


@dataclass
class ImportResult:
    """What an import did (or, in a dry run, would do)."""

    target: Target
    dry_run: bool
    ignored_columns: tuple[str, ...]
    imported: int = 0
    bad_rows: int = 0

    @property
    def exit_code(self) -> int:
        """0 when every row was good, 1 when some were bad."""
        return 1 if self.bad_rows else 0

    def summary(self) -> str:
        """One line such as "imported 998 contacts, 2 bad rows"."""
        verb = "would import" if self.dry_run else "imported"
        bad = "1 bad row" if self.bad_rows == 1 else f"{self.bad_rows} bad rows"
        return f"{verb} {self.target.count(self.imported)}, {bad}"


def count_lines(path: Path) -> int:
    """The number of lines in a file, cheaply (for a progress bar's total)."""
    lines = 0
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            lines += chunk.count(b"\n")
    return lines


def import_csv(
    sessions: sessionmaker[Session],
    target: Target,
    path: Path,
    *,
    dry_run: bool = False,
    batch_size: int = BATCH_SIZE,
    workers: int | None = None,
    on_columns: Callable[[Sequence[str]], None] | None = None,
    on_bad_row: Callable[[BadRow], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
) -> ImportResult:
    """Import every good row of a CSV file; report the bad ones through ``on_bad_row``.

    ``on_columns`` is told the ignored columns once, ``on_progress`` the file line
    reached after each batch. ``workers`` processes check rows (default: by file size
    and CPUs; 0 checks in this process). Raises ImportFailed when nothing was imported.
    """
    with _open(path) as handle, _no_cycle_collection():
        reader = csv.reader(handle)
        try:
            plan = plan_columns(target, read_header(reader))
        except HeaderProblem as exc:
            raise UnreadableFile(f"unusable header: {exc}") from None
        result = ImportResult(target=target, dry_run=dry_run, ignored_columns=plan.ignored)
        if on_columns is not None:
            on_columns(plan.ignored)
        spec = RowSpec(target=target, plan=plan, now=utcnow())
        if workers is None:
            workers = default_workers(path)
        try:
            with (
                session_scope(sessions, write=not dry_run) as session,
                _large_sqlite_cache(session),
            ):
                run = _Run(session, target, result, on_bad_row)
                for batch in checked_batches(reader, spec, batch_size=batch_size, workers=workers):
                    run.batch(batch)
                    if on_progress is not None and batch:
                        on_progress(batch[-1].line)
        except IntegrityError as exc:
            raise ImportFailed(
                f"the database refused a row ({exc.orig}); nothing imported"
            ) from None
    return result


@contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """Pause Python's cycle collector while rows are checked and written.

    An import makes a few dozen objects per row, almost none in cycles (reference
    counting frees them), yet the collector keeps walking every object still alive: it
    cost about a tenth of the import's CPU. What cycles appear meanwhile are collected
    when it resumes.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextmanager
def _large_sqlite_cache(session: Session) -> Iterator[None]:
    """On SQLite, let this connection cache more pages while it writes a large import.

    Rows land at random places in the people and key indexes; with SQLite's default
    2 MiB cache most inserts then read and spill pages, which halves the import's speed.
    """
    connection = session.connection()
    if connection.dialect.name != "sqlite":
        yield
        return
    before = connection.exec_driver_sql("PRAGMA cache_size").scalar()
    connection.exec_driver_sql(f"PRAGMA cache_size=-{IMPORT_CACHE_KIB}")
    try:
        yield
    finally:
        connection.exec_driver_sql(f"PRAGMA cache_size={int(before or -2000)}")


def _open(path: Path) -> IO[str]:
    try:
        # utf-8-sig: spreadsheet programs and Salesforce exports often start with a BOM.
        return path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise UnreadableFile(f"cannot be read: {exc.strerror or exc}") from None


class _Run:
    """One import: what was seen so far, and the checks and writes of each batch."""

    def __init__(
        self,
        session: Session,
        target: Target,
        result: ImportResult,
        on_bad_row: Callable[[BadRow], None] | None,
    ) -> None:
        self.session = session
        self.target = target
        self.result = result
        self.on_bad_row = on_bad_row
        self.products = target.person_kind is None
        self.table = PRODUCTS_TABLE if self.products else PEOPLE_TABLE
        self.columns = PRODUCT_ROW_COLUMNS if self.products else PERSON_ROW_COLUMNS
        self.seen_ids: dict[str, int] = {}
        self.seen_codes: dict[str, int] = {}
        self.seen_links: dict[str, int] = {}

    def batch(self, checked: Sequence[Checked]) -> None:
        """Finish checking a batch, write its good rows, report its bad ones in line order."""
        bad: list[BadRow] = []
        candidates: list[Checked] = []
        for row in checked:
            problems = self._repeats(row)
            if problems:
                bad.append(BadRow(row.line, tuple(problems)))
            else:
                candidates.append(row)
        refused = self._refused_by_database(candidates)
        good: list[tuple[Any, ...]] = []
        keys: list[tuple[int, str]] = []
        for row in candidates:
            if row.line in refused:
                bad.append(BadRow(row.line, tuple(refused[row.line])))
            else:
                assert row.row is not None
                assert row.record_id is not None
                good.append(row.row)
                keys.extend(row.keys)
        if good and not self.result.dry_run:
            bulk_insert(self.session, self.table, self.columns, good)
            bulk_insert(self.session, PERSON_KEYS_TABLE, ("key", "person_id"), keys)
            if not self.products:
                events.people_imported(
                    self.session, [dict(zip(self.columns, row, strict=True)) for row in good]
                )
        self.result.imported += len(good)
        self.result.bad_rows += len(bad)
        if self.on_bad_row is not None:
            for bad_row in sorted(bad, key=lambda bad_row: bad_row.line):
                self.on_bad_row(bad_row)

    def _repeats(self, row: Checked) -> list[str]:
        """The row's own problems, plus an id, link or product code seen on an earlier line."""
        problems = row.problems
        if row.given and row.record_id is not None:
            first = self.seen_ids.setdefault(row.record_id, row.line)
            if first != row.line:
                problems = [f"id: {row.record_id} repeats line {first}", *problems]
        if row.link is not None:
            first = self.seen_links.setdefault(row.link, row.line)
            if first != row.line:
                problems = [*problems, f"converted_contact_id: {row.link} repeats line {first}"]
        if row.code is not None:
            first = self.seen_codes.setdefault(row.code, row.line)
            if first != row.line:
                problems = [*problems, f"code: {row.code} repeats line {first}"]
        return problems

    def _refused_by_database(self, rows: list[Checked]) -> dict[int, list[str]]:
        """Lines whose id or product code is already stored, or whose link is no contact."""
        refused: dict[int, list[str]] = {}
        given = [row for row in rows if row.given]
        if given:
            taken = _existing(self.session, self.table.c.id, [row.record_id for row in given])
            for row in given:
                if row.record_id in taken:
                    refused.setdefault(row.line, []).append(f"id: {row.record_id} already exists")
        if self.products and rows:
            codes = _existing(self.session, Product.code, [row.code for row in rows])
            for row in rows:
                if row.code in codes:
                    refused.setdefault(row.line, []).append(
                        f"code: {row.code} is already used by another product"
                    )
        linked = [row for row in rows if row.link is not None]
        if linked:
            links = [row.link for row in linked]
            contacts = _existing(self.session, Person.id, links, Person.kind == CONTACT)
            converted = _existing(self.session, Person.converted_contact_id, links)
            for row in linked:
                if row.link not in contacts:
                    problem = f"converted_contact_id: there is no contact {row.link}"
                elif row.link in converted:
                    problem = f"converted_contact_id: {row.link} is already another lead's"
                else:
                    continue
                refused.setdefault(row.line, []).append(problem)
        return refused


def _existing(session: Session, column: Any, values: Sequence[Any], *where: Any) -> set[Any]:
    """Which of ``values`` the column already holds."""
    found: set[Any] = set()
    unique = sorted(set(values))
    for start in range(0, len(unique), _QUERY_CHUNK):
        chunk = unique[start : start + _QUERY_CHUNK]
        found.update(session.scalars(select(column).where(column.in_(chunk), *where)))
    return found


__all__ = [
    "BATCH_SIZE",
    "BadRow",
    "ImportFailed",
    "ImportResult",
    "UnreadableFile",
    "count_lines",
    "import_csv",
]
