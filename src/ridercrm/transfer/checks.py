"""Read a CSV file's rows in batches and check each row on its own, without the database.

A row's own checks (field rules, the form of its ids) and the rows built from it need
nothing but the row, so on a large file and a machine with CPUs to spare they run in
worker processes while the importer writes earlier batches; the checks that need the
whole file or the database (repeats, existing ids) stay in the importer. Results come
back in file order either way.
"""

from __future__ import annotations

import csv
import datetime as dt
import multiprocessing
import os
import sys
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from multiprocessing.pool import AsyncResult
from pathlib import Path
from typing import Any, NamedTuple

from ridercrm.errors import DomainError
from ridercrm.fields import echoed
from ridercrm.ids import RecordKind, canonical_id, id_problem
from ridercrm.transfer.cells import iso_date, restore
from ridercrm.transfer.columns import ColumnPlan, Target
from ridercrm.transfer.rows import PERSON_RULES, PRODUCT_RULES, person_rows, product_row

Rows = list[tuple[int, list[str]]]
PARALLEL_MIN_BYTES = 4 << 20  # about 20,000 people: below this, workers cost more than they save
PARALLEL_MIN_CPUS = 2
# Checking and building rows (field rules, identity, matching keys) is about two thirds
# of an import's CPU and writing one third (bench/README.md, Import): two workers check
# while the importing process writes, so on two CPUs both are busy all the time.
WORKERS = 2


class ImportFailed(DomainError):
    """The import was abandoned and nothing was written."""


class UnreadableFile(ImportFailed):
    """The file cannot be imported at all: missing, not CSV text, or no usable header."""


class Checked(NamedTuple):
    """A row after its own checks: the rows to store, or the problems that make it bad."""

    line: int
    problems: list[str]
    record_id: str | None  # the canonical id the row brings, or a new one for a good row
    given: bool  # whether record_id came from the file
    link: str | None  # a lead's converted contact id
    code: str | None  # a product's code
    # The row to store, when it has no problems of its own: its values in the order of
    # rows.PERSON_ROW_COLUMNS or PRODUCT_ROW_COLUMNS. Tuples and bare integers, not dicts,
    # because checked rows travel back from worker processes and dicts cost ~4x to pickle.
    row: tuple[Any, ...] | None
    keys: list[tuple[int, str]]  # a person's person_keys rows: (key, person id)
    merged_into: str | None = None  # the survivor of a merged record (an export's)


@dataclass(frozen=True)
class RowSpec:
    """What a worker needs to check rows: the kind of record, the column plan, the time."""

    target: Target
    plan: ColumnPlan
    now: dt.datetime


def _unnamed_cells(columns: list[str]) -> str:
    """A row's values under header cells left empty: stored as nothing, so refused."""
    if len(columns) == 1:
        return f"column {columns[0]} has no header but holds a value; name it in the header"
    return f"columns {', '.join(columns)} have no header but hold values; name them in the header"


def check_rows(spec: RowSpec, rows: Rows) -> list[Checked]:
    """Check each row on its own (field rules, ids, stray cells) and build what is stored."""
    target, plan = spec.target, spec.plan
    rules = PRODUCT_RULES if target.person_kind is None else PERSON_RULES
    kind = target.record_kind
    checked = []
    for line, cells in rows:
        width = len(cells)
        values = {name: restore(cells[i]) for i, name in plan.cells if i < width and cells[i]}
        raw_id = values.pop("id", None)
        raw_link = values.pop("converted_contact_id", None)
        raw_merged = values.pop("merged_into", None)
        if "date_of_birth" in values:
            values["date_of_birth"] = iso_date(values["date_of_birth"])
        data, problems = rules.validate(values)
        if width > plan.width and any(cells[plan.width :]):
            problems.insert(0, f"has {width} cells but the header has {plan.width}")
        unnamed = [str(i + 1) for i in plan.blank if i < width and cells[i].strip()]
        if unnamed:
            problems.insert(0, _unnamed_cells(unnamed))
        record_id = link = None
        if raw_id is not None:
            record_id = canonical_id(raw_id, kind)
            if record_id is None:
                problems.insert(0, _not_an_id("id", raw_id, target.singular, kind))
        if raw_link is not None:
            link = canonical_id(raw_link, RecordKind.CONTACT)
            if link is None:
                problems.append(
                    _not_an_id("converted_contact_id", raw_link, "contact", RecordKind.CONTACT)
                )
        merged_into = None
        if raw_merged is not None:
            # A contact is only ever merged into a contact; a lead into a lead or a contact.
            merged_into = canonical_id(raw_merged, kind)
            if merged_into is None and kind is RecordKind.LEAD:
                merged_into = canonical_id(raw_merged, RecordKind.CONTACT)
            if merged_into is None:
                what = "contact" if kind is RecordKind.CONTACT else "person"
                problems.append(_not_an_id("merged_into", raw_merged, what, kind))
        row: tuple[Any, ...] | None = None
        keys: list[tuple[int, str]] = []
        if not problems:
            if target.person_kind is None:
                built = product_row(data, product_id=record_id, now=spec.now)
            else:
                built, person_keys = person_rows(
                    target.person_kind,
                    data,
                    person_id=record_id,
                    converted_contact_id=link,
                    now=spec.now,
                )
                keys = [(key, built["id"]) for key in person_keys]
            record_id = built["id"]
            row = tuple(built.values())
        code = data.get("code") if target.person_kind is None else None
        checked.append(
            Checked(
                line, problems, record_id, raw_id is not None, link, code, row, keys, merged_into
            )
        )
    return checked


def _not_an_id(name: str, raw: str, what: str, kind: RecordKind) -> str:
    return f"{name}: {echoed(raw)} is not a {what} id ({id_problem(raw, kind)})"


def read_header(reader: Iterator[list[str]]) -> list[str]:
    """The first non-blank row, or UnreadableFile."""
    try:
        for cells in reader:
            if any(cell.strip() for cell in cells):
                return cells
    except UnicodeDecodeError as exc:
        raise UnreadableFile(_not_utf8(exc)) from None
    except csv.Error as exc:
        raise UnreadableFile(f"not a CSV file: {exc}") from None
    raise UnreadableFile("the file has no header row")


def _not_utf8(exc: UnicodeDecodeError) -> str:
    # Text is decoded in blocks, so the line of the bad byte is not known.
    byte = exc.object[exc.start]
    return f"not UTF-8 text (byte 0x{byte:02x} cannot be decoded); save it as CSV UTF-8"


def read_batches(reader: Any, size: int) -> Iterator[Rows]:
    """Non-blank rows with the line each starts on, ``size`` at a time."""
    batch: Rows = []
    line = reader.line_num
    try:
        for cells in reader:
            start, line = line + 1, reader.line_num
            if any(cells):
                batch.append((start, cells))
                if len(batch) >= size:
                    yield batch
                    batch = []
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{_not_utf8(exc)}; nothing imported") from None
    except csv.Error as exc:
        raise UnreadableFile(f"line {line + 1}: {exc}; nothing imported") from None
    if batch:
        yield batch


def read_through(reader: Any) -> None:
    """Read every remaining row, keeping none: UnreadableFile, as ``read_batches`` would
    raise it, if some cannot be read (about 2 µs a row: the csv module's own parsing)."""
    line = reader.line_num
    try:
        for _cells in reader:
            line = reader.line_num
    except UnicodeDecodeError as exc:
        raise UnreadableFile(f"{_not_utf8(exc)}; nothing imported") from None
    except csv.Error as exc:
        raise UnreadableFile(f"line {line + 1}: {exc}; nothing imported") from None


def default_workers(path: Path) -> int:
    """How many worker processes suit this file on this machine (0: check in-process)."""
    try:
        size = path.stat().st_size
    except OSError:
        return 0
    # Workers add a fifth to a quarter more CPU time in all (rows travel pickled): worth
    # it only with CPUs to spare, so not when the machine's load average already keeps
    # every CPU busy (measured on a shared 2-CPU machine at load 5-6: no faster, 18 %
    # more CPU; at load 1.0-1.1, one CPU free, 100,000 people took 23 s with them and
    # 29-30 s without). They are forked (no re-import, no pickled set-up), so elsewhere
    # than on Linux the rows are checked in-process.
    cpus = os.cpu_count() or 1
    if size < PARALLEL_MIN_BYTES or cpus < PARALLEL_MIN_CPUS or sys.platform != "linux":
        return 0
    if os.getloadavg()[0] >= cpus:
        return 0
    return WORKERS


def checked_batches(
    reader: Any, spec: RowSpec, *, batch_size: int, workers: int
) -> Iterator[list[Checked]]:
    """The file's rows after their own checks, batch by batch, in file order."""
    batches = read_batches(reader, batch_size)
    if workers < 1:
        for batch in batches:
            yield check_rows(spec, batch)
        return
    with multiprocessing.get_context("fork").Pool(workers) as pool:
        pending: deque[AsyncResult[list[Checked]]] = deque()
        for batch in batches:
            pending.append(pool.apply_async(check_rows, (spec, batch)))
            # A few batches in flight keep the workers busy without reading the whole file.
            if len(pending) > 2 * workers:
                yield pending.popleft().get()
        while pending:
            yield pending.popleft().get()
