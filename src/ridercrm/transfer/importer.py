"""Import contacts, leads or products from a CSV file.

Rows are read and checked in batches (by worker processes on a large file); the good
rows of each batch are written with one bulk statement per table (executemany on SQLite,
COPY on PostgreSQL), and a transaction commits every COMMIT_ROWS rows with the run's
progress, so an import stopped half-way resumes when the same file is run again. The
file is parsed once before anything is written, so one that turns out to be unreadable
half-way leaves nothing behind. A bad row is reported with its line number and reasons
and skipped; it never stops the good rows.

docs/decisions.md, "Bulk import"
"""

from __future__ import annotations

import csv
import datetime as dt
import gc
import stat
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from sqlalchemy import select, update
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import bulk_insert, chunks, session_scope, utcnow
from ridercrm.events import service as events
from ridercrm.matching.score import Thresholds
from ridercrm.matching.service import DEFAULT_THRESHOLDS
from ridercrm.people.models import CONTACT, Person
from ridercrm.people.service import lock_in_order, survivor_of
from ridercrm.products.models import Product
from ridercrm.startup import failure_line, sqlite_busy
from ridercrm.transfer.checks import (
    Checked,
    ImportFailed,
    RowSpec,
    UnreadableFile,
    checked_batches,
    default_workers,
    read_header,
    read_through,
)
from ridercrm.transfer.columns import HeaderProblem, Target, plan_columns
from ridercrm.transfer.models import ImportRun
from ridercrm.transfer.rerun import Matcher, OnMatch, earlier_runs, file_digest
from ridercrm.transfer.rows import (
    PEOPLE_TABLE,
    PERSON_KEYS_TABLE,
    PERSON_ROW_COLUMNS,
    PRODUCT_ROW_COLUMNS,
    PRODUCTS_TABLE,
)

BATCH_SIZE = 5_000  # rows checked (by a worker) at a time
COMMIT_ROWS = 50_000  # rows written per transaction, at least (whole batches)
IMPORT_CACHE_KIB = 256 * 1024  # SQLite page cache while importing (taken only as needed)
_QUERY_CHUNK = 500  # values per IN (...) query: well under every backend's limit


@dataclass(frozen=True)
class BadRow:
    """A row that was not imported: its line in the file (the header is line 1) and why."""

    line: int
    reasons: tuple[str, ...]

    def __str__(self) -> str:
        return f"line {self.line}: {'; '.join(self.reasons)}"


@dataclass(frozen=True)
class MatchedRow:
    """A row that describes a person already stored: skipped, or written to that person."""

    line: int
    person_id: str
    kind: str
    updated: bool

    by_id: bool = False  # the row's own id named the person (a re-run), not the matcher

    def __str__(self) -> str:
        done = "updated" if self.updated else "skipped"
        how = "is" if self.by_id else "matches"
        return f"line {self.line}: {how} {self.kind} {self.person_id}: {done}"


@dataclass
class ImportResult:
    """What an import did (or, in a dry run, would do)."""

    target: Target
    dry_run: bool
    ignored_columns: tuple[str, ...]
    imported: int = 0
    bad_rows: int = 0
    updated: int = 0  # rows that matched a stored person and were written to it
    skipped: int = 0  # rows that matched a stored person and were left out
    aliases: int = 0  # matched rows whose own id was kept, standing for that person

    @property
    def exit_code(self) -> int:
        """0 when every row was good, 1 when some were bad."""
        return 1 if self.bad_rows else 0

    def summary(self) -> str:
        """One line such as "imported 998 contacts, 2 bad rows" (matches said when any)."""
        verb = "would import" if self.dry_run else "imported"
        parts = [f"{verb} {self.target.count(self.imported)}"]
        if self.updated:
            parts.append(f"{self.updated} {'would be ' if self.dry_run else ''}updated")
        if self.skipped:
            parts.append(f"{self.skipped} skipped as already stored")
        if self.aliases:
            parts.append(f"{self.aliases} ids kept as aliases")
        parts.append("1 bad row" if self.bad_rows == 1 else f"{self.bad_rows} bad rows")
        return ", ".join(parts)


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
    on_match: OnMatch = OnMatch.skip,
    force: bool = False,
    batch_size: int = BATCH_SIZE,
    commit_rows: int = COMMIT_ROWS,
    workers: int | None = None,
    ignore_columns: Collection[str] = (),
    on_columns: Callable[[Sequence[str]], None] | None = None,
    on_bad_row: Callable[[BadRow], None] | None = None,
    on_matched: Callable[[MatchedRow], None] | None = None,
    on_progress: Callable[[int], None] | None = None,
    on_resume: Callable[[int], None] | None = None,
    thresholds: Thresholds = DEFAULT_THRESHOLDS,
    operator: str | None = None,
) -> ImportResult:
    """Import every good row of a CSV file; report the bad ones through ``on_bad_row``.

    A row that matches a stored person is skipped or updates that person (``on_match``;
    ``add`` stores it anyway) and is reported through ``on_matched``; the matcher decides
    with ``thresholds`` (the app's RIDERCRM_MATCH_* settings). A file with the
    same bytes as one imported before into the same target is refused unless ``force``.
    A column ``target`` does not know refuses the file unless ``ignore_columns`` names
    it. ``on_columns`` is told the ignored columns once, ``on_progress`` the file line
    reached after each batch. ``workers`` processes check rows (default: by file size
    and CPUs; 0 checks in this process). A transaction commits after the batch that
    brings it to ``commit_rows`` rows; an import stopped half-way is resumed by the same
    file (``on_resume`` is told the line). The import run is stored with ``operator`` (who
    ran it), and each person it stores with that run and its line in the file (the person
    page's origin). Raises ImportFailed when nothing was imported or the database refused
    a row.
    """
    _check_regular(path)
    try:
        digest = file_digest(path)
    except OSError as exc:
        raise UnreadableFile(f"cannot be read: {exc.strerror or exc}") from None
    with _open(path) as handle, _no_cycle_collection():
        reader = _csv_rows(handle)
        try:
            plan = plan_columns(target, read_header(reader), ignore=ignore_columns)
        except HeaderProblem as exc:
            raise UnreadableFile(f"unusable header: {exc}") from None
        result = ImportResult(target=target, dry_run=dry_run, ignored_columns=plan.ignored)
        if on_columns is not None:
            on_columns(plan.ignored)
        if workers is None:
            workers = default_workers(path)
        if not dry_run:
            # Batches commit one by one: a file that turns out unreadable half-way must be
            # refused before the first of them is written.
            _check_readable(path)
        run = _Run(target, result, on_bad_row, on_matched, operator)
        try:
            with session_scope(sessions) as session:
                now = run.begin(
                    session, digest=digest, path=path, force=force, on_match=on_match,
                    thresholds=thresholds, on_resume=on_resume,
                )  # fmt: skip
            spec = RowSpec(target=target, plan=plan, now=now)
            batches = checked_batches(reader, spec, batch_size=batch_size, workers=workers)
            if dry_run:
                with session_scope(sessions) as session:
                    run.use(session)
                    for batch in batches:
                        run.batch(batch)
                        if on_progress is not None and batch:
                            on_progress(batch[-1].line)
                    run.merged_records()
                return result
            # A transaction per COMMIT_ROWS rows or so (the run record's next_line moves
            # with it), so a running service's writes take their turns between them, and an
            # import stopped half-way resumes where it stopped when the same file is run
            # again. Not one per checked batch: every commit rewrites the index pages its
            # rows touched, and person_keys' are everywhere (bench/README.md, Import).
            with ExitStack() as transaction:
                writing: Session | None = None
                rows = 0
                for batch in batches:
                    if writing is None:
                        writing = transaction.enter_context(session_scope(sessions, write=True))
                        run.use(writing)
                    run.batch(batch)
                    rows += len(batch)
                    if rows >= commit_rows:
                        run.save(next_line=batch[-1].line + 1)
                        transaction.close()  # commits
                        writing, rows = None, 0
                        run.committed_line = max(batch[-1].line + 1, run.resume_line)
                    if on_progress is not None:
                        on_progress(batch[-1].line)
                if writing is None:
                    writing = transaction.enter_context(session_scope(sessions, write=True))
                    run.use(writing)
                run.merged_records()
                run.save(next_line=None)
                run.restore_cache()
        except IntegrityError as exc:
            raise ImportFailed(f"the database refused a row ({exc.orig}); {run.kept()}") from None
        except OperationalError as exc:
            if not sqlite_busy(exc):
                raise
            raise ImportFailed(
                f"{failure_line(exc).removeprefix('error: ')}; {run.kept()}"
            ) from None
    return result


def _check_regular(path: Path) -> None:
    """UnreadableFile unless ``path`` is a regular file (a link to one will do).

    The importer reads its file three times (its digest, the check, the rows): a pipe
    gives its bytes once, and a device such as /dev/zero never ends.
    """
    try:
        mode = path.stat().st_mode
    except OSError as exc:
        raise UnreadableFile(f"cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        raise UnreadableFile("cannot be read: Is a directory")
    if not stat.S_ISREG(mode):
        raise UnreadableFile(
            "cannot be read: not a regular file (a pipe or a device);"
            " save what it gives to a file and import that"
        )


def _csv_rows(handle: IO[str]) -> Any:
    """The file's rows, read strictly: a quote never closed is no CSV (the lenient reader
    ran it to the end of the file as one cell)."""
    return csv.reader(handle, strict=True)


def _check_readable(path: Path) -> None:
    """Read the whole file as CSV text (UnreadableFile if it is not), storing nothing."""
    with _open(path) as handle:
        reader = _csv_rows(handle)
        read_header(reader)
        read_through(reader)


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


def _open(path: Path) -> IO[str]:
    try:
        # utf-8-sig: spreadsheet programs and Salesforce exports often start with a BOM.
        return path.open(encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise UnreadableFile(f"cannot be read: {exc.strerror or exc}") from None


class _Run:
    """One import: what was seen so far, and the checks and writes of each batch.

    Each batch is written in a session of its own (``use``); what spans batches (the ids,
    links and codes seen, the merged records waiting for their survivors, the counts)
    lives here.
    """

    def __init__(
        self,
        target: Target,
        result: ImportResult,
        on_bad_row: Callable[[BadRow], None] | None,
        on_matched: Callable[[MatchedRow], None] | None,
        operator: str | None = None,
    ) -> None:
        self.on_matched = on_matched
        self.operator = operator  # who runs it, kept on its import_runs row
        self.target = target
        self.result = result
        self.on_bad_row = on_bad_row
        self.products = target.person_kind is None
        self.table = PRODUCTS_TABLE if self.products else PEOPLE_TABLE
        self.columns = PRODUCT_ROW_COLUMNS if self.products else PERSON_ROW_COLUMNS
        self.alias_columns = (*self.columns, "merged_into")
        self.seen_ids: dict[str, int] = {}
        self.seen_codes: dict[str, int] = {}
        self.seen_links: dict[str, int] = {}
        # Merged records (an export's merged_into), stored after every other row, once
        # their survivor is; and, in a dry run, the ids the file would have stored.
        self.merged: list[Checked] = []
        self.would_store: set[str] = set()
        self.run_id: int | None = None  # the import_runs row (none in a dry run)
        self.new_record: ImportRun | None = None  # a new run's, until its first batch
        self.resume_line = 0  # lines before it were imported by an earlier, unfinished run
        self.committed_line: int | None = None  # the line after the last committed batch
        self.cache_before: int | None = None
        # The person_keys rows of the people written since the last commit, written in
        # key order just before it (save, write_keys).
        self.keys: list[tuple[int, str]] = []

    def begin(
        self,
        session: Session,
        *,
        digest: str,
        path: Path,
        force: bool,
        on_match: OnMatch,
        thresholds: Thresholds,
        on_resume: Callable[[int], None] | None,
    ) -> dt.datetime:
        """Refuse a file imported before, resume an unfinished import of it, or record a
        new run; set up the matcher. The time the run's rows are stored with."""
        runs = earlier_runs(session, target=self.target, digest=digest)
        finished = next((run for run in runs if run.next_line is None), None)
        unfinished = next((run for run in reversed(runs) if run.next_line is not None), None)
        now = utcnow()
        stored_before: dt.datetime | None = None
        if unfinished is not None and not self.result.dry_run:
            # Batches of this file were committed by a run that stopped: go on from there,
            # with that run's time and counts (--force or not: it never imports them twice).
            assert unfinished.next_line is not None
            self.run_id, self.resume_line = unfinished.id, unfinished.next_line
            now = stored_before = unfinished.created_at
            self.result.imported = unfinished.imported
            self.result.updated = unfinished.updated
            self.result.skipped = unfinished.skipped
            self.result.bad_rows = unfinished.bad_rows
            self.committed_line = self.resume_line
            if on_resume is not None:
                on_resume(self.resume_line)
        elif finished is not None and not force:
            raise ImportFailed(
                f"a file with the same content was imported into {self.target.name} on"
                f" {finished.created_at:%Y-%m-%d %H:%M} UTC; nothing imported"
                " (--force imports it again)"
            )
        elif not self.result.dry_run:
            # Stored with the first batch, in its transaction: an import that fails before
            # any batch commits leaves no record, so the file is not taken as imported.
            self.new_record = ImportRun(
                target=self.target.name,
                sha256=digest,
                file_name=str(path)[-500:],
                operator=self.operator[:80] if self.operator else None,
                created_at=now,
            )
        self.matcher = Matcher(session, self.target, on_match, thresholds, stored_before)
        self.session = session
        return now

    def use(self, session: Session) -> None:
        """Write the next batch (or the merged records) in this session."""
        self.session = session
        self.matcher.session = session
        if not self.result.dry_run:
            self._large_sqlite_cache()
        if self.new_record is not None:
            # A new run's record goes first into its first transaction, so that its id is
            # known before any row is written.
            record, self.new_record = self.new_record, None
            record.imported = record.updated = record.skipped = record.bad_rows = 0
            record.next_line = 1
            session.add(record)
            session.flush()
            self.run_id = record.id

    def save(self, *, next_line: int | None) -> None:
        """Just before a commit: write the keys this transaction holds (``write_keys``),
        and keep the run's counts and where it resumes (None: finished) in it."""
        self.write_keys()
        if self.run_id is None:
            return
        if next_line is not None:
            next_line = max(next_line, self.resume_line)  # never back over committed lines
        self.session.execute(
            update(ImportRun)
            .where(ImportRun.id == self.run_id)
            .values(
                imported=self.result.imported,
                updated=self.result.updated,
                skipped=self.result.skipped,
                bad_rows=self.result.bad_rows,
                next_line=next_line,
            )
        )

    def write_keys(self) -> None:
        """Write the keys of the people stored in this transaction, in key order.

        Keys are hashes: written batch by batch they land all over the person_keys B-tree,
        and most of an insert was finding and splitting pages; sorted, the B-tree is
        written from one end to the other, each page once (about half the time, sort
        included: bench/README.md, Import). They still commit with their people. Nothing
        reads them before the commit: the matcher never answers with a person this
        import stored (``Matcher.added``).
        """
        if self.keys and not self.result.dry_run:
            self.keys.sort(key=_first)
            bulk_insert(self.session, PERSON_KEYS_TABLE, ("key", "person_id"), self.keys, copy=True)
        self.keys = []

    def kept(self) -> str:
        """What an import that failed now leaves stored, for its error message."""
        line = self.committed_line
        if line is None or line <= 1:
            return "nothing imported"
        return (
            f"the rows before line {line} are imported, and importing the same file again"
            f" resumes at line {line}"
        )

    def _large_sqlite_cache(self) -> None:
        """On SQLite, let the connection cache more pages while it writes a large import.

        Rows land at random places in the people and key indexes; with SQLite's default
        2 MiB cache most inserts then read and spill pages, which halves the import's
        speed. Set once per connection (a smaller setting would drop cached pages), put
        back by ``restore_cache``.
        """
        connection = self.session.connection()
        if connection.dialect.name != "sqlite":
            return
        size = connection.exec_driver_sql("PRAGMA cache_size").scalar()
        if size != -IMPORT_CACHE_KIB:
            if self.cache_before is None:
                self.cache_before = int(size or -2000)
            connection.exec_driver_sql(f"PRAGMA cache_size=-{IMPORT_CACHE_KIB}")

    def restore_cache(self) -> None:
        """Give the connection its own page cache size back."""
        if self.cache_before is not None:
            self.session.connection().exec_driver_sql(f"PRAGMA cache_size={self.cache_before}")

    def _skip_imported(self, checked: Sequence[Checked]) -> Sequence[Checked]:
        """On a resumed run, the rows not imported yet. Rows before the resume line are
        seen again only for what spans the file: their ids, links and codes (so a repeat
        is still named by its first line) and their merged records, which are stored at
        the end of the run and so were not yet."""
        if not checked or checked[0].line >= self.resume_line:
            return checked
        done = [row for row in checked if row.line < self.resume_line]
        waiting = []
        for row in done:
            if not self._repeats(row) and row.merged_into is not None:
                waiting.append(row)
            if row.given and row.record_id is not None:
                self.matcher.added.add(row.record_id)
        known = self._known_people(waiting)
        fresh = [row for row in waiting if row.line not in known]
        refused = self._refused_by_database(fresh)
        self.merged.extend(row for row in fresh if row.line not in refused)
        return [row for row in checked if row.line >= self.resume_line]

    def _origin(
        self, columns: tuple[str, ...], rows: list[tuple[Any, ...]], lines: list[int]
    ) -> tuple[tuple[str, ...], list[tuple[Any, ...]]]:
        """People's rows with where they came from: this run and their line in the file."""
        if self.products:
            return columns, rows
        return (
            (*columns, "import_run_id", "import_line"),
            [(*row, self.run_id, line) for row, line in zip(rows, lines, strict=True)],
        )

    def batch(self, checked: Sequence[Checked]) -> None:
        """Finish checking a batch, write its good rows, report its bad ones in line order."""
        if self.resume_line:
            checked = self._skip_imported(checked)
        bad: list[BadRow] = []
        candidates: list[Checked] = []
        for row in checked:
            problems = self._repeats(row)
            if problems:
                bad.append(BadRow(row.line, tuple(problems)))
            else:
                candidates.append(row)
        known = self._known_people(candidates)
        refused = self._refused_by_database([row for row in candidates if row.line not in known])
        good: list[tuple[Any, ...]] = []
        good_lines: list[int] = []
        keys: list[tuple[int, str]] = []
        aliases: list[tuple[Any, ...]] = []
        alias_lines: list[int] = []
        alias_keys: list[tuple[int, str]] = []
        aliased: list[tuple[MatchedRow, str]] = []  # (the person matched, the id kept)
        matched: list[MatchedRow] = []
        for row in candidates:
            if row.line in refused:
                bad.append(BadRow(row.line, tuple(refused[row.line])))
                continue
            assert row.row is not None
            assert row.record_id is not None
            if row.merged_into is not None:
                if row.line in known:  # stored already (a re-run): never written to the survivor
                    self.result.skipped += 1
                    person = known[row.line]
                    matched.append(MatchedRow(row.line, person.id, person.kind, False, by_id=True))
                else:
                    self.merged.append(row)
                continue
            if row.line in known:
                # The row's own id is stored: the row is that person (a re-run).
                matched.append(self._apply_match(row, row.row, known[row.line], by_id=True))
                continue
            if self.matcher.active and (found := self._match(row, row.row)) is not None:
                matched.append(found)
                if row.given:
                    # Keep the row's CRM id: stored as a record merged into the person it
                    # matched, so that id works afterwards (people.service.resolve).
                    values = dict(zip(self.columns, row.row, strict=True))
                    values["merged_into"] = found.person_id
                    if "converted_contact_id" in values:
                        values["converted_contact_id"] = None  # the link stays the person's
                    aliases.append(tuple(values[name] for name in self.alias_columns))
                    alias_lines.append(row.line)
                    alias_keys.extend(row.keys)
                    aliased.append((found, row.record_id))
                continue
            good.append(row.row)
            good_lines.append(row.line)
            keys.extend(row.keys)
        if aliases and not self.result.dry_run:
            bulk_insert(
                self.session,
                self.table,
                *self._origin(self.alias_columns, aliases, alias_lines),
                copy=True,
            )
            self.keys.extend(alias_keys)
            self.result.aliases += len(aliases)
            # Each kept id is announced as merged into its person (docs/events.md), under
            # the person's row lock so its events stay in commit order.
            lock_in_order(self.session, {found.person_id for found, _alias in aliased})
            for found, alias_id in aliased:
                events.alias_kept(
                    self.session, person_id=found.person_id, kind=found.kind, alias_id=alias_id
                )
        if good and self.result.dry_run and not self.products:
            self.would_store.update(values[self.columns.index("id")] for values in good)
        if good and not self.result.dry_run:
            bulk_insert(
                self.session, self.table, *self._origin(self.columns, good, good_lines), copy=True
            )
            self.keys.extend(keys)
            if not self.products:
                events.people_imported(self.session, self.columns, good)
        if self.matcher.active:
            self.matcher.added.update(row.record_id for row in candidates if row.record_id)
        if self.on_matched is not None:
            for found in matched:
                self.on_matched(found)
        self.result.imported += len(good)
        self.result.bad_rows += len(bad)
        if self.on_bad_row is not None:
            for bad_row in sorted(bad, key=lambda bad_row: bad_row.line):
                self.on_bad_row(bad_row)

    def merged_records(self) -> None:
        """Store the file's merged records, each merged into its survivor (stored or from
        the file, in any order, through chains), as the export had them; a record whose
        survivor is nowhere is a bad row. No event: they stand for their survivor.
        """
        waiting = self.merged
        while waiting:
            survivors = sorted({row.merged_into for row in waiting if row.merged_into})
            present = _existing(self.session, Person.id, survivors) | (
                self.would_store & set(survivors)
            )
            ready = [row for row in waiting if row.merged_into in present]
            if not ready:
                break
            rows = []
            for row in ready:
                assert row.row is not None
                rows.append((*row.row, row.merged_into))
            if self.result.dry_run:
                self.would_store.update(row.record_id for row in ready if row.record_id)
            else:
                lines = [row.line for row in ready]
                bulk_insert(
                    self.session,
                    self.table,
                    *self._origin(self.alias_columns, rows, lines),
                    copy=True,
                )
                self.keys.extend(key for row in ready for key in row.keys)
            self.result.imported += len(ready)
            waiting = [row for row in waiting if row.merged_into not in present]
        bad = [
            BadRow(row.line, (f"merged_into: {row.merged_into} is not stored nor in the file",))
            for row in waiting
        ]
        self.result.bad_rows += len(bad)
        if self.on_bad_row is not None:
            for bad_row in bad:
                self.on_bad_row(bad_row)

    def _match(self, row: Checked, stored: tuple[Any, ...]) -> MatchedRow | None:
        """If the row describes a stored person: skip it or update that person, and say so."""
        values = dict(zip(self.columns, stored, strict=True))
        person = self.matcher.match(values)
        if person is None:
            return None
        return self._apply_match(row, stored, person)

    def _apply_match(
        self, row: Checked, stored: tuple[Any, ...], person: Person, *, by_id: bool = False
    ) -> MatchedRow:
        """Skip the row or write it to the person it describes, as --on-match says."""
        # A lead converted or merged into a contact is that contact's now: not updated.
        update = self.matcher.on_match is OnMatch.update and not _stands_for_another(person)
        if update:
            if not self.result.dry_run:
                self.matcher.update(person, dict(zip(self.columns, stored, strict=True)))
            self.result.updated += 1
        else:
            self.result.skipped += 1
        return MatchedRow(row.line, person.id, person.kind, update, by_id=by_id)

    def _known_people(self, rows: list[Checked]) -> dict[int, Person]:
        """Rows whose own id names a stored person of the import's kind: that person (live).
        A lead since converted, or merged into a contact, is the stored lead itself: its
        row is skipped (a leads export read back into its own store), never written to
        the contact.

        Not with --on-match add, which stores every row as a new person: there a stored
        id is refused as before.
        """
        if self.products or self.matcher.on_match is OnMatch.add:
            return {}
        given = [row for row in rows if row.given and row.record_id is not None]
        if not given:
            return {}
        stored = {
            person.id: person
            for person in self.session.scalars(
                select(Person).where(
                    Person.id.in_(sorted({row.record_id for row in given})),
                    Person.kind == self.target.person_kind,
                )
            )
        }
        known: dict[int, Person] = {}
        for row in given:
            person = stored.get(row.record_id or "")
            live = survivor_of(self.session, person) if person is not None else None
            if live is not None and live.kind == self.target.person_kind:
                known[row.line] = live
            elif person is not None:
                known[row.line] = person  # now another kind's: skipped by _apply_match
        return known

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


_first = itemgetter(0)


def _existing(session: Session, column: Any, values: Sequence[Any], *where: Any) -> set[Any]:
    """Which of ``values`` the column already holds."""
    found: set[Any] = set()
    unique = sorted(set(values))
    for chunk in chunks(unique, _QUERY_CHUNK):
        found.update(session.scalars(select(column).where(column.in_(chunk), *where)))
    return found


def _stands_for_another(person: Person) -> bool:
    """A record converted into, or merged into, another person."""
    return bool(person.converted_contact_id or person.merged_into)


__all__ = [
    "BATCH_SIZE",
    "BadRow",
    "ImportFailed",
    "ImportResult",
    "MatchedRow",
    "OnMatch",
    "UnreadableFile",
    "count_lines",
    "import_csv",
]
