"""Staff console: server time per page at 100,000 people and 300,000 courses on SQLite.

Run from the repository root:

    .venv/bin/python -m bench.console_bench                 # the services, in process
    .venv/bin/python -m bench.console_bench --write         # ... and the README section

A store is generated at run time in a temporary directory (nothing is committed): the
people through ``ridercrm import`` 's own importer (so their matching keys exist, as
in a real store), then the courses straight into the tables, spread over three years
(two back, one ahead) at the seven training sites, Wednesday to Sunday, three products
per site, five instructors per site; past courses mostly completed, future ones booked.

Measured, each call in its own session as a request has it:

- the day sheet of a random site and day (``courses.daysheet.day_sheet``);
- the dashboard of the default period, 12 weeks ending on a random day, and of a
  53-week period (``reports.service.dashboard``, the charts rendered too);
- a 40-row submission of a day sheet (``courses.daysheet.record_results``: 40 rows of
  pass, fail, cancelled and one broken row, its own write transaction and commit).

With ``--http`` the same pages are also asked of a real ``ridercrm serve`` (one worker)
on the store, signed in as a staff user, through a keep-alive httpx client on
127.0.0.1: search (a stored person's name, phone or e-mail), a person's page (someone
with courses), the day sheet, the dashboard, and a 40-row day-sheet submission (the
form as the page sends it, CSRF token included).

Targets (issue 14): median <= 100 ms and p99 <= 300 ms per page; a 40-row submission
<= 300 ms.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=console_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx
from sqlalchemy import Engine, func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.serve import free_port, running_server

from bench import harness
from bench.match_perf import CSV_FIELDS, PeopleGenerator, percentile
from bench.report import code_version, machine, write_section
from ridercrm.audit.call import Call
from ridercrm.audit.service import record_call
from ridercrm.config import Settings
from ridercrm.courses import daysheet, rules
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import build_engine, bulk_insert, session_factory, session_scope
from ridercrm.fields import COURSE_LOCATIONS
from ridercrm.ids import RecordKind, new_id
from ridercrm.migrate import upgrade
from ridercrm.people.models import Person
from ridercrm.products.models import Product
from ridercrm.reports import charts
from ridercrm.reports import service as reports
from ridercrm.staff import finder, person_view
from ridercrm.staff import service as staff_service
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv

TODAY = dt.date(2026, 11, 22)
PRODUCTS = (  # (code stem, name, start time, end time, price)
    ("LAP", "Learner Approved Pre-Licence", "08:30:00", "16:30:00", "249.00"),
    ("RDY", "Ride Ready", "07:30:00", "12:00:00", "189.00"),
    ("LIC", "Licence Test", "13:00:00", "15:30:00", "199.00"),
)
SOURCES = (("Website", 0.62), ("Phone", 0.25), ("In Person", 0.1), ("None", 0.03))
OPEN_DAYS = {2, 3, 4, 5, 6}  # Wednesday to Sunday
ASSET_COLUMNS = (
    "id", "person_id", "product_id", "booking_number", "course_status", "course_feedback",
    "course_datetime", "course_date_end", "course_location", "rider_instructor_1",
    "rider_instructor_2", "dealer_code", "course_price", "booking_source", "created_at",
    "updated_at",
)  # fmt: skip
TARGET_MEDIAN_MS, TARGET_P99_MS, TARGET_SUBMISSION_MS = 100.0, 300.0, 300.0
LOADS: list[float] = []  # the 1-minute load average when measuring starts and ends


@dataclass
class Store:
    path: Path
    url: str
    people: int = 0
    courses: int = 0
    import_s: float = 0.0
    courses_s: float = 0.0
    open_days: list[dt.date] = field(default_factory=list)


def build_store(directory: Path, *, people: int, courses: int, seed: int) -> Store:
    path = directory / "console.sqlite3"
    store = Store(path=path, url=f"sqlite:///{path}")
    engine = build_engine(Settings(database_url=store.url, log_level="WARNING"))
    try:
        upgrade(engine)
        started = time.perf_counter()
        csv_path = directory / "people.csv"
        with csv_path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(CSV_FIELDS)
            for person in PeopleGenerator(seed).people(people):
                writer.writerow([person[name] for name in CSV_FIELDS])
        result = import_csv(session_factory(engine), CONTACTS, csv_path)
        csv_path.unlink()
        if result.imported != people:
            raise SystemExit(f"import of {people} people: {result.summary()}")
        store.import_s = time.perf_counter() - started
        started = time.perf_counter()
        store.open_days = _fill_courses(engine, courses=courses, seed=seed)
        store.courses_s = time.perf_counter() - started
        with engine.begin() as connection:
            connection.exec_driver_sql("ANALYZE")
        with engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
        with engine.connect() as connection:
            store.people = connection.scalar(select(func.count()).select_from(Person)) or 0
            store.courses = connection.scalar(select(func.count()).select_from(Asset)) or 0
    finally:
        engine.dispose()
    return store


def _fill_courses(engine: Engine, *, courses: int, seed: int) -> list[dt.date]:
    """Products, then the courses and their first status-history rows; the open days."""
    rng = random.Random(seed * 7 + 1)
    now = dt.datetime.now(dt.UTC)
    first = TODAY - dt.timedelta(days=730)
    days = [first + dt.timedelta(days=i) for i in range(1096)]
    open_days = [day for day in days if day.weekday() in OPEN_DAYS]
    sources = [name for name, _ in SOURCES]
    weights = [weight for _, weight in SOURCES]
    with session_scope(session_factory(engine), write=True) as session:
        person_ids = list(session.scalars(select(Person.id)))
        products: list[tuple[str, str, str, str, Decimal]] = []  # id, site, start, end, price
        for site in COURSE_LOCATIONS:
            for stem, name, start, end, price in PRODUCTS:
                product = Product(
                    id=new_id(RecordKind.PRODUCT),
                    name=f"{name} ({site.title()})",
                    code=f"{stem}-{site.upper().replace(' ', '')[:4]}",
                    price=Decimal(price),
                )
                session.add(product)
                products.append((product.id, site, start, end, product.price))
        session.flush()
        instructors = {
            site: [f"Instructor {site.title()} {n}" for n in range(1, 6)]
            for site in COURSE_LOCATIONS
        }
        asset_rows: list[tuple[Any, ...]] = []
        history_rows: list[tuple[Any, ...]] = []
        audit_id = new_id(RecordKind.AUDIT)
        for number in range(courses):
            product_id, site, start, end, price = rng.choice(products)
            day = rng.choice(open_days)
            status, feedback = _outcome(rng, past=day < TODAY)
            asset_id = new_id(RecordKind.ASSET)
            asset_rows.append(
                (
                    asset_id, rng.choice(person_ids), product_id, f"BN-{number:07d}", status,
                    feedback, f"{day} {start}", f"{day} {end}", site,
                    rng.choice(instructors[site]), "", "D001", price,
                    rng.choices(sources, weights)[0], now, now,
                )
            )  # fmt: skip
            history_rows.append((asset_id, None, status, now, audit_id))
        bulk_insert(
            session,
            Asset.__table__,  # type: ignore[arg-type]
            ASSET_COLUMNS,
            asset_rows,
        )
        bulk_insert(
            session,
            AssetStatusChange.__table__,  # type: ignore[arg-type]
            ("asset_id", "from_status", "to_status", "changed_at", "audit_id"),
            history_rows,
        )
    return open_days


def _outcome(rng: random.Random, *, past: bool) -> tuple[str, str | None]:
    roll = rng.random()
    if not past:
        return (rules.CANCELLED, None) if roll < 0.08 else (rules.BOOKED, None)
    if roll < 0.08:
        return rules.CANCELLED, None
    if roll < 0.12:
        return rules.BOOKED, None  # never recorded
    if roll < 0.25:
        return rules.FAILED, rng.choice(rules.FAIL_FEEDBACK)
    return rules.PASSED, rng.choice(rules.PASS_FEEDBACK)


# ----------------------------------------------------------------------------- timing


@dataclass
class Timing:
    name: str
    times_ms: list[float] = field(default_factory=list)
    cpu_ms: list[float] = field(default_factory=list)  # this process's CPU, same calls
    note: str = ""

    def add(self, wall_cpu: tuple[float, float]) -> None:
        self.times_ms.append(wall_cpu[0])
        self.cpu_ms.append(wall_cpu[1])

    @property
    def median(self) -> float:
        return statistics.median(self.times_ms) if self.times_ms else float("nan")

    @property
    def p99(self) -> float:
        return percentile(self.times_ms, 0.99)

    def row(self, target_median: float | None, target_p99: float) -> str:
        met = (target_median is None or self.median <= target_median) and self.p99 <= target_p99
        cpu = f"{statistics.median(self.cpu_ms):.1f}" if self.cpu_ms else "-"
        return (
            f"| {self.name} | {len(self.times_ms)} | {self.median:.1f} | {self.p99:.1f} |"
            f" {max(self.times_ms):.1f} | {cpu} | {'met' if met else '**not met**'} |"
            f" {self.note} |"
        )


def timed(
    sessions: sessionmaker[Session], work: Callable[[Session], object]
) -> tuple[float, float]:
    """Wall and CPU milliseconds of ``work`` in its own session."""
    started, cpu = time.perf_counter(), time.process_time()
    with session_scope(sessions) as session:
        work(session)
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000


def measure_services(store: Store, *, samples: int, submissions: int, seed: int) -> list[Timing]:
    rng = random.Random(seed * 13 + 5)
    engine = build_engine(Settings(database_url=store.url, log_level="WARNING"))
    sessions = session_factory(engine)
    search = Timing("search (service)", note="a stored person's name, phone or e-mail")
    person = Timing("person page (service)", note="someone with courses")
    sheet = Timing("day sheet (service)", note="a random site and open day")
    board = Timing("dashboard, 12 weeks (service + charts)", note="ending on a random day")
    year = Timing("dashboard, 53 weeks (service + charts)", note="the longest period allowed")
    try:
        for _ in range(3):  # warm the page cache as a running server's would be
            timed(sessions, lambda s: _dashboard(s, rng, weeks=53))
        texts, people = _samples(sessions, rng, samples)
        for text, person_id in zip(texts, people, strict=True):
            search.add(timed(sessions, lambda s, text=text: finder.find_people(s, text=text)))
            person.add(timed(sessions, lambda s, pid=person_id: person_view.view_person(s, pid)))
        for _ in range(samples):
            site, day = rng.choice(COURSE_LOCATIONS), rng.choice(store.open_days)
            sheet.add(
                timed(
                    sessions,
                    lambda s, site=site, day=day: daysheet.day_sheet(s, site=site, day=day),
                )
            )
            board.add(timed(sessions, lambda s: _dashboard(s, rng, weeks=12)))
        for _ in range(max(10, samples // 10)):
            year.add(timed(sessions, lambda s: _dashboard(s, rng, weeks=53)))
        submission = Timing("day-sheet submission, 40 rows", note="own transaction and commit")
        future = [day for day in store.open_days if day >= TODAY]
        rng.shuffle(future)
        for day in future[:submissions]:
            submission.add(_submit(sessions, rng, day))
    finally:
        engine.dispose()
    return [search, person, sheet, board, year, submission]


def _samples(
    sessions: sessionmaker[Session], rng: random.Random, count: int
) -> tuple[list[str], list[str]]:
    """Search texts (a stored person's name, mobile or e-mail) and people with courses."""
    with session_scope(sessions) as session:
        rows = session.execute(
            select(Person.first_name, Person.last_name, Person.mobile_phone, Person.email)
            .order_by(func.random())
            .limit(count)
        ).all()
        people = list(session.scalars(select(Asset.person_id).order_by(func.random()).limit(count)))
    texts = []
    for first, last, mobile, email in rows:
        texts.append(rng.choice([f"{first or ''} {last}".strip(), mobile or last, email or last]))
    return texts, people


def _dashboard(session: Session, rng: random.Random, *, weeks: int) -> None:
    end = TODAY + dt.timedelta(days=rng.randint(-600, 300))
    period = reports.period_of(end - dt.timedelta(weeks=weeks - 1), end, today=TODAY)
    board = reports.dashboard(session, period=period)
    charts.stacked_weeks(chart_id="a", title="t", data=board.bookings_by_location, unit="c")
    charts.stacked_weeks(chart_id="b", title="t", data=board.bookings_by_source, unit="c")
    charts.stacked_weeks(chart_id="c", title="t", data=board.cancellations_by_location, unit="c")
    charts.rate_bars(chart_id="d", title="t", rates=board.pass_by_location)
    charts.rate_bars(chart_id="e", title="t", rates=board.pass_by_instructor)
    charts.rate_bars(chart_id="f", title="t", rates=board.pass_by_product)


def _submit(
    sessions: sessionmaker[Session], rng: random.Random, day: dt.date
) -> tuple[float, float]:
    """Record 40 rows of the busiest site's sheet on ``day``; the time of the whole write."""
    with session_scope(sessions) as session:
        site = max(
            COURSE_LOCATIONS,
            key=lambda s: daysheet.day_sheet(session, site=s, day=day).rider_count,
        )
        riders = [
            rider
            for group in daysheet.day_sheet(session, site=site, day=day).groups
            for rider in group.riders
            if rider.course_status == rules.BOOKED
        ][:40]
    entries = [_entry(rng, rider.asset_id, index) for index, rider in enumerate(riders)]
    call = Call(method="POST", path="/console/daysheet", operation="console.daysheet")
    call.content_type = "application/json"
    started, cpu = time.perf_counter(), time.process_time()
    with session_scope(sessions, write=True) as session:
        # As the console's change does it: the work, then its one audit record.
        done = daysheet.record_results(
            session, site=site, day=day, entries=entries, audit_id=call.audit_id
        )
        call.request_body = json.dumps([vars(entry) for entry in entries]).encode()
        record = record_call(
            session,
            call=call,
            status=200,
            response_body=json.dumps({"ok": True, "result": done.summary()}).encode(),
            duration_ms=(time.perf_counter() - started) * 1000,
        )
        record.staff_user = "bench"
    return (time.perf_counter() - started) * 1000, (time.process_time() - cpu) * 1000


def _entry(rng: random.Random, asset_id: str, index: int) -> daysheet.Entry:
    if index == 0:  # one broken row: a pass without its grade
        return daysheet.Entry(asset_id, rules.PASSED, "")
    roll = rng.random()
    if roll < 0.75:
        return daysheet.Entry(asset_id, rules.PASSED, rng.choice(rules.PASS_FEEDBACK))
    if roll < 0.92:
        return daysheet.Entry(asset_id, rules.FAILED, rng.choice(rules.FAIL_FEEDBACK))
    return daysheet.Entry(asset_id, rules.CANCELLED, "")


# ----------------------------------------------------------------------------- HTTP

PASSWORD = secrets.token_urlsafe(16)  # a throwaway store's only user
CSRF = re.compile(r'name="csrf" value="([^"]+)"')
RESULT = re.compile(r'name="result-([0-9A-Za-z]{18})"')


def measure_http(store: Store, *, samples: int, submissions: int, seed: int) -> list[Timing]:
    """The same pages through a real server; wall time per request on 127.0.0.1."""
    rng = random.Random(seed * 17 + 3)
    engine = build_engine(Settings(database_url=store.url, log_level="WARNING"))
    sessions = session_factory(engine)
    with session_scope(sessions, write=True) as session:
        staff_service.create_user(session, name="bench", role="staff", password=PASSWORD)
    texts, people = _samples(sessions, rng, samples)
    engine.dispose()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")}
    env.update(RIDERCRM_DATABASE_URL=store.url, RIDERCRM_LOG_LEVEL="WARNING")
    timings = {
        name: Timing(f"{name} (HTTP)", note=note)
        for name, note in (
            ("search", "GET /console/people?q=..."),
            ("person", "GET /console/people/{id}"),
            ("day sheet", "GET /console/daysheet?site=...&date=..."),
            ("dashboard", "GET /console/dashboard, 12 weeks"),
            ("submission", "POST /console/daysheet, 40 rows"),
        )
    }
    with (
        running_server(env, free_port(), store.path.with_suffix(".log")) as (base, _pid),
        httpx.Client(base_url=base + "/console", trust_env=False, timeout=60) as client,
    ):
        login = client.get("/login")
        token = CSRF.search(login.text)
        assert token, "no sign-in form"
        answer = client.post(
            "/login", data={"csrf": token.group(1), "username": "bench", "password": PASSWORD}
        )
        assert answer.status_code == 303, answer.text

        def get(name: str, path: str, params: dict[str, str] | None = None) -> str:
            started = time.perf_counter()
            page = client.get(path, params=params)
            timings[name].times_ms.append((time.perf_counter() - started) * 1000)
            assert page.status_code == 200, (path, page.status_code)
            return page.text

        for _ in range(3):
            get("dashboard", "/dashboard")
        timings["dashboard"].times_ms.clear()
        for text, person_id in zip(texts, people, strict=True):
            get("search", "/people", {"q": text})
            get("person", f"/people/{person_id}")
            site, day = rng.choice(COURSE_LOCATIONS), rng.choice(store.open_days)
            get("day sheet", "/daysheet", {"site": site, "date": day.isoformat()})
            end = TODAY + dt.timedelta(days=rng.randint(-600, 300))
            first = end - dt.timedelta(weeks=11)
            get("dashboard", "/dashboard", {"from": first.isoformat(), "to": end.isoformat()})
        future = [day for day in store.open_days if day >= TODAY + dt.timedelta(days=200)]
        rng.shuffle(future)
        for day in future[:submissions]:
            site = rng.choice(COURSE_LOCATIONS)
            page = client.get("/daysheet", params={"site": site, "date": day.isoformat()})
            token = CSRF.search(page.text)
            assert token, "no csrf on the sheet"
            form = {"csrf": token.group(1), "site": site, "date": day.isoformat()}
            for index, asset_id in enumerate(RESULT.findall(page.text)[:40]):
                entry = _entry(rng, asset_id, index)
                form[f"result-{asset_id}"] = entry.course_feedback or entry.course_status
            started = time.perf_counter()
            answer = client.post("/daysheet", data=form)
            timings["submission"].times_ms.append((time.perf_counter() - started) * 1000)
            assert answer.status_code == 200, answer.text[:500]
    return list(timings.values())


# ----------------------------------------------------------------------------- report


def _load_sentence(loads: Sequence[float], cpus: object) -> str:
    """What the load averages at the start and end say about the wall-clock figures."""
    shown = ", ".join(f"{load:.1f}" for load in loads)
    if loads and max(loads) < 1.5:
        return f"Quiet machine: load average {shown} at the start and end of the measurements."
    return (
        f"**The machine was loaded** (load average {shown} at the start and end of the"
        f" measurements, on {cpus} CPUs): the wall-clock figures are upper bounds."
    )


def report(store: Store, timings: Sequence[Timing], args: argparse.Namespace) -> str:
    facts = machine()
    lines = [
        "## Staff console (issue 14)",
        "",
        f"`.venv/bin/python -m bench.console_bench --people {args.people} --courses"
        f" {args.courses} --samples {args.samples} --submissions {args.submissions}"
        f"{' --http' if args.http else ''}`,"
        f" {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC, {code_version()};"
        f" {facts['nproc']} CPUs ({facts['cpu']}), Python {facts['python']},"
        f" SQLite {facts['sqlite']}. {_load_sentence(LOADS, facts['nproc'])}",
        "",
        f"Store: {store.people:,} people (imported in {store.import_s:.0f} s with their"
        f" matching keys), {store.courses:,} courses over three years at"
        f" {len(COURSE_LOCATIONS)} sites (written in {store.courses_s:.0f} s); about"
        f" {store.courses / (len(store.open_days) * len(COURSE_LOCATIONS)):.0f} riders per"
        " site and open day.",
        "",
        "Server time per call, in milliseconds of wall time (each call its own session; a"
        " submission its own write transaction, commit included), and the median CPU time"
        " of the same calls (less sensitive to the other work on the machine):",
        "",
        "| what | calls | median | p99 | max | CPU median | target | note |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for timing in timings:
        if "submission" in timing.name:
            lines.append(timing.row(None, TARGET_SUBMISSION_MS))
        else:
            lines.append(timing.row(TARGET_MEDIAN_MS, TARGET_P99_MS))
    lines += [
        "",
        "Targets: median <= 100 ms and p99 <= 300 ms per page; a 40-row submission <= 300 ms"
        " (the submission's target is checked against its p99).",
    ]
    return "\n".join(lines) + "\n"


def prepared_store(args: argparse.Namespace, scratch: Path) -> Store:
    """The store to measure: built in ``scratch``, or a copy of ``--store`` (built first
    when it does not exist yet), migrated to this build's head."""
    saved: Path | None = args.store
    if saved is None or not saved.exists():
        print(f"building {args.people:,} people and {args.courses:,} courses ...", flush=True)
        directory = saved.parent if saved is not None else scratch
        directory.mkdir(parents=True, exist_ok=True)
        store = build_store(directory, people=args.people, courses=args.courses, seed=args.seed)
        print(f"built in {store.import_s + store.courses_s:.0f} s", flush=True)
        if saved is None:
            return store
        store.path.rename(saved)
        saved.with_name(saved.name + ".json").write_text(
            json.dumps(
                {
                    "import_s": store.import_s,
                    "courses_s": store.courses_s,
                    "open_days": [day.isoformat() for day in store.open_days],
                }
            )
        )
    copy = scratch / "console.sqlite3"
    shutil.copyfile(saved, copy)
    built = json.loads(saved.with_name(saved.name + ".json").read_text())
    store = Store(
        path=copy,
        url=f"sqlite:///{copy}",
        import_s=built["import_s"],
        courses_s=built["courses_s"],
        open_days=[dt.date.fromisoformat(day) for day in built["open_days"]],
    )
    engine = build_engine(Settings(database_url=store.url, log_level="WARNING"))
    try:
        upgrade(engine)  # the reused store may predate this build's migrations
        with engine.begin() as connection:
            connection.exec_driver_sql("ANALYZE")
        with engine.connect() as connection:
            store.people = connection.scalar(select(func.count()).select_from(Person)) or 0
            store.courses = connection.scalar(select(func.count()).select_from(Asset)) or 0
    finally:
        engine.dispose()
    return store


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--courses", type=int, default=300_000)
    parser.add_argument("--samples", type=int, default=300, help="calls per page")
    parser.add_argument("--submissions", type=int, default=30)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--http", action="store_true", help="also through ridercrm serve")
    parser.add_argument("--write", action="store_true", help="write bench/README.md's section")
    parser.add_argument(
        "--store",
        type=Path,
        help="a store file to reuse: built there first if it does not exist; each run"
        " measures a copy of it, migrated to this build's schema, so it stays as built",
    )
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.console_bench")) is not None:
        return status
    with tempfile.TemporaryDirectory(prefix="console-bench-") as scratch:
        store = prepared_store(args, Path(scratch))
        print("measuring ...", flush=True)
        LOADS.append(os.getloadavg()[0])
        timings = measure_services(
            store, samples=args.samples, submissions=args.submissions, seed=args.seed
        )
        if args.http:
            timings += measure_http(
                store, samples=args.samples, submissions=args.submissions, seed=args.seed
            )
    LOADS.append(os.getloadavg()[0])
    text = report(store, timings, args)
    print(text)
    if args.write:
        write_section(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
