"""Queries for the dashboard, on the weekly course counts (``course_week_counts``).

The database keeps those counts in step with the courses (reports.models), so a
period's figures are a range of a few thousand count rows, whatever the number of
courses; see docs/decisions.md ("Dashboard: weekly counts").
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ridercrm.products.models import Product
from ridercrm.reports.models import CourseWeekCount


def weekly(
    session: Session, *, dimension: str, first: dt.date, last: dt.date
) -> Iterable[tuple[str, str, str, int]]:
    """(week's Monday, label, status, courses) of one dimension for the weeks from
    ``first``'s to ``last``'s; the label is "" for courses that do not give it."""
    query = select(
        CourseWeekCount.week, CourseWeekCount.label, CourseWeekCount.status, CourseWeekCount.courses
    ).where(
        CourseWeekCount.dimension == dimension,
        CourseWeekCount.week >= first.isoformat(),
        CourseWeekCount.week <= last.isoformat(),
    )
    return session.execute(query).all()


def totals(
    session: Session, *, dimension: str, first: dt.date, last: dt.date, statuses: Iterable[str]
) -> Iterable[tuple[str, str, int]]:
    """(label, status, courses) of one dimension over the weeks, for ``statuses`` only."""
    query = (
        select(CourseWeekCount.label, CourseWeekCount.status, func.sum(CourseWeekCount.courses))
        .where(
            CourseWeekCount.dimension == dimension,
            CourseWeekCount.week >= first.isoformat(),
            CourseWeekCount.week <= last.isoformat(),
            CourseWeekCount.status.in_(list(statuses)),
        )
        .group_by(CourseWeekCount.label, CourseWeekCount.status)
    )
    return [(label, status, int(n)) for label, status, n in session.execute(query)]


def product_names(session: Session, product_ids: Iterable[str]) -> dict[str, str]:
    ids = set(product_ids)
    if not ids:
        return {}
    query = select(Product.id, Product.name, Product.code).where(Product.id.in_(ids))
    return {pid: f"{name} ({code})" for pid, name, code in session.execute(query)}
