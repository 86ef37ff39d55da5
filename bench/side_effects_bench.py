"""What a 200-item booking's side effects cost: this build against the previous, interleaved.

Run from the repository root (``make bench NAME=side_effects_bench ARGS=...``):

    .venv/bin/python bench/side_effects_bench.py --previous ../prev            # SQLite
    .venv/bin/python bench/side_effects_bench.py --previous ../prev --db postgresql

``--previous DIR``: a worktree of the previous commit (``git worktree add DIR <commit>``),
whose ``src`` a second worker imports with this checkout's installed packages.

Each build gets a worker process with a fresh database of its own (PostgreSQL:
``$RIDERCRM_TEST_POSTGRES_URL``'s server), one webhook endpoint that wants person.created,
person.updated, lead.converted and course.booked, 100 contacts and a product. A round
asks each worker in turn (the order alternating) for one booking: 100 new leads are
made first (not timed), then 200 new-booking items through operation 1's service
(``courses.service.book_courses``, in one write transaction as a request runs it), half
of them leads it converts. Each booking implies the keys of 100 new contacts and 100
changed people, about 700 events and 1,200 messages: the work of the unit of work. Timed:
the booking (``book``: the items, their savepoints and what is recorded) and its commit
(``commit``: the flush, the side effects' inserts, the commit), each in wall-clock time
and in the worker's CPU time (``_cpu``: less moved by a loaded machine). Printed per
build: the rows the booking wrote (which must agree), the medians, and the median of
the per-round ratios this / previous.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
ITEMS = 200
PARTS = ("book", "commit", "book_cpu", "commit_cpu")


def _worker(url: str) -> None:
    """Serve bookings on ``url`` for the parent: one line in, one JSON line out."""
    sys.path.insert(0, str(ROOT))
    from decimal import Decimal

    from sqlalchemy import func, select
    from testkit.factories import new_booking, person_body

    from ridercrm.config import Settings
    from ridercrm.courses import service as courses
    from ridercrm.db import WRITE, build_engine, session_factory, session_scope
    from ridercrm.events import manage
    from ridercrm.events.models import Event
    from ridercrm.ids import RecordKind, new_id
    from ridercrm.migrate import upgrade
    from ridercrm.netsafety import AllowList
    from ridercrm.notifications.models import Message
    from ridercrm.people import service as people
    from ridercrm.people.models import CONTACT, LEAD, PersonKey
    from ridercrm.people.schemas import PersonCreate
    from ridercrm.products import service as products
    from ridercrm.products.schemas import ProductCreate

    # A build before the unit of work (issue 23) asks for the keys' own listeners.
    index = importlib.import_module("ridercrm.people.index")
    install = getattr(index, "keep_keys", lambda factory: factory)

    engine = build_engine(Settings(database_url=url))
    upgrade(engine)
    sessions = install(session_factory(engine))
    os.environ.setdefault("RIDERCRM_REMINDERS", "48h,2h")

    def new_people(kind: str, label: str) -> list[str]:
        with session_scope(sessions, write=True) as session:
            return [
                people.create_person(
                    session,
                    kind=kind,
                    data=PersonCreate.model_validate(
                        person_body(email=f"{label}{n}@example.com", first_name=f"{label}{n}")
                    ),
                ).id
                for n in range(ITEMS // 2)
            ]

    def rows() -> int:
        with session_scope(sessions) as session:
            return sum(
                int(session.scalar(select(func.count()).select_from(table)) or 0)
                for table in (Event, Message, PersonKey)
            )

    with session_scope(sessions, write=True) as session:
        manage.create_endpoint(
            session,
            url="http://127.0.0.1:9/hook",
            event_types=["person.created", "person.updated", "lead.converted", "course.booked"],
            description="bench",
            allow=AllowList.parse("127.0.0.1"),
        )
        product = products.create_product(
            session, data=ProductCreate(name="Learner", code="LAP", price=Decimal("249"))
        ).id
    contacts = new_people(CONTACT, "contact")
    print("ready", flush=True)
    for rep, _line in enumerate(sys.stdin):
        leads = new_people(LEAD, f"lead{rep}-")
        items = [
            new_booking(
                (leads if n % 2 == 0 else contacts)[n // 2],
                product,
                booking_number=f"B-{rep}-{n}",
                course_datetime="2027-06-05 08:30:00",
                course_date_end="2027-06-05 16:30:00",
            )
            for n in range(ITEMS)
        ]
        before = rows()
        session = sessions()
        try:
            session.connection(execution_options=WRITE)
            started, cpu_started = time.perf_counter(), time.process_time()
            results = courses.book_courses(session, items=items, audit_id=new_id(RecordKind.AUDIT))
            booked, cpu_booked = time.perf_counter(), time.process_time()
            session.commit()
            committed, cpu_committed = time.perf_counter(), time.process_time()
        finally:
            session.close()
        assert all(result.delivery for result in results), results[0].receipt
        written = rows() - before
        answer = {
            "book": booked - started,
            "commit": committed - booked,
            "book_cpu": cpu_booked - cpu_started,
            "commit_cpu": cpu_committed - cpu_booked,
            "rows": written,
        }
        print(json.dumps(answer), flush=True)
    engine.dispose()


def _database(kind: str, directory: Path, label: str) -> tuple[str, Any]:
    if kind == "sqlite":
        return f"sqlite:///{directory / (label + '.db')}", lambda: None
    sys.path.insert(0, str(ROOT))
    from testkit.databases import create_run_database, drop_run_database, postgres_url

    base = postgres_url()
    if base is None:
        raise SystemExit("PostgreSQL needs RIDERCRM_TEST_POSTGRES_URL")
    url = create_run_database(base, f"side_effects_{label}")
    return url, lambda: drop_run_database(base, url)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument("--previous", type=Path, help="a worktree of the previous commit")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        _worker(args.worker)
        return 0
    if args.previous is None:
        parser.error("--previous DIR is needed: the build to compare with")
    builds = {"this": ROOT / "src", "previous": (args.previous / "src").resolve()}
    times: dict[str, dict[str, list[float]]] = {b: {p: [] for p in PARTS} for b in builds}
    written: dict[str, set[int]] = {build: set() for build in builds}
    workers: dict[str, subprocess.Popen[str]] = {}
    drops = []
    with tempfile.TemporaryDirectory() as directory:
        try:
            for label, src in builds.items():
                url, drop = _database(args.db, Path(directory), label)
                drops.append(drop)
                env = {**os.environ, "PYTHONPATH": str(src), "RIDERCRM_LOG_LEVEL": "WARNING"}
                workers[label] = subprocess.Popen(
                    [sys.executable, __file__, "--worker", url],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    text=True,
                    env=env,
                )
            for label, worker in workers.items():
                assert worker.stdout is not None
                if worker.stdout.readline().strip() != "ready":
                    raise SystemExit(f"the {label} worker did not start")
            for round_number in range(args.rounds + 1):  # the first round warms up
                order = list(builds) if round_number % 2 else list(reversed(builds))
                for label in order:
                    worker = workers[label]
                    assert worker.stdin is not None
                    assert worker.stdout is not None
                    worker.stdin.write("go\n")
                    worker.stdin.flush()
                    answer = json.loads(worker.stdout.readline())
                    if round_number:
                        for part in PARTS:
                            times[label][part].append(answer[part] * 1000)
                        written[label].add(answer["rows"])
        finally:
            for worker in workers.values():
                if worker.stdin is not None:
                    worker.stdin.close()
                worker.wait(timeout=120)
            for drop in drops:
                drop()
    print(f"{args.db}, {args.rounds} rounds, load average {os.getloadavg()[0]:.2f}")
    for label in builds:
        medians = ", ".join(
            f"{part} {statistics.median(times[label][part]):.1f} ms" for part in PARTS
        )
        print(f"{label:>9}: rows written per booking {sorted(written[label])}; {medians}")
    for part in (*PARTS, "total", "total_cpu"):

        def value(label: str, n: int, part: str = part) -> float:
            if part.startswith("total"):
                cpu = part.removeprefix("total")
                return times[label]["book" + cpu][n] + times[label]["commit" + cpu][n]
            return times[label][part][n]

        ratios = [value("this", n) / value("previous", n) for n in range(args.rounds)]
        print(
            f"this / previous, {part}: median of per-round ratios {statistics.median(ratios):.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
