"""The dashboard's weekly course counts, kept in step with the courses by the database.

One row counts the courses of one week (the Monday of their course date) with one
value of one dimension (site, booking source, lead instructor or product) and one
status. Triggers on ``assets`` (migration 0012, on SQLite and PostgreSQL) add and take
away in the same statement that writes a course, so every write path — operation 1,
the console, imports, merges, bulk loads, a hand-made SQL update — keeps them exact
and in the same transaction; ``ridercrm reports rebuild`` recounts them from the
courses (docs/decisions.md, "Dashboard: weekly counts"). Since migration 0021 the
triggers write delta rows (``CourseWeekDelta``) that a fold moves into the counts: a
figure is its count row plus its deltas.
"""

from __future__ import annotations

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base

SITE, SOURCE, INSTRUCTOR, PRODUCT = "site", "source", "instructor", "product"
DIMENSIONS = (SITE, SOURCE, INSTRUCTOR, PRODUCT)
"""What a row is counted by, and the course column it reads: ``COLUMNS[dimension]``."""
COLUMNS = {
    SITE: "course_location",
    SOURCE: "booking_source",
    INSTRUCTOR: "rider_instructor_1",
    PRODUCT: "product_id",
}


class CourseWeekCount(Base):
    __tablename__ = "course_week_counts"

    dimension: Mapped[str] = mapped_column(String(10), primary_key=True)
    week: Mapped[str] = mapped_column(String(10), primary_key=True)  # a Monday, YYYY-MM-DD
    label: Mapped[str] = mapped_column(String(120), primary_key=True)  # "" when not given
    status: Mapped[str] = mapped_column(String(20), primary_key=True)
    courses: Mapped[int] = mapped_column(Integer)

    # A dimension's weeks are one range of the primary key (SQLite: the table itself).
    __table_args__ = {"sqlite_with_rowid": False}


class CourseWeekDelta(Base):
    """A change to one count, not yet folded into ``course_week_counts`` (migration 0021).

    The triggers on ``assets`` insert these (+1 for a course's new row, -1 for its old
    one) instead of updating the shared count row, so concurrent bookings of one week
    never wait for each other; the dashboard adds them to the counts it reads, and
    ``reports.counts.fold`` moves them into the counts in the background.
    """

    __tablename__ = "course_week_deltas"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    dimension: Mapped[str] = mapped_column(String(10))
    week: Mapped[str] = mapped_column(String(10))
    label: Mapped[str] = mapped_column(String(120))
    status: Mapped[str] = mapped_column(String(20))
    courses: Mapped[int] = mapped_column(Integer)

    __table_args__ = (Index("ix_course_week_deltas_dimension", dimension, week),)
