"""Export contacts, leads or products as CSV that `ridercrm import` reads back unchanged,
with no cell a spreadsheet runs as a formula (transfer/cells.py)."""

from __future__ import annotations

import csv
from collections.abc import Callable
from typing import IO, Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.people.models import Person
from ridercrm.products.models import Product
from ridercrm.transfer.cells import neutralise
from ridercrm.transfer.columns import Target

FORMATS = ("ours", "salesforce")
_YIELD_PER = 2_000


def cell(value: Any) -> str:
    """A stored value as the text the importer reads: "" for none, true/false, ISO dates."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    # Dates are YYYY-MM-DD and prices keep their 2 places; text that a spreadsheet would
    # run as a formula is quoted (OWASP CSV injection; transfer/cells.py).
    return neutralise(str(value))


def export_csv(
    sessions: sessionmaker[Session],
    target: Target,
    out: IO[str],
    *,
    form: str = "ours",
    on_progress: Callable[[int], None] | None = None,
) -> int:
    """Write every record of ``target`` to ``out`` as CSV, id first; return how many.

    People are streamed from the database in chunks, so the export of a large table
    holds only one chunk in memory.
    """
    if form not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}")
    names = ("id", *target.fields, *target.export_only)
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(target.header(form))
    if target.person_kind is None:
        table: Any = Product.__table__
        statement = select(*(table.c[name] for name in names)).order_by(table.c.code)
    else:
        table = Person.__table__
        statement = (
            select(*(table.c[name] for name in names))
            .where(table.c.kind == target.person_kind)
            .order_by(table.c.id)
        )
    count = 0
    with session_scope(sessions) as session:
        rows = session.execute(statement.execution_options(yield_per=_YIELD_PER))
        for partition in rows.partitions():
            writer.writerows([cell(value) for value in row] for row in partition)
            count += len(partition)
            if on_progress is not None:
                on_progress(count)
    return count
