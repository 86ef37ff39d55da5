"""db.bulk_insert (executemany on SQLite, COPY on PostgreSQL) stores what a Core insert
stores: each value through its column type, a timestamp converted once per distinct
value however many rows share it."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator

import pytest
from sqlalchemy import Boolean, Column, Date, Engine, Integer, MetaData, String, Table, select

from ridercrm.db import UTCDateTime, bulk_insert, session_factory, session_scope


@pytest.fixture
def twins(engine: Engine) -> Iterator[tuple[Table, Table]]:
    """Two tables alike: one filled by a Core insert, one by bulk_insert."""
    metadata = MetaData()
    tables = tuple(
        Table(
            name,
            metadata,
            Column("id", Integer, primary_key=True, autoincrement=False),
            Column("at", UTCDateTime),
            Column("later", UTCDateTime),
            Column("born", Date),
            Column("yes", Boolean),
            Column("name", String(20)),
        )
        for name in ("test_bulk_core", "test_bulk_rows")
    )
    metadata.create_all(engine)
    try:
        yield tables  # type: ignore[misc]
    finally:
        metadata.drop_all(engine)


AEST = dt.timezone(dt.timedelta(hours=10))
NOON = dt.datetime(2026, 11, 28, 2, 0, 0, 123456, tzinfo=dt.UTC)
COLUMNS = ("id", "at", "later", "born", "yes", "name")
ROWS = [
    # one instant in two zones, shared by many rows and by both timestamp columns
    (1, NOON, NOON, dt.date(1990, 2, 3), True, "Ann"),
    (2, NOON.astimezone(AEST), NOON, dt.date(1990, 2, 3), False, "Bea"),
    (3, NOON, NOON.astimezone(AEST), None, None, None),
    (4, NOON + dt.timedelta(microseconds=1), None, dt.date(2001, 12, 31), True, "Cy"),
    *((n, NOON, NOON, dt.date(1980, 1, 1 + n % 28), n % 2 == 0, f"P{n}") for n in range(5, 40)),
]


@pytest.mark.parametrize("copy", [False, True])
def test_bulk_rows_are_stored_as_a_core_insert_stores_them(
    engine: Engine, twins: tuple[Table, Table], copy: bool
) -> None:
    core, rows = twins
    sessions = session_factory(engine)
    with session_scope(sessions, write=True) as session:
        session.execute(core.insert(), [dict(zip(COLUMNS, row, strict=True)) for row in ROWS])
        bulk_insert(session, rows, COLUMNS, ROWS, copy=copy)
    with engine.connect() as connection:
        expected = connection.execute(select(core).order_by(core.c.id)).all()
        stored = connection.execute(select(rows).order_by(rows.c.id)).all()
        # and as the database holds them, not only as they read back
        raw = [
            connection.exec_driver_sql(
                f"SELECT at, later, born FROM {table.name} ORDER BY id"  # noqa: S608 (our tables)
            ).all()
            for table in twins
        ]
    assert stored == expected
    assert raw[1] == raw[0]
    assert stored[1].at == NOON
    assert stored[1].at.tzinfo is not None
    assert stored[2].later == NOON
    assert stored[3].at == NOON + dt.timedelta(microseconds=1)
