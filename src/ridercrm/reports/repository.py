"""Queries for the dashboard, on the weekly course counts (``course_week_counts`` plus
the deltas not yet folded into them, ``course_week_deltas``).

The database keeps those counts in step with the courses (reports.models), so a
period's figures are a range of a few thousand count rows, whatever the number of
courses; see docs/decisions.md ("Dashboard: weekly counts").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import Subquery, func, literal, select, union_all
from sqlalchemy.orm import Session

from ridercrm.products.models import Product
from ridercrm.reports.models import CourseWeekCount, CourseWeekDelta


def _counted(dimension: str, first: dt.date, last: dt.date) -> Subquery:
    """The count rows and the not yet folded deltas of one dimension's weeks, together."""
    parts = [
        select(table.week, table.label, table.status, table.courses).where(
            table.dimension == dimension,
            table.week >= first.isoformat(),
            table.week <= last.isoformat(),
        )
        for table in (CourseWeekCount, CourseWeekDelta)
    ]
    return union_all(*parts).subquery()


def weekly(
    session: Session, *, dimension: str, first: dt.date, last: dt.date
) -> Iterable[tuple[str, str, str, int]]:
    """(week's Monday, label, status, courses) of one dimension for the weeks from
    ``first``'s to ``last``'s; the label is "" for courses that do not give it. Counts
    and deltas are summed; a figure that sums to 0 counts no course and is left out."""
    rows = _counted(dimension, first, last)
    total = func.sum(rows.c.courses)
    query = (
        select(rows.c.week, rows.c.label, rows.c.status, total)
        .group_by(rows.c.week, rows.c.label, rows.c.status)
        .having(total != literal(0))
    )
    return [(week, label, status, int(n)) for week, label, status, n in session.execute(query)]


def totals(
    session: Session, *, dimension: str, first: dt.date, last: dt.date, statuses: Iterable[str]
) -> Iterable[tuple[str, str, int]]:
    """(label, status, courses) of one dimension over the weeks, for ``statuses`` only."""
    rows = _counted(dimension, first, last)
    total = func.sum(rows.c.courses)
    query = (
        select(rows.c.label, rows.c.status, total)
        .where(rows.c.status.in_(list(statuses)))
        .group_by(rows.c.label, rows.c.status)
        .having(total != literal(0))
    )
    return [(label, status, int(n)) for label, status, n in session.execute(query)]


def product_names(session: Session, product_ids: Iterable[str]) -> dict[str, str]:
    ids = set(product_ids)
    if not ids:
        return {}
    query = select(Product.id, Product.name, Product.code).where(Product.id.in_(ids))
    return {pid: f"{name} ({code})" for pid, name, code in session.execute(query)}
