"""Benchmark webhook events: delivery throughput, commit-to-delivery latency, booking cost.

Run from the repository root (PostgreSQL needs RIDERCRM_TEST_POSTGRES_URL; a fresh
database is made beside it and dropped afterwards):

    .venv/bin/python bench/events_bench.py --db sqlite
    .venv/bin/python bench/events_bench.py --db postgresql

a. Throughput: 2,000 events of 500 people (``--events``: N events of N/4 people) stored
   at once, then one in-process deliverer (default settings) sends them to a local
   receiver; events per second. A larger N is the backlog a receiver's outage leaves;
   ``--delivered M`` puts M earlier deliveries, already made, in the log before it.
b. Latency: `ridercrm serve` (one worker, its own deliverer, default settings) takes a
   steady 100 contact creations per second for 10 s; for each event, the time from the
   creation's 201 answer (the commit is just before it) to its arrival at the receiver.
c. Cost: 200-item new-booking requests (100 lead conversions) through the real app
   (TestClient) with one endpoint registered, outbox on and off (the outbox writer
   replaced by a no-op) alternating, 7 pairs (``--pairs``); medians of wall-clock and of
   this process's CPU time (the app runs in it) and their ratios, and the median of the
   pairs' own ratios (each pair side by side, so less moved by the load's drift), and
   the bytes the process wrote per request (for SQLite, its write-ahead log: unlike
   the times, hardly moved by other work on the machine).

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=events_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import text

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fastapi.testclient import TestClient  # noqa: E402
from testkit.factories import new_booking, person_body  # noqa: E402
from testkit.receiver import Receiver, receiving  # noqa: E402
from testkit.serve import free_port, run_cli, running_server  # noqa: E402

from bench import harness  # noqa: E402
from bench.report import code_version, cpu_model  # noqa: E402
from ridercrm.app import create_app  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.db import build_engine, session_factory, session_scope  # noqa: E402
from ridercrm.events import service as events  # noqa: E402
from ridercrm.events.delivery import Deliverer  # noqa: E402
from ridercrm.keys.service import create_key  # noqa: E402
from ridercrm.migrate import upgrade  # noqa: E402

THROUGHPUT_EVENTS = 2000
EVENTS_PER_PERSON = 4
RATE = 100
SECONDS = 10
PAIRS = 7
ITEMS = 200
PARTS = ("throughput", "latency", "cost")


def fresh_database(kind: str, workdir: Path) -> tuple[str, Any]:
    """A migrated empty database; its URL and what drops it."""
    if kind == "sqlite":
        url = f"sqlite:///{workdir / 'bench.db'}"
        upgrade(build_engine(Settings(database_url=url)))
        return url, lambda: None
    from testkit.databases import create_run_database, drop_run_database, postgres_url

    base = postgres_url()
    if base is None:
        raise SystemExit("PostgreSQL needs RIDERCRM_TEST_POSTGRES_URL")
    url = create_run_database(base, "events_bench")
    return url, lambda: drop_run_database(base, url)


def settings_for(url: str) -> Settings:
    return Settings(database_url=url, webhook_allowed_hosts="127.0.0.1", log_level="WARNING")


def register(sessions: Any, url: str, *types: str) -> None:
    from ridercrm.events import manage
    from ridercrm.netsafety import AllowList

    with session_scope(sessions, write=True) as session:
        manage.create_endpoint(
            session,
            url=url,
            event_types=types,
            description="bench",
            allow=AllowList.parse("127.0.0.1"),
        )


def record_updates(sessions: Any, count: int, people: int, first: int = 0) -> None:
    """``count`` person.updated events of ``people`` people, from person ``first`` on."""
    with session_scope(sessions, write=True) as session:
        for n in range(count):
            subject = first + n % max(1, people)
            events.record(
                session,
                event_type="person.updated",
                subject=events.subject_of(str(subject)),
                data={"person_id": str(subject), "kind": "contact", "fields": ["city"]},
            )


def throughput(
    url: str, receiver: Receiver, count: int = THROUGHPUT_EVENTS, delivered: int = 0
) -> float:
    settings = settings_for(url)
    sessions = session_factory(build_engine(settings))
    register(sessions, receiver.url, "person.updated")
    if delivered:  # the delivery log of earlier days, before the backlog
        record_updates(sessions, delivered, delivered // EVENTS_PER_PERSON, first=count)
        with session_scope(sessions, write=True) as session:
            session.execute(
                text("UPDATE webhook_deliveries SET status = 'delivered', attempts = 1")
            )
    record_updates(sessions, count, count // EVENTS_PER_PERSON)
    if settings.database_url.startswith("postgresql"):
        with session_scope(sessions, write=True) as session:
            session.execute(text("ANALYZE"))  # as autovacuum would after such a change
    deliverer = Deliverer(settings)
    stop = threading.Event()
    thread = threading.Thread(target=deliverer.run, args=(stop,))
    started = time.perf_counter()
    thread.start()
    receiver.wait_for(count, timeout=3600)
    elapsed = time.perf_counter() - started
    stop.set()
    thread.join()
    deliverer.close()
    return count / elapsed


def latency(url: str, receiver: Receiver, workdir: Path) -> tuple[float, float, float, float, int]:
    """Commit-to-delivery, measured from the 201 answer (the commit is just before it; a
    negative time: the event arrived before the answer) and from the request's start."""
    env = {
        **os.environ,
        "RIDERCRM_DATABASE_URL": url,
        "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        "RIDERCRM_LOG_LEVEL": "WARNING",
    }
    key = run_cli(["keys", "create", "--name", "bench", "--scope", "admin"], env, timeout=120)
    key = key.strip().splitlines()[-1]
    run_cli(["webhooks", "add", receiver.url, "--event", "person.created"], env, timeout=120)
    answered: dict[str, float] = {}
    issued: dict[str, float] = {}
    port = free_port()
    with running_server(env, port, workdir / "serve.log") as (base, _pid):
        headers = {"Authorization": f"Bearer {key}"}
        writers = 4
        interval = writers / RATE
        start = time.perf_counter() + 0.5

        def write(offset: int) -> None:
            with httpx.Client(base_url=base, headers=headers, timeout=30, trust_env=False) as http:
                for n in range(RATE * SECONDS // writers):
                    due = start + offset * (1 / RATE) + n * interval
                    pause = due - time.perf_counter()
                    if pause > 0:
                        time.sleep(pause)
                    sent = time.perf_counter()
                    response = http.post(
                        "/admin/contacts", json=person_body(first_name=f"L{offset}x{n}")
                    )
                    if response.status_code != 201:
                        raise SystemExit(f"create failed: {response.status_code} {response.text}")
                    answered[response.json()["id"]] = time.perf_counter()
                    issued[response.json()["id"]] = sent

        threads = [threading.Thread(target=write, args=(w,)) for w in range(writers)]
        arrivals: dict[str, float] = {}
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        receiver.wait_for(len(answered), timeout=120)
    for request, arrived in zip(receiver.requests, receiver.arrivals, strict=True):
        arrivals.setdefault(request.payload["data"]["person"]["id"], arrived)
    after_answer = sorted((arrivals[p] - t) * 1000 for p, t in answered.items())
    after_request = sorted((arrivals[p] - t) * 1000 for p, t in issued.items())
    return (
        statistics.median(after_answer),
        after_answer[int(len(after_answer) * 0.99) - 1],
        statistics.median(after_request),
        after_request[int(len(after_request) * 0.99) - 1],
        len(after_answer),
    )


@dataclass
class Cost:
    """Per request, in ms: wall-clock and CPU time, outbox on and off, pair by pair."""

    wall: dict[bool, list[float]]
    cpu: dict[bool, list[float]]
    written: dict[bool, list[int]]

    def summary(self) -> str:
        def ratios(series: dict[bool, list[float]]) -> str:
            on, off = statistics.median(series[True]), statistics.median(series[False])
            pairs = statistics.median(
                a / b for a, b in zip(series[True], series[False], strict=True)
            )
            return f"on {on:.0f} ms, off {off:.0f} ms, on/off {on / off:.3f} (pairs {pairs:.3f})"

        on, off = (statistics.median(self.written[state]) / 1e6 for state in (True, False))
        return (
            f"wall {ratios(self.wall)}; cpu {ratios(self.cpu)}; written on {on:.2f} MB,"
            f" off {off:.2f} MB; {len(self.wall[True])} pairs"
        )


def written_bytes() -> int:
    """Bytes this process has written so far (Linux /proc/self/io wchar; 0 elsewhere):
    for SQLite, the write-ahead log's frames, which the rows' scattered pages make."""
    try:
        with open("/proc/self/io") as io:
            for line in io:
                if line.startswith("wchar:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def booking_cost(url: str, receiver: Receiver, pairs: int = PAIRS) -> Cost:
    settings = settings_for(url)
    app = create_app(settings)
    sessions = session_factory(build_engine(settings))
    register(
        sessions,
        receiver.url,
        "person.created",
        "person.updated",
        "lead.converted",
        "course.booked",
    )
    with session_scope(sessions, write=True) as session:
        _key, plaintext = create_key(session, name="bench", scopes=["admin"])
    headers = {"Authorization": f"Bearer {plaintext}"}
    record = events.record
    cost = Cost(
        wall={True: [], False: []}, cpu={True: [], False: []}, written={True: [], False: []}
    )
    with TestClient(app) as client:
        product = client.post(
            "/admin/products",
            json={"name": "Bench", "code": "B1", "price": "249.00"},
            headers=headers,
        ).json()["id"]
        contacts = [
            client.post(
                "/admin/contacts", json=person_body(first_name=f"C{n}"), headers=headers
            ).json()["id"]
            for n in range(ITEMS // 2)
        ]
        made = 0
        # Pair -1 is a warm-up, not timed: the first booking of the contacts also sets
        # their opt-in (100 more updates and events), which would count against one side.
        for pair in range(-1, pairs):
            for on in (pair % 2 == 0, pair % 2 == 1) if pair >= 0 else (True,):
                leads = [
                    client.post(
                        "/admin/leads", json=person_body(first_name=f"L{made}-{n}"), headers=headers
                    ).json()["id"]
                    for n in range(ITEMS // 2)
                ]
                items = []
                for n in range(ITEMS):
                    person = leads[n // 2] if n % 2 == 0 else contacts[n // 2]
                    items.append(new_booking(person, product, booking_number=f"EB-{made:07d}"))
                    made += 1
                events.record = record if on else _no_event  # type: ignore[assignment]
                try:
                    started, cpu, wrote = time.perf_counter(), time.process_time(), written_bytes()
                    response = client.post(
                        "/crm/people/rider_courses", json={"people_product": items}, headers=headers
                    )
                    if pair >= 0:
                        cost.wall[on].append((time.perf_counter() - started) * 1000)
                        cost.cpu[on].append((time.process_time() - cpu) * 1000)
                        cost.written[on].append(written_bytes() - wrote)
                finally:
                    events.record = record  # type: ignore[assignment]
                details = response.json()["details"]
                if not all(d["delivery"] == "true" for d in details):
                    raise SystemExit("a booking failed")
    app.state.context.engine.dispose()
    return cost


def _no_event(session: Any, **_: Any) -> None:
    return None


def load_average() -> float:
    return os.getloadavg()[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=["sqlite", "postgresql"], default="sqlite")
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS), help="What to measure."
    )
    parser.add_argument("--pairs", type=int, default=PAIRS, help="Cost: on/off pairs.")
    parser.add_argument(
        "--events", type=int, default=THROUGHPUT_EVENTS, help="Throughput: events stored."
    )
    parser.add_argument(
        "--delivered",
        type=int,
        default=0,
        help="Throughput: deliveries already made, in the log before the backlog.",
    )
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.events_bench")) is not None:
        return status
    print(f"code {code_version()}; cpu {cpu_model()} x{os.cpu_count()}; load {load_average():.1f}")
    results = {}
    for part in args.parts:
        with tempfile.TemporaryDirectory(prefix="events-bench-") as tmp, receiving() as receiver:
            url, drop = fresh_database(args.db, Path(tmp))
            try:
                if part == "throughput":
                    rate = throughput(url, receiver, args.events, args.delivered)
                    results[part] = (
                        f"{rate:.0f} events/s ({args.events} events,"
                        f" {args.delivered} delivered before)"
                    )
                elif part == "latency":
                    median, p99, median_req, p99_req, count = latency(url, receiver, Path(tmp))
                    results[part] = (
                        f"from the answer: median {median:.0f} ms, p99 {p99:.0f} ms; from the"
                        f" request: median {median_req:.0f} ms, p99 {p99_req:.0f} ms"
                        f" ({count} events at {RATE}/s)"
                    )
                else:
                    results[part] = booking_cost(url, receiver, args.pairs).summary()
            finally:
                drop()
        print(f"{args.db} {part}: {results[part]} (load {load_average():.1f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
