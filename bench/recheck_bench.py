"""Duplicates: what the incremental re-check adds to a write, and what a re-check costs.

Run from the repository root:

    .venv/bin/python -m bench.recheck_bench --people 20000
    .venv/bin/python -m bench.recheck_bench --people 20000 \
        --database-url postgresql+psycopg://postgres@127.0.0.1:5432/recheck_bench

A store of ``--people`` generated contacts (one in ten stored twice with a changed
e-mail) is imported and scanned once. Then ``--writes`` single-person writes (operation
2's service path: lock the person, change the city, commit) are made in blocks that
alternate between marking (the person row's ``duplicate_touched_at`` set in the write's
own UPDATE, as always since migration 0013) and not (that column left out of the
UPDATE: a write as it was without any mark), with the statements each write sends
counted; the difference of the medians is what the mark adds. Then the marks are
re-checked in the background's batches and the re-check time per touched person is
reported. The PostgreSQL database is created
(and dropped) by the benchmark.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=recheck_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, cast

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import Table, create_engine, event, make_url, select, text
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from bench import harness
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.duplicates import recheck, scan
from ridercrm.matching.score import Thresholds
from ridercrm.migrate import upgrade
from ridercrm.people import service as people
from ridercrm.people.models import Person
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv

PEOPLE = cast(Table, Person.__table__)
FIRST = ["Ann", "Ben", "Cara", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"]
LAST = ["Nguyen", "Kelly", "Smith", "Tran", "Park", "Lee", "Brown", "Wong", "Patel", "Khan"]


def _store(path: Path, size: int, rng: random.Random) -> None:
    lines = ["first_name,last_name,email,date_of_birth,postcode,mobile_phone"]
    n = 0
    while n < size:
        first, last = rng.choice(FIRST), rng.choice(LAST)
        born = f"{rng.randint(1950, 2008)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        phone = f"04{rng.randint(10_000_000, 99_999_999)}"
        postcode = str(rng.randint(3000, 3999))
        lines.append(f"{first},{last},{first}.{last}{n}@example.com,{born},{postcode},{phone}")
        n += 1
        if rng.random() < 0.1 and n < size:
            lines.append(f"{first},{last},{first}{n}@example.org,{born},{postcode},{phone}")
            n += 1
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _write(sessions: sessionmaker[Session], person_id: str, city: str) -> float:
    started = time.perf_counter()
    with session_scope(sessions, write=True) as session:
        person = people.lock_person(session, person_id)
        assert person is not None
        people.apply_changes(session, person, {"city": city})
    return (time.perf_counter() - started) * 1000


def run(url: str, size: int, writes: int, seed: int) -> None:
    rng = random.Random(seed)
    engine = build_engine(Settings(database_url=url))
    upgrade(engine)
    sessions = session_factory(engine)
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "people.csv"
        _store(csv_path, size, rng)
        import_csv(sessions, CONTACTS, csv_path, workers=0)
    thresholds = Thresholds()
    started = time.perf_counter()
    result = scan.scan(sessions, thresholds=thresholds, review_threshold=12.0)
    print(f"{size} people, first scan {time.perf_counter() - started:.1f} s, "
          f"{result.pairs} pairs, {result.clusters} clusters")  # fmt: skip
    # The scan marked the people written in the minute before it (all of them, just
    # imported): re-check them now, as serve's background would, and time it.
    began = time.perf_counter()
    drained = recheck.recheck(sessions, thresholds=thresholds, review_threshold=12.0)
    spent = time.perf_counter() - began
    print(f"re-check of the {drained} marks the first scan left: {spent:.1f} s, "
          f"{spent * 1000 / max(drained, 1):.2f} ms a person (batches of {recheck.BATCH})")  # fmt: skip
    with session_scope(sessions) as session:
        ids = list(session.scalars(select(Person.id)))
    # The mark is the people row's duplicate_touched_at, set by the write's own UPDATE.
    # Side by side, in alternating blocks: writes with it, and writes whose UPDATE leaves
    # it out (its on-update value switched off for the block: what a write cost before
    # marking). Compiled statements are not cached in either, so both compile alike.
    column = PEOPLE.c.duplicate_touched_at
    onupdate = column.onupdate
    statements: dict[bool, list[int]] = {True: [], False: []}
    counting = [0]

    def count(*_args: Any) -> None:
        counting[0] += 1

    event.listen(engine, "before_cursor_execute", count)
    uncached = session_factory(engine.execution_options(compiled_cache=None))
    on_ms: list[float] = []
    off_ms: list[float] = []
    # Blocks of 50, or smaller so that a short run (--writes 10) still has writes on both
    # sides to take the median of.
    block = max(1, min(50, writes // 2))
    for start in range(0, writes, block):
        on = (start // block) % 2 == 0
        column.onupdate = onupdate if on else None
        for n in range(start, min(start + block, writes)):
            counting[0] = 0
            spent = _write(uncached, rng.choice(ids), f"C{n}")
            (on_ms if on else off_ms).append(spent)
            statements[on].append(counting[0])
    column.onupdate = onupdate
    event.remove(engine, "before_cursor_execute", count)
    with session_scope(sessions) as session:
        waiting = recheck.pending(session)
    batch_ms: list[float] = []
    per_person: list[float] = []
    while True:
        began = time.perf_counter()
        with session_scope(sessions, write=True) as session:
            checked = recheck.recheck_batch(
                session, thresholds=thresholds, review_threshold=12.0, limit=100
            )
        if not checked:
            break
        spent = (time.perf_counter() - began) * 1000
        batch_ms.append(spent)
        per_person.append(spent / checked)

    # One statement's round trip on this machine now, for scale (SELECT 1 in a transaction).
    trips: list[float] = []
    with session_scope(sessions) as session:
        for _ in range(300):
            began = time.perf_counter()
            session.execute(text("SELECT 1"))
            trips.append((time.perf_counter() - began) * 1000)

    def p(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, int(q * len(values)))]

    print(f"writes: {len(on_ms)} marking (the mark in their UPDATE), {len(off_ms)} not")
    print(f"write median: {statistics.median(on_ms):.2f} ms marking, "
          f"{statistics.median(off_ms):.2f} ms not; "
          f"p99 {p(on_ms, 0.99):.2f} / {p(off_ms, 0.99):.2f} ms; added by the mark (median"
          f" difference): {statistics.median(on_ms) - statistics.median(off_ms):.2f} ms")  # fmt: skip
    print(f"statements sent per write: {sorted(set(statements[True]))} marking, "
          f"{sorted(set(statements[False]))} not")  # fmt: skip
    print(f"one SELECT 1 round trip: median {statistics.median(trips):.3f} ms")
    print(f"marks waiting: {waiting}; re-check per touched person: median "
          f"{statistics.median(per_person):.2f} ms over {len(batch_ms)} batches of <=100")  # fmt: skip
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--people", type=int, default=20_000)
    parser.add_argument("--writes", type=int, default=1000, help="at least 2")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--database-url", default=None)
    harness.add_previous(parser)
    args = parser.parse_args()
    if args.writes < 2:
        parser.error("--writes: at least 2 (writes alternate marking and not)")
    if (status := harness.compare_with_previous(args, "bench.recheck_bench")) is not None:
        raise SystemExit(status)
    if args.database_url is None:
        with tempfile.TemporaryDirectory() as tmp:
            run(f"sqlite:///{tmp}/bench.db", args.people, args.writes, args.seed)
        return
    url = make_url(args.database_url)
    admin = create_engine(
        url.set(database="postgres"), isolation_level="AUTOCOMMIT", poolclass=NullPool
    )
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
        connection.execute(text(f'CREATE DATABASE "{url.database}"'))
    try:
        run(url.render_as_string(hide_password=False), args.people, args.writes, args.seed)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{url.database}" WITH (FORCE)'))
        admin.dispose()


if __name__ == "__main__":
    main()
