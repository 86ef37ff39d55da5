"""Bookings of one site and week against bookings of different weeks (bench/floors.py,
``--figure weeks``; issue 23, "No hot rows").

Per build: a fresh database, ``CONTACTS`` contacts imported (``ridercrm import
contacts``, untimed), a key of scope ``courses``, one ``ridercrm serve`` (``--workers``).
Then ``CLIENTS`` threads, each with its own keep-alive ``httpx`` client, send
single-item ``POST /crm/people/rider_courses`` bookings of new booking numbers for
``seconds``, each booking a contact of its own (the contacts are taken in turn, so no
two bookings in flight share a person's row and no contact gathers many courses):

- *same*: every course at one site (``somerton``) in one week (the week of
  ``SAME_WEEK``, its weekdays in turn);
- *different*: every booking in a week of its own (``DIFFERENT_WEEKS`` consecutive
  weeks taken in turn, so the bookings in flight are all in different weeks), same site.

Everything else in the bodies is alike. A booking counts when it is answered 200 with
``delivery`` "true"; any other answer is a failure (it must be 0). A round's
``seconds`` per side and build are run in slices of about ``SLICE_SECONDS``: same,
different, same, different... (the next round starts with different), each slice of a
side followed by the other builds' slice of it, so a neighbour's load that comes and
goes within seconds slows both sides of a ratio alike. A slice counts the bookings
started before its end, over the time to the last answer. The server's log is read for
``transaction retried`` (a PostgreSQL deadlock or serialisation failure, run again:
web/runtime.py) and the lines are counted per side. Printed per database and build: the
medians of the requests per second, the median of the per-round ratios same/different,
the failures and the retried transactions over all rounds.

The background fold of the deltas (``RIDERCRM_COUNTS_FOLD_SECONDS``) runs as it does in
production; the webhook deliverer and the duplicates recheck are off (no endpoint; they
are not the bookings' work).
"""

from __future__ import annotations

import csv
import datetime as dt
import itertools
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool
from testkit.serve import free_port, run_cli, running_server

from bench.booking_floor import _item, _person
from bench.harness import fresh_database, slug

CLIENTS = 8
CONTACTS = 3000
SITE = "somerton"
SAME_WEEK = dt.date(2027, 3, 1)  # a Monday
DIFFERENT_WEEKS = 400
RETRIED = "transaction retried"
SIDES = ("same", "different")
SLICE_SECONDS = 1.0


@dataclass
class Build:
    label: str
    env: dict[str, str]
    rates: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIDES})
    failed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIDES, 0))
    retried: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SIDES, 0))
    failures: list[str] = field(default_factory=list)

    def ratios(self) -> list[float]:
        return [s / d for s, d in zip(self.rates["same"], self.rates["different"], strict=True)]


class Server:
    """A build's server on its own fresh store, with its contacts and key."""

    def __init__(self, build: Build, url: str, directory: Path, workers: int) -> None:
        self.build, self.url, self.directory, self.workers = build, url, directory, workers
        self.env = {
            **build.env,
            "RIDERCRM_DATABASE_URL": url,
            "RIDERCRM_LOG_LEVEL": "WARNING",
            "RIDERCRM_RATE_LIMIT": "off",
            "RIDERCRM_WEBHOOK_DELIVERER": "false",
            "RIDERCRM_DUPLICATES_RECHECK": "false",
        }
        self.log = directory / f"weeks-{slug(build.label)}.log"
        self.key = ""
        self.admin_key = ""
        self.base = ""
        self.product = ""
        self.contacts: list[str] = []
        self.counter = itertools.count()
        self.serial = itertools.count()

    def prepare(self) -> None:
        run_cli(["db", "upgrade"], self.env, timeout=300)
        rows = self.directory / f"weeks-contacts-{slug(self.build.label)}.csv"
        columns = ["first_name", "last_name", "email", "mobile_phone", "postcode"]
        with rows.open("w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(columns)
            for n in range(CONTACTS):
                person = _person(2_000_000 + n)
                writer.writerow([person[c] for c in columns])
        run_cli(["import", "contacts", "--on-match", "add", str(rows)], self.env, timeout=3600)
        admin = run_cli(
            ["keys", "create", "--name", "weeks-setup", "--scope", "admin"], self.env, timeout=60
        )
        self.key = (
            run_cli(
                ["keys", "create", "--name", "weeks", "--scope", "courses"], self.env, timeout=60
            )
            .strip()
            .splitlines()[-1]
        )
        engine = create_engine(self.url, poolclass=NullPool)
        try:
            with engine.connect() as connection:
                self.contacts = list(
                    connection.scalars(
                        text("SELECT id FROM people WHERE kind = 'contact' ORDER BY id")
                    )
                )
        finally:
            engine.dispose()
        if len(self.contacts) < CONTACTS:
            raise SystemExit(f"{self.build.label}: {len(self.contacts)} contacts imported")
        self.admin_key = admin.strip().splitlines()[-1]

    @contextmanager
    def running(self) -> Iterator[None]:
        with running_server(self.env, free_port(), self.log, workers=self.workers) as (base, _):
            self.base = base
            with httpx.Client(
                base_url=base,
                headers={"Authorization": f"Bearer {self.admin_key}"},
                trust_env=False,
                timeout=60,
            ) as admin:
                made = admin.post(
                    "/admin/products", json={"name": "Weeks", "code": "WK", "price": "249.00"}
                )
                made.raise_for_status()
                self.product = made.json()["id"]
            yield

    def retried(self) -> int:
        return self.log.read_text(errors="replace").count(RETRIED)

    def body(self, side: str) -> dict[str, Any]:
        n = next(self.counter)
        if side == "same":
            day = SAME_WEEK + dt.timedelta(days=n % 5)
        else:
            day = SAME_WEEK + dt.timedelta(weeks=1 + n % DIFFERENT_WEEKS, days=n % 5)
        person = self.contacts[n % len(self.contacts)]
        number = f"WK-{slug(self.build.label)}-{next(self.serial)}"
        item = _item(person, self.product, number)
        item.update(
            asset_id="",
            course_datetime=f"{day.isoformat()} 08:30:00",
            course_date_end=f"{day.isoformat()} 16:30:00",
            course_location=SITE,
        )
        return {"people_product": [item]}


def _run(server: Server, side: str, seconds: float) -> tuple[int, int, float]:
    """The bookings the ``CLIENTS`` threads had answered in ``seconds`` (those started
    before then, each to its answer), the answers that were not a booking, and the
    seconds from the start to the last answer."""
    lock = threading.Lock()
    ready = threading.Barrier(CLIENTS + 1)
    go = threading.Barrier(CLIENTS + 1)
    done: list[int] = []
    failed: list[str] = []
    deadline: list[float] = [0.0]

    def client() -> None:
        booked = 0
        with httpx.Client(
            base_url=server.base,
            headers={"Authorization": f"Bearer {server.key}"},
            trust_env=False,
            timeout=60,
        ) as http:
            http.get("/healthz")
            ready.wait()
            go.wait()
            while time.perf_counter() < deadline[0]:
                with lock:
                    body = server.body(side)
                answer = http.post("/crm/people/rider_courses", json=body)
                ok = answer.status_code == 200 and all(
                    d.get("delivery") == "true" for d in answer.json().get("details", [])
                )
                if ok:
                    booked += 1
                else:
                    with lock:
                        failed.append(f"{answer.status_code} {answer.text[:300]}")
        with lock:
            done.append(booked)

    threads = [threading.Thread(target=client, daemon=True) for _ in range(CLIENTS)]
    for thread in threads:
        thread.start()
    ready.wait()
    began = time.perf_counter()
    deadline[0] = began + seconds
    go.wait()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - began
    server.build.failures.extend(failed[:3])
    return sum(done), len(failed), elapsed


def measure(
    kind: str,
    builds: list[Build],
    rounds: int,
    seconds: float,
    workers: int,
    pg_url: str | None,
) -> None:
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="ridercrm-weeks-floor-")))
        servers: list[Server] = []
        for index, build in enumerate(builds):
            url = stack.enter_context(fresh_database(kind, f"weeks_{index}", tmp, pg_url))
            server = Server(build, url, tmp, workers)
            server.prepare()
            stack.enter_context(server.running())
            servers.append(server)
        for server in servers:  # warm-up
            for side in SIDES:
                _run(server, side, 1.0)
        slices = max(1, round(seconds / SLICE_SECONDS))
        for round_ in range(rounds):
            order = SIDES if round_ % 2 == 0 else SIDES[::-1]
            booked = {(s.build.label, side): 0 for s in servers for side in SIDES}
            spent = dict.fromkeys(booked, 0.0)
            for _slice in range(slices):
                for side in order:
                    for server in servers:
                        before = server.retried()
                        n, failed, elapsed = _run(server, side, seconds / slices)
                        booked[(server.build.label, side)] += n
                        spent[(server.build.label, side)] += elapsed
                        server.build.failed[side] += failed
                        server.build.retried[side] += server.retried() - before
            for server in servers:
                for side in SIDES:
                    key = (server.build.label, side)
                    server.build.rates[side].append(booked[key] / spent[key])


def header(rounds: int, seconds: float, workers: int) -> None:
    print(
        f"| database | build | workers | same site-week req/s | different weeks req/s "
        f"| same / different | per-round same / different | failed answers (same, different) | retried transactions "
        f"(same, different) |  (medians of {rounds} interleaved rounds, {seconds:g} s each, "
        f"{CLIENTS} clients)"
    )
    print("|---|---|---|---|---|---|---|---|---|")


def report(kind: str, builds: list[Build], workers: int) -> None:
    for build in builds:
        print(
            f"| {kind} | {build.label} | {workers} | "
            f"{statistics.median(build.rates['same']):,.0f} | "
            f"{statistics.median(build.rates['different']):,.0f} | "
            f"{statistics.median(build.ratios()):.3f} | "
            f"{' '.join(f'{r:.2f}' for r in build.ratios())} | "
            f"{build.failed['same']}, {build.failed['different']} | "
            f"{build.retried['same']}, {build.retried['different']} |"
        )
        for failure in build.failures:
            print(f"  failed answer ({build.label}): {failure}")
