"""The dashboard's weekly course counts, kept in step with the courses by the database.

One row counts the courses of one week (the Monday of their course date) with one
value of one dimension (site, booking source, lead instructor or product) and one
status. Triggers on ``assets`` (migration 0012, on SQLite and PostgreSQL) add and take
away in the same statement that writes a course, so every write path — operation 1,
the console, imports, merges, bulk loads, a hand-made SQL update — keeps them exact
and in the same transaction; ``ridercrm reports rebuild`` recounts them from the
courses (docs/decisions.md, "Dashboard: weekly counts").
"""

from __future__ import annotations

from sqlalchemy import Integer, String
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
