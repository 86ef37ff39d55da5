"""The dashboard's weekly course counts, kept by triggers on the courses (assets); what
each audit record names (audit_subjects); and the index of merged people made partial.

A row counts the courses of one week (the Monday of the course date) by one dimension
(site, source, instructor, product) and status. AFTER INSERT, UPDATE and DELETE
triggers on ``assets`` take a course's old row away and add its new one in the same
statement, so any write keeps the counts exact in its own transaction (a savepoint
rolled back takes its counts with it). A row whose count falls to 0 is deleted, so the
table is exactly what counting the courses from scratch gives (``ridercrm reports
rebuild``). Courses without a course date are not counted (no dashboard shows them).

The index on ``people.merged_into`` held every person with NULL: after ANALYZE its
statistics said a look-up matches the whole table, and SQLite scanned the table for the
person page's "merged from" instead (65 ms at 100,000 people). Partial, it holds the
merged people only and is used for every ``merged_into = ?``.

``audit_subjects`` holds, for every audit record, the people and courses (by their
15-character ids) and the booking numbers it names; the service writes them with each
record (ridercrm.audit.subjects), and this migration works them out for the records
already stored, with the same rules (copied here, as a migration must not change).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-22
"""

# ruff: noqa: S608  (the SQL is built from this file's constants only; no value is ever spliced in)
import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import op

revision: str = "0012"
down_revision: str | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (dimension, the course column it counts by)
DIMENSIONS = (
    ("site", "course_location"),
    ("source", "booking_source"),
    ("instructor", "rider_instructor_1"),
    ("product", "product_id"),
)
WATCHED = ("course_datetime", "course_status", *(column for _, column in DIMENSIONS))
TABLE = "course_week_counts"


def _week(dialect: str, value: str) -> str:
    """SQL for the Monday (YYYY-MM-DD) of the week of the date-time text ``value``."""
    if dialect == "sqlite":
        # Six days back, then forward to the next Monday (the same day if it is one).
        return f"date(substr({value}, 1, 10), '-6 days', 'weekday 1')"
    return f"to_char(date_trunc('week', substr({value}, 1, 10)::date), 'YYYY-MM-DD')"


def _add(dialect: str, row: str) -> str:
    """Count the course ``row`` (new or old) in its four rows; nothing if it has no date."""
    week = _week(dialect, f"{row}.course_datetime")
    selects = " UNION ALL ".join(
        f"SELECT '{dimension}', {week}, coalesce({row}.{column}, ''), {row}.course_status, 1"
        f" WHERE {row}.course_datetime IS NOT NULL"
        for dimension, column in DIMENSIONS
    )
    return (
        f"INSERT INTO {TABLE} (dimension, week, label, status, courses) {selects}"
        f" ON CONFLICT (dimension, week, label, status)"
        f" DO UPDATE SET courses = {TABLE}.courses + 1;"
    )


def _take_away(dialect: str, row: str) -> str:
    """Uncount the course ``row``; a row counting no course any more goes. Each
    statement is one primary-key look-up (a course without a date has a NULL week,
    which matches nothing)."""
    week = _week(dialect, f"{row}.course_datetime")
    statements = [
        f"UPDATE {TABLE} SET courses = courses - 1 WHERE dimension = '{dimension}'"
        f" AND week = {week} AND label = coalesce({row}.{column}, '')"
        f" AND status = {row}.course_status;"
        for dimension, column in DIMENSIONS
    ]
    names = ", ".join(f"'{dimension}'" for dimension, _ in DIMENSIONS)
    statements.append(
        f"DELETE FROM {TABLE} WHERE dimension IN ({names}) AND week = {week} AND courses = 0;"
    )
    return " ".join(statements)


def _changed(dialect: str) -> str:
    distinct = "IS NOT" if dialect == "sqlite" else "IS DISTINCT FROM"
    return " OR ".join(f"old.{column} {distinct} new.{column}" for column in WATCHED)


def _sqlite_triggers() -> list[str]:
    return [
        f"CREATE TRIGGER {TABLE}_insert AFTER INSERT ON assets BEGIN {_add('sqlite', 'new')} END",
        f"CREATE TRIGGER {TABLE}_delete AFTER DELETE ON assets"
        f" BEGIN {_take_away('sqlite', 'old')} END",
        f"CREATE TRIGGER {TABLE}_update AFTER UPDATE ON assets WHEN {_changed('sqlite')}"
        f" BEGIN {_take_away('sqlite', 'old')} {_add('sqlite', 'new')} END",
    ]


def _postgresql_triggers() -> list[str]:
    function = f"""
CREATE FUNCTION {TABLE}_keep() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        {_take_away("postgresql", "old")}
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        {_add("postgresql", "new")}
    END IF;
    RETURN NULL;
END
$$"""
    return [
        function,
        f"CREATE TRIGGER {TABLE}_insert_delete AFTER INSERT OR DELETE ON assets"
        f" FOR EACH ROW EXECUTE FUNCTION {TABLE}_keep()",
        f"CREATE TRIGGER {TABLE}_update AFTER UPDATE ON assets"
        f" FOR EACH ROW WHEN ({_changed('postgresql')}) EXECUTE FUNCTION {TABLE}_keep()",
    ]


def _backfill(dialect: str) -> str:
    week = _week(dialect, "course_datetime")
    parts = [
        f"SELECT '{dimension}' AS dimension, {week} AS week, coalesce({column}, '') AS label,"
        f" course_status AS status, count(*) AS courses FROM assets"
        f" WHERE course_datetime IS NOT NULL GROUP BY 1, 2, 3, 4"
        for dimension, column in DIMENSIONS
    ]
    return (
        f"INSERT INTO {TABLE} (dimension, week, label, status, courses)"
        f" SELECT dimension, week, label, status, sum(courses) FROM ({' UNION ALL '.join(parts)})"
        f" AS counted GROUP BY dimension, week, label, status"
    )


def _merged_index(partial: bool) -> None:
    op.drop_index("ix_people_merged_into", table_name="people")
    where = sa.text("merged_into IS NOT NULL") if partial else None
    op.create_index(
        "ix_people_merged_into",
        "people",
        ["merged_into"],
        sqlite_where=where,
        postgresql_where=where,
    )


_ID = re.compile(
    r"(?<![0-9A-Za-z])(003|00Q|02i)([0-9A-Za-z]{12})(?:[0-9A-Za-z]{3})?(?![0-9A-Za-z])"
)
_KIND = {"003": "person:", "00Q": "person:", "02i": "course:"}


def _booking_numbers(node: Any, depth: int = 0) -> Iterator[str]:
    if depth > 20:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "booking_number" and isinstance(value, str) and value.strip():
                yield value.strip()
            elif isinstance(value, dict | list):
                yield from _booking_numbers(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _booking_numbers(value, depth + 1)


def _subjects(*texts: str | None) -> set[str]:
    found: set[str] = set()
    for text in texts:
        if not text:
            continue
        for match in _ID.finditer(text):
            found.add(_KIND[match.group(1)] + match.group(1) + match.group(2))
        if '"booking_number"' in text:
            try:
                document = json.loads(text)
            except ValueError:
                document = None
            found.update("booking:" + number[:80] for number in _booking_numbers(document))
    return set(sorted(found)[:1000])


def _audit_subjects() -> None:
    subjects = op.create_table(
        "audit_subjects",
        sa.Column("subject", sa.String(100), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("audit_id", sa.String(18), nullable=False),
        sa.PrimaryKeyConstraint("subject", "created_at", "audit_id", name="pk_audit_subjects"),
        sqlite_with_rowid=False,
    )
    records = sa.table(
        "audit_records",
        sa.column("id", sa.String),
        sa.column("created_at", sa.DateTime(timezone=True)),
        sa.column("path", sa.String),
        sa.column("request_body", sa.Text),
        sa.column("response_body", sa.Text),
    )
    bind = op.get_bind()
    after = ""
    while True:
        batch = bind.execute(
            sa.select(records).where(records.c.id > after).order_by(records.c.id).limit(2000)
        ).all()
        if not batch:
            return
        rows = [
            {"subject": subject, "created_at": row.created_at, "audit_id": row.id}
            for row in batch
            for subject in _subjects(row.path, row.request_body, row.response_body)
        ]
        if rows:
            bind.execute(sa.insert(subjects), rows)
        after = batch[-1].id


def upgrade() -> None:
    _merged_index(partial=True)
    _audit_subjects()
    op.create_table(
        TABLE,
        sa.Column("dimension", sa.String(10), nullable=False),
        sa.Column("week", sa.String(10), nullable=False),
        sa.Column("label", sa.String(120), nullable=False),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("courses", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("dimension", "week", "label", "status", name=f"pk_{TABLE}"),
        sqlite_with_rowid=False,
    )
    dialect = op.get_bind().dialect.name
    op.execute(_backfill(dialect))
    for statement in _sqlite_triggers() if dialect == "sqlite" else _postgresql_triggers():
        op.execute(statement)


def downgrade() -> None:
    _merged_index(partial=False)
    op.drop_table("audit_subjects")
    if op.get_bind().dialect.name == "sqlite":
        for name in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER {TABLE}_{name}")
    else:
        op.execute(f"DROP TRIGGER {TABLE}_insert_delete ON assets")
        op.execute(f"DROP TRIGGER {TABLE}_update ON assets")
        op.execute(f"DROP FUNCTION {TABLE}_keep()")
    op.drop_table(TABLE)
