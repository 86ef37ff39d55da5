"""Staff console with a long audit trail: the audit page filtered by person, booking or
who, and a person's page, at 100,000 people and 300,000 courses plus N audit records.

Run from the repository root on a store built by ``bench.console_bench --store PATH``:

    .venv/bin/python -m bench.console_audit_bench --store PATH --records 200000

A copy of the store (as built: migration 0011) is given ``--records`` audit records of
operation 1 bookings naming stored people, courses and booking numbers (the bodies as
``record_call`` stores them), one every 30 seconds up to 2026-11-22, and then migrated
to this build's schema, as an existing store is when it is upgraded (from 0012 on the
migration indexes what the records name). Each
call below is timed in its own session (wall and this process's CPU, milliseconds).

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=console_audit_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import insert, select
from sqlalchemy.orm import Session, sessionmaker

from bench import harness
from bench.match_perf import percentile
from bench.report import code_version
from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.migrate import upgrade
from ridercrm.staff import audit_search, person_view

END = dt.datetime(2026, 11, 22, tzinfo=dt.UTC)


def fill(sessions: sessionmaker[Session], records: int, rng: random.Random) -> list[Any]:
    """Operation 1 bookings' audit records, as ``record_call`` stores them, in bulk."""
    with session_scope(sessions) as session:
        assets = list(
            session.execute(select(Asset.id, Asset.person_id, Asset.booking_number)).all()
        )
    rows: list[dict[str, Any]] = []
    for number in range(records):
        course = rng.choice(assets)
        item = {
            "asset_id": course.id,
            "person_id": course.person_id,
            "booking_number": course.booking_number,
            "course_status": "booked",
            "course_datetime": "2026-12-05 08:30:00",
            "course_location": "somerton",
            "rider_instructor_1": "Sam Lee",
            "booking_source": "Website",
            "mobile_phone": "0412 345 678",
        }
        answer = {
            "status": "true",
            "details": [
                {
                    "delivery": "true",
                    "receipt": "Course updated.",
                    "asset_id": course.id,
                    "contact_id": course.person_id,
                }
            ],
        }
        rows.append(
            {
                "id": new_id(RecordKind.AUDIT),
                "created_at": END - dt.timedelta(seconds=30 * (records - number)),
                "operation": "crm.rider_courses",
                "method": "POST",
                "path": "/crm/people/rider_courses",
                "api_key_id": 1,
                "api_key_name": "website",
                "content_type": "application/json",
                "request_body": json.dumps({"people_product": [item]}),
                "response_status": 200,
                "response_body": json.dumps(answer),
                "duration_ms": 5.0,
            }
        )
        if len(rows) == 10_000 or number == records - 1:
            with session_scope(sessions, write=True) as session:
                session.execute(insert(AuditRecord), rows)
            rows = []
    return assets


def timed(
    sessions: sessionmaker[Session], work: Callable[[Session], object]
) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    with session_scope(sessions) as session:
        work(session)
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


def row(name: str, results: list[tuple[float, float]]) -> str:
    walls = [wall for wall, _ in results]
    cpus = [cpu for _, cpu in results]
    return (
        f"| {name} | {len(results)} | {statistics.median(walls):.1f} |"
        f" {percentile(walls, 0.99):.1f} | {statistics.median(cpus):.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--store", type=Path, required=True, help="built by console_bench")
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--seed", type=int, default=14)
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.console_audit_bench")) is not None:
        return status
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="console-audit-bench-") as scratch:
        copy = Path(scratch) / "store.sqlite3"
        shutil.copyfile(args.store, copy)
        engine = build_engine(Settings(database_url=f"sqlite:///{copy}", log_level="WARNING"))
        sessions = session_factory(engine)
        started = time.perf_counter()
        assets = fill(sessions, args.records, rng)  # into the store as built (0011)
        filled_s = time.perf_counter() - started
        started = time.perf_counter()
        upgrade(engine)  # this build's migrations, over the stored records
        upgrade_s = time.perf_counter() - started
        with engine.begin() as connection:
            connection.exec_driver_sql("ANALYZE")
        loads = [os.getloadavg()[0]]
        people = [rng.choice(assets).person_id for _ in range(args.samples)]
        bookings = [rng.choice(assets).booking_number or "" for _ in range(args.samples)]
        lines = [
            f"`.venv/bin/python -m bench.console_audit_bench --records {args.records}"
            f" --samples {args.samples}`, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC,"
            f" {code_version()}; {args.records:,} audit records written in {filled_s:.0f} s,"
            f" then migrated to this build's head in {upgrade_s:.0f} s.",
            "",
            "| what | calls | wall median | wall p99 | CPU median |",
            "|---|---:|---:|---:|---:|",
            row(
                "audit page, no filter",
                [
                    timed(sessions, lambda s: audit_search.search(s, audit_search.Filters()))
                    for _ in range(args.samples)
                ],
            ),
            row(
                "audit page, by person",
                [
                    timed(
                        sessions,
                        lambda s, p=p: audit_search.search(s, audit_search.Filters(person=p)),
                    )
                    for p in people
                ],
            ),
            row(
                "audit page, by booking",
                [
                    timed(
                        sessions,
                        lambda s, b=b: audit_search.search(s, audit_search.Filters(booking=b)),
                    )
                    for b in bookings
                ],
            ),
            # Who: the key that wrote every record (a page at once), and a staff user
            # with none (an OR of two columns walked the whole trail for it; now one
            # range of ix_audit_records_who, empty).
            row(
                "audit page, by who (the key of every record)",
                [
                    timed(
                        sessions,
                        lambda s: audit_search.search(s, audit_search.Filters(who="website")),
                    )
                    for _ in range(args.samples)
                ],
            ),
            row(
                "audit page, by who (a name without records)",
                [
                    timed(
                        sessions,
                        lambda s: audit_search.search(s, audit_search.Filters(who="frontdesk")),
                    )
                    for _ in range(args.samples)
                ],
            ),
            row(
                "person page",
                [timed(sessions, lambda s, p=p: person_view.view_person(s, p)) for p in people],
            ),
        ]
        loads.append(os.getloadavg()[0])
        engine.dispose()
    lines.append("")
    lines.append(f"Load average {loads[0]:.1f} and {loads[1]:.1f} when measuring began and ended.")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
