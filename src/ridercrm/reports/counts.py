"""The weekly course counts counted again from the courses: to check them, and to
rebuild them (``ridercrm reports rebuild``).

The database keeps ``course_week_counts`` in step with every write (triggers,
migration 0012); this module is the independent count they must equal, worked out in
Python from the courses' own columns.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, text
from sqlalchemy.orm import Session

from ridercrm import periodic
from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.db import build_engine, chunks, session_factory, session_scope
from ridercrm.reports.models import COLUMNS, DIMENSIONS, CourseWeekCount, CourseWeekDelta

log = logging.getLogger(__name__)

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
    """The counts as the dashboard reads them: the count rows plus the deltas not yet
    folded into them (a key whose sum is 0 counts nothing and is left out)."""
    counts: Counter[Key] = Counter()
    for table in (CourseWeekCount, CourseWeekDelta):
        rows = session.execute(
            select(table.dimension, table.week, table.label, table.status, table.courses)
        )
        for dimension, week, label, status, n in rows:
            counts[(dimension, week, label, status)] += n
    return +counts  # drops the keys that sum to 0


def fold(session: Session) -> int:
    """Move the deltas this transaction sees into the counts; return how many went.

    Only this function (and ``rebuild``) writes ``course_week_counts`` now, so a course
    write never waits on a count row. A delta inserted by a transaction not yet
    committed is not seen and stays for the next fold: each delta is counted once,
    either in a count row or as a delta, at every moment. Folds take turns (PostgreSQL:
    a lock on the counts that writers of courses never take; SQLite: the write lock).
    """
    postgresql = session.get_bind().dialect.name == "postgresql"
    if postgresql:
        session.execute(text("LOCK TABLE course_week_counts IN EXCLUSIVE MODE"))
    seen = session.execute(
        select(
            CourseWeekDelta.id,
            CourseWeekDelta.dimension,
            CourseWeekDelta.week,
            CourseWeekDelta.label,
            CourseWeekDelta.status,
            CourseWeekDelta.courses,
        )
    ).all()
    if not seen:
        return 0
    change: Counter[Key] = Counter()
    for _id, dimension, week, label, status, n in seen:
        change[(dimension, week, label, status)] += n
    ids = [row[0] for row in seen]
    for chunk in chunks(ids, 5000):
        session.execute(delete(CourseWeekDelta).where(CourseWeekDelta.id.in_(chunk)))
    keys = [key for key, n in change.items() if n]
    current = _current(session, keys)
    updates = [
        {
            "d": d,
            "w": w,
            "label": label,
            "s": s,
            "n": current[(d, w, label, s)] + change[(d, w, label, s)],
        }
        for (d, w, label, s) in keys
        if (d, w, label, s) in current
    ]
    inserts = [
        {
            "dimension": d,
            "week": w,
            "label": label,
            "status": s,
            "courses": change[(d, w, label, s)],
        }
        for (d, w, label, s) in keys
        if (d, w, label, s) not in current
    ]
    if updates:
        session.execute(
            text(
                "UPDATE course_week_counts SET courses = :n WHERE dimension = :d AND week = :w"
                " AND label = :label AND status = :s"
            ),
            updates,
        )
    if inserts:
        session.execute(insert(CourseWeekCount), inserts)
    session.execute(delete(CourseWeekCount).where(CourseWeekCount.courses == 0))
    return len(seen)


def _current(session: Session, keys: list[Key]) -> dict[Key, int]:
    """The stored count of each key that has a count row."""
    found: dict[Key, int] = {}
    weeks = sorted({(d, w) for d, w, _label, _s in keys})
    for dimension, week in weeks:
        rows = session.execute(
            select(CourseWeekCount.label, CourseWeekCount.status, CourseWeekCount.courses).where(
                CourseWeekCount.dimension == dimension, CourseWeekCount.week == week
            )
        )
        for label, status, n in rows:
            found[(dimension, week, label, status)] = n
    return found


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
    session.execute(delete(CourseWeekDelta))
    if fresh:
        session.execute(
            insert(CourseWeekCount),
            [
                {"dimension": d, "week": w, "label": label, "status": s, "courses": n}
                for (d, w, label, s), n in sorted(fresh.items())
            ],
        )
    return Rebuilt(rows=len(fresh), differed=differed)


def start_folder(settings: Settings) -> Callable[[], None]:
    """Fold the count deltas every ``RIDERCRM_COUNTS_FOLD_SECONDS`` in a background thread
    of this process (``serve``); return its stop, which folds once more."""
    engine = build_engine(settings)
    sessions = session_factory(engine)
    failure = "folding the weekly count deltas failed"

    def fold_once(_stop: threading.Event | None = None) -> None:
        # A failed round: the deltas stay and count as they are; the next round folds.
        with session_scope(sessions) as session:  # a read first: most rounds find none
            if session.scalar(select(CourseWeekDelta.id).limit(1)) is None:
                return
        with session_scope(sessions, write=True) as session:
            fold(session)

    stop_rounds = periodic.every(
        settings.counts_fold_seconds,
        fold_once,
        name="ridercrm-counts-fold",
        log=log,
        failure=failure,
    )

    def stop_it() -> None:
        stop_rounds()
        try:
            fold_once()
        except Exception:
            log.exception(failure)
        engine.dispose()

    return stop_it
