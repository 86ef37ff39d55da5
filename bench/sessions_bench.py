"""Availability (issue 25): `GET /crm/sessions` for a month of one site, at 100,000
people and 300,000 courses on SQLite.

Run from the repository root:

    .venv/bin/python -m bench.sessions_bench                # in process, and over HTTP
    .venv/bin/python -m bench.sessions_bench --write        # ... and the README section

The store is the console benchmark's (``bench.console_bench.build_store``: people through
the importer, courses straight into the table, three years at the seven sites, three
products each); ``ridercrm sessions backfill``'s service then makes a session for every
product, site and start, and each gets a capacity of 20 and a few waiting-list entries.

Measured: the service call (``sessions.service.list_sessions``, each call its own
session, as a request has it) and the whole request through a real ``ridercrm serve``
(one worker; key check, audit record and JSON included) with a keep-alive httpx client,
for a random site and calendar month (all its products). Target: median <= 10 ms.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=sessions_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from sqlalchemy import func, select, update
from testkit.serve import free_port, running_server

from bench import harness
from bench.console_bench import TODAY, build_store
from bench.match_perf import percentile
from bench.report import code_version, machine, write_section
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.fields import COURSE_LOCATIONS
from ridercrm.keys.service import create_key
from ridercrm.people.models import Person
from ridercrm.rosters import service as rosters
from ridercrm.sessions import service as sessions
from ridercrm.sessions.models import CourseSession, WaitlistEntry

TARGET_MEDIAN_MS = 10.0


def prepare(url: str, seed: int) -> tuple[int, float]:
    """Sessions for the stored courses, capacity 20, a waiting list on the full ones."""
    engine = build_engine(Settings(database_url=url, log_level="WARNING"))
    started = time.perf_counter()
    rng = random.Random(seed)
    with session_scope(session_factory(engine), write=True) as session:
        made = rosters.backfill(session)
        session.execute(update(CourseSession).values(capacity=20, seats=20))
        people = list(session.scalars(select(Person.id).limit(5000)))
        full = [row.id for row in made if row.booked >= 20]
        for number, session_id in enumerate(full[:2000]):
            for rank in range(1, 4):
                session.add(
                    WaitlistEntry(
                        session_id=session_id,
                        person_id=people[(number * 3 + rank) % len(people)],
                        rank=rank,
                        state="waiting",
                    )
                )
        count = session.scalar(select(func.count()).select_from(CourseSession)) or 0
        _ = rng
    with engine.begin() as connection:
        connection.exec_driver_sql("ANALYZE")
    engine.dispose()
    return int(count), time.perf_counter() - started


def months() -> list[tuple[str, str]]:
    first = TODAY.replace(day=1) - dt.timedelta(days=700)
    out = []
    day = first.replace(day=1)
    for _ in range(30):
        following = (day + dt.timedelta(days=32)).replace(day=1)
        out.append((day.isoformat(), (following - dt.timedelta(days=1)).isoformat()))
        day = following
    return out


def measure_service(url: str, samples: int, seed: int) -> tuple[list[float], list[float], int]:
    engine = build_engine(Settings(database_url=url, log_level="WARNING"))
    factory = session_factory(engine)
    rng = random.Random(seed)
    walls, cpus, answered = [], [], 0
    for _ in range(samples):
        first, last = rng.choice(months())
        window = sessions.Window(
            location=rng.choice(COURSE_LOCATIONS),
            start=f"{first} 00:00:00",
            end=f"{dt.date.fromisoformat(last) + dt.timedelta(days=1)} 00:00:00",
        )
        started, cpu = time.perf_counter(), time.process_time()
        with session_scope(factory) as session:
            rows = sessions.list_sessions(session, window)
        walls.append((time.perf_counter() - started) * 1000)
        cpus.append((time.process_time() - cpu) * 1000)
        answered += len(rows)
    engine.dispose()
    return walls, cpus, answered // samples


def measure_http(url: str, directory: Path, samples: int, seed: int) -> list[float]:
    engine = build_engine(Settings(database_url=url, log_level="WARNING"))
    with session_scope(session_factory(engine), write=True) as session:
        _key, plaintext = create_key(session, name="bench", scopes=["products"])
    engine.dispose()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")},
        "RIDERCRM_DATABASE_URL": url,
        "RIDERCRM_RATE_LIMIT": "",
        "RIDERCRM_LOG_LEVEL": "WARNING",
        "RIDERCRM_ADMIN_KEY_FILE": str(directory / "admin-key.txt"),
        "RIDERCRM_CONSOLE_ADMIN_FILE": str(directory / "console-admin.txt"),
        "RIDERCRM_WEBHOOK_DELIVERER": "false",
        "RIDERCRM_DUPLICATES_RECHECK": "false",
    }
    rng = random.Random(seed + 1)
    walls = []
    headers = {"Authorization": f"Bearer {plaintext}"}
    with (
        running_server(env, free_port(), directory / "server.log") as (base, _pid),
        httpx.Client(base_url=base, headers=headers, trust_env=False, timeout=30) as http,
    ):
        for number in range(samples + 20):
            first, last = rng.choice(months())
            params = {"location": rng.choice(COURSE_LOCATIONS), "from": first, "to": last}
            started = time.perf_counter()
            response = http.get("/crm/sessions", params=params)
            elapsed = (time.perf_counter() - started) * 1000
            if response.status_code != 200:
                raise SystemExit(f"GET /crm/sessions: {response.status_code} {response.text}")
            if number >= 20:  # the first calls warm the worker up
                walls.append(elapsed)
    return walls


def row(name: str, walls: list[float], cpus: list[float] | None, note: str) -> str:
    median = statistics.median(walls)
    cpu = f"{statistics.median(cpus):.2f}" if cpus else "-"
    verdict = "met" if median <= TARGET_MEDIAN_MS else "**missed**"
    return (
        f"| {name} | {len(walls)} | {median:.2f} | {percentile(walls, 99):.2f} |"
        f" {max(walls):.2f} | {cpu} | <= {TARGET_MEDIAN_MS:g} ({verdict}) | {note} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--courses", type=int, default=300_000)
    parser.add_argument("--samples", type=int, default=300)
    parser.add_argument("--seed", type=int, default=25)
    parser.add_argument("--write", action="store_true", help="write bench/README.md's section")
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.sessions_bench")) is not None:
        return status
    with tempfile.TemporaryDirectory(prefix="sessions-bench-") as scratch:
        directory = Path(scratch)
        print(f"building {args.people:,} people and {args.courses:,} courses ...", flush=True)
        store = build_store(directory, people=args.people, courses=args.courses, seed=args.seed)
        count, prepare_s = prepare(store.url, args.seed)
        print(f"{count:,} sessions made in {prepare_s:.0f} s", flush=True)
        loads = [os.getloadavg()[0]]
        walls, cpus, per_call = measure_service(store.url, args.samples, args.seed)
        http_walls = measure_http(store.url, directory, args.samples, args.seed)
        loads.append(os.getloadavg()[0])
    facts = machine()
    lines = [
        "## Course sessions: availability (issue 25)",
        "",
        f"`.venv/bin/python -m bench.sessions_bench --people {args.people} --courses"
        f" {args.courses} --samples {args.samples}`, {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M}"
        f" UTC, {code_version()}; {facts['nproc']} CPUs ({facts['cpu']}), Python"
        f" {facts['python']}, SQLite {facts['sqlite']}. The machine was shared with other"
        f" work (load average {', '.join(f'{x:.1f}' for x in loads)} at the start and end"
        " of the measurements): wall-clock figures are upper bounds.",
        "",
        f"Store: {store.people:,} people, {store.courses:,} courses (the console benchmark's),"
        f" {count:,} sessions made from them by the backfill in {prepare_s:.0f} s, capacity"
        f" 20, waiting lists on the full ones. A random site and calendar month answers"
        f" about {per_call} sessions.",
        "",
        "Milliseconds per call:",
        "",
        "| what | calls | median | p99 | max | CPU median | target (median) | note |",
        "|---|---:|---:|---:|---:|---:|---|---|",
        row("service: `list_sessions`", walls, cpus, "each call its own session"),
        row(
            "HTTP: `GET /crm/sessions?location=&from=&to=`",
            http_walls,
            None,
            "client-side wall time, `ridercrm serve`, 1 worker, keep-alive, scope products",
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
