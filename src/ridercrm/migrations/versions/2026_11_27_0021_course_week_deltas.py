"""The weekly course counts without a hot row: triggers add delta rows, a fold sums them.

Migration 0012's triggers updated the one ``course_week_counts`` row of a site (source,
instructor, product) and week on every booking of that week: concurrent bookings of one
site-week queued on it, and on PostgreSQL deadlocked under mixed load and were retried.
Now each course write inserts rows into ``course_week_deltas`` instead (+1 for the
course's new row, -1 for its old one; an insert takes no lock another insert waits
for), the dashboard reads counts plus deltas, and ``reports.counts.fold`` moves the
deltas into the counts in the background (``serve``) and on ``reports rebuild``. The
sum of both tables is what counting the courses gives, exactly as the counts were.

Revision ID: 0021
Revises: 0018
Create Date: 2026-11-27
"""

# ruff: noqa: S608  (the SQL is built from this file's constants only; no value is ever spliced in)
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0021"
down_revision: str | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

DIMENSIONS = (
    ("site", "course_location"),
    ("source", "booking_source"),
    ("instructor", "rider_instructor_1"),
    ("product", "product_id"),
)
WATCHED = ("course_datetime", "course_status", *(column for _, column in DIMENSIONS))
COUNTS = "course_week_counts"
DELTAS = "course_week_deltas"


def _week(dialect: str, value: str) -> str:
    if dialect == "sqlite":
        return f"date(substr({value}, 1, 10), '-6 days', 'weekday 1')"
    return f"to_char(date_trunc('week', substr({value}, 1, 10)::date), 'YYYY-MM-DD')"


def _delta(dialect: str, row: str, sign: int) -> str:
    """Add ``sign`` to the four counts of the course ``row``; nothing if it has no date."""
    week = _week(dialect, f"{row}.course_datetime")
    selects = " UNION ALL ".join(
        f"SELECT '{dimension}', {week}, coalesce({row}.{column}, ''), {row}.course_status,"
        f" {sign} WHERE {row}.course_datetime IS NOT NULL"
        for dimension, column in DIMENSIONS
    )
    return f"INSERT INTO {DELTAS} (dimension, week, label, status, courses) {selects};"


def _changed(dialect: str) -> str:
    distinct = "IS NOT" if dialect == "sqlite" else "IS DISTINCT FROM"
    return " OR ".join(f"old.{column} {distinct} new.{column}" for column in WATCHED)


def _drop_triggers(dialect: str) -> None:
    if dialect == "sqlite":
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER {COUNTS}_{name}")
    else:
        op.execute(f"DROP TRIGGER {COUNTS}_insert_delete ON assets")
        op.execute(f"DROP TRIGGER {COUNTS}_update ON assets")
        op.execute(f"DROP FUNCTION {COUNTS}_keep()")


def _create_triggers(dialect: str, add: str, take_away: str) -> None:
    if dialect == "sqlite":
        op.execute(f"CREATE TRIGGER {COUNTS}_insert AFTER INSERT ON assets BEGIN {add} END")
        op.execute(f"CREATE TRIGGER {COUNTS}_delete AFTER DELETE ON assets BEGIN {take_away} END")
        op.execute(
            f"CREATE TRIGGER {COUNTS}_update AFTER UPDATE ON assets WHEN {_changed('sqlite')}"
            f" BEGIN {take_away} {add} END"
        )
        return
    op.execute(f"""
CREATE FUNCTION {COUNTS}_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        {take_away}
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        {add}
    END IF;
    RETURN NULL;
END
$$""")
    op.execute(
        f"CREATE TRIGGER {COUNTS}_insert_delete AFTER INSERT OR DELETE ON assets"
        f" FOR EACH ROW EXECUTE FUNCTION {COUNTS}_keep()"
    )
    op.execute(
        f"CREATE TRIGGER {COUNTS}_update AFTER UPDATE ON assets"
        f" FOR EACH ROW WHEN ({_changed('postgresql')}) EXECUTE FUNCTION {COUNTS}_keep()"
    )


def upgrade() -> None:
    dialect = op.get_bind().dialect.name
    op.create_table(
        DELTAS,
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=True),
        sa.Column("dimension", sa.String(10), nullable=False),
        sa.Column("week", sa.String(10), nullable=False),
        sa.Column("label", sa.String(120), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("courses", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=f"pk_{DELTAS}"),
    )
    op.create_index(f"ix_{DELTAS}_dimension", DELTAS, ["dimension", "week"])
    _drop_triggers(dialect)
    _create_triggers(dialect, _delta(dialect, "new", 1), _delta(dialect, "old", -1))


def downgrade() -> None:
    """Fold the deltas into the counts and put 0012's triggers back."""
    dialect = op.get_bind().dialect.name
    op.execute(
        f"INSERT INTO {COUNTS} (dimension, week, label, status, courses)"
        f" SELECT dimension, week, label, status, sum(courses) FROM {DELTAS} WHERE true"
        f" GROUP BY dimension, week, label, status"
        f" ON CONFLICT (dimension, week, label, status)"
        f" DO UPDATE SET courses = {COUNTS}.courses + excluded.courses"
    )
    op.execute(f"DELETE FROM {COUNTS} WHERE courses = 0")
    _drop_triggers(dialect)
    op.drop_index(f"ix_{DELTAS}_dimension", table_name=DELTAS)
    op.drop_table(DELTAS)
    week_new, week_old = (
        _week(dialect, "new.course_datetime"),
        _week(dialect, "old.course_datetime"),
    )
    add = (
        f"INSERT INTO {COUNTS} (dimension, week, label, status, courses) "
        + " UNION ALL ".join(
            f"SELECT '{dimension}', {week_new}, coalesce(new.{column}, ''), new.course_status, 1"
            f" WHERE new.course_datetime IS NOT NULL"
            for dimension, column in DIMENSIONS
        )
        + f" ON CONFLICT (dimension, week, label, status)"
        f" DO UPDATE SET courses = {COUNTS}.courses + 1;"
    )
    names = ", ".join(f"'{dimension}'" for dimension, _ in DIMENSIONS)
    take_away = " ".join(
        [
            f"UPDATE {COUNTS} SET courses = courses - 1 WHERE dimension = '{dimension}'"
            f" AND week = {week_old} AND label = coalesce(old.{column}, '')"
            f" AND status = old.course_status;"
            for dimension, column in DIMENSIONS
        ]
        + [
            f"DELETE FROM {COUNTS} WHERE dimension IN ({names}) AND week = {week_old} AND courses = 0;"
        ]
    )
    _create_triggers(dialect, add, take_away)
