"""The weekly course counts counted again from the courses: to check them, and to
rebuild them (``ridercrm reports rebuild``).

The database keeps ``course_week_counts`` in step with every write (triggers,
migration 0012); this module is the independent count they must equal, worked out in
Python from the courses' own columns.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, text
from sqlalchemy.orm import Session

from ridercrm.courses.models import Asset
from ridercrm.reports.models import COLUMNS, DIMENSIONS, CourseWeekCount

Key = tuple[str, str, str, str]  # dimension, week (a Monday), label ("" not given), status


def week_of(course_datetime: str) -> str:
    """The Monday (YYYY-MM-DD) of the week of a course date-time written YYYY-MM-DD ...."""
    day = dt.date.fromisoformat(course_datetime[:10])
    return (day - dt.timedelta(days=day.weekday())).isoformat()


def count_courses(session: Session) -> Counter[Key]:
    """Every course with a course date, counted by week, each dimension and status."""
    columns = [getattr(Asset, COLUMNS[dimension]) for dimension in DIMENSIONS]
    query = select(Asset.course_datetime, Asset.course_status, *columns).where(
        Asset.course_datetime.is_not(None)
    )
    counts: Counter[Key] = Counter()
    weeks: dict[str, str] = {}
    for start, status, *labels in session.execute(query.execution_options(yield_per=5000)):
        day = start[:10]
        week = weeks.get(day) or weeks.setdefault(day, week_of(day))
        for dimension, label in zip(DIMENSIONS, labels, strict=True):
            counts[(dimension, week, label or "", status)] += 1
    return counts


def stored_counts(session: Session) -> Counter[Key]:
    rows = session.execute(
        select(
            CourseWeekCount.dimension,
            CourseWeekCount.week,
            CourseWeekCount.label,
            CourseWeekCount.status,
            CourseWeekCount.courses,
        )
    )
    return Counter(
        {(dimension, week, label, status): n for dimension, week, label, status, n in rows}
    )


@dataclass(frozen=True)
class Rebuilt:
    rows: int  # rows of counts now stored
    differed: int  # rows that were missing, extra or wrong before the rebuild


def rebuild(session: Session) -> Rebuilt:
    """Count the courses again and store exactly that (in the caller's write transaction).

    On PostgreSQL the courses are locked against writes until the transaction ends, so
    no write commits between the count and the store; a SQLite write transaction holds
    the database's write lock already.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("LOCK TABLE assets IN SHARE MODE"))
    fresh = count_courses(session)
    stored = stored_counts(session)
    differed = sum(1 for key in fresh.keys() | stored.keys() if fresh[key] != stored[key])
    session.execute(delete(CourseWeekCount))
    if fresh:
        session.execute(
            insert(CourseWeekCount),
            [
                {"dimension": d, "week": w, "label": label, "status": s, "courses": n}
                for (d, w, label, s), n in sorted(fresh.items())
            ],
        )
    return Rebuilt(rows=len(fresh), differed=differed)
