"""Event ids and the outbox's writes: pages written per commit, random ids against time-ordered ids (UUIDv7).

An event's id is the primary key of ``events`` (and ``webhook_deliveries.event_id``'s
index). A random id lands on a random page of that index, so a commit of a 200-item
booking's ~700 events dirties up to 700 pages, more as the table grows; an id that starts
with its time (UUIDv7, as events.service.new_event_id makes) appends to the last pages. This measures the write-ahead log one
commit of 700 events writes on SQLite (bytes of the WAL after a truncating checkpoint
and the commit: deterministic, unlike a time) with the table already holding N events:

    .venv/bin/python bench/event_ids_bench.py --stored 20000,500000
"""

from __future__ import annotations

import argparse
import os
import secrets
import sqlite3
import statistics
import tempfile
from collections.abc import Callable

from sqlalchemy import create_engine

from ridercrm.events.models import Event

COLUMNS = "id, type, subject, payload, created_at"
PER_COMMIT = 700


def random_id() -> str:
    return "msg_" + secrets.token_urlsafe(18)  # the ids before ULIDs


def time_ordered_id() -> str:
    from ridercrm.events.service import new_event_id

    return new_event_id()


def wal_per_commit(stored: int, new_id: Callable[[], str], commits: int = 5) -> float:
    """Median bytes of WAL one commit of PER_COMMIT events writes, over ``commits``."""
    with tempfile.TemporaryDirectory() as workdir:
        path = os.path.join(workdir, "events.db")
        engine = create_engine(f"sqlite:///{path}")
        Event.__table__.create(engine)
        engine.dispose()
        connection = sqlite3.connect(path)
        connection.execute("PRAGMA journal_mode=WAL")

        def insert(count: int) -> None:
            rows = [
                (new_id(), "course.booked", "course:x", '{"type":"course.booked"}', "2026-11-22")
                for _ in range(count)
            ]
            connection.executemany(f"INSERT INTO events ({COLUMNS}) VALUES (?,?,?,?,?)", rows)  # noqa: S608 (constant)
            connection.commit()

        for start in range(0, stored, 10_000):
            insert(min(10_000, stored - start))
        sizes = []
        for _ in range(commits):
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            insert(PER_COMMIT)
            sizes.append(os.path.getsize(path + "-wal"))
        connection.close()
        return statistics.median(sizes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stored", default="20000,500000", help="events already stored")
    args = parser.parse_args()
    print("| events stored | WAL per commit of 700, random ids | time-ordered ids (UUIDv7) |")
    print("|---:|---:|---:|")
    for stored in (int(size) for size in args.stored.split(",")):
        random_mb = wal_per_commit(stored, random_id) / 1e6
        ordered_mb = wal_per_commit(stored, time_ordered_id) / 1e6
        print(f"| {stored:,} | {random_mb:.2f} MB | {ordered_mb:.2f} MB |")


if __name__ == "__main__":
    main()
