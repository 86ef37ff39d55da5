"""Concurrency on PostgreSQL with several workers: many clients on the same few people.

Run from the repository root:

    .venv/bin/python bench/concurrency_pg.py --short          # CI form
    .venv/bin/python bench/concurrency_pg.py --threads 32 --requests 150

A fresh PostgreSQL database (``ridercrm_conc_<pid>`` next to
$RIDERCRM_TEST_POSTGRES_URL, dropped at the end) and ``ridercrm serve --workers 3``.
Three contacts and three leads, two products and eight booking numbers (two of them
for the same lead, so two different bookings race to convert it). Then many client
threads at once, each sending a random mix, every request on the same few records:

- operation 1, one to three complete booking items in random order (so two requests
  lock the same courses and people in opposite orders), each re-sending one of the
  eight booking numbers with status booked or cancelled and the person's mobile and
  street from one of four variants;
- operation 1 status updates of the same courses by asset id (booked <-> cancelled);
- operation 2 modifies of one or two of the same people in random order, each writing
  first name, last name and e-mail from one of four variants (a lead is named by its
  lead id, also while another request converts it);
- operation 3 matches of the same people meanwhile.

Checks (exit status 1 on any violation):

- every request is answered 200 within the timeout, every item delivered with a
  receipt that fits (no 5xx, no refusal, no timeout); every answer's audit id names a
  stored audit record with status 200;
- one course per booking number, and every answer for it names that course;
  exactly one answer says it was booked, and its audit id is the first history row's;
- no lost or doubled status change: the status-history rows after the first are
  exactly the answered "Course status changed from X to Y." receipts (same from, to and
  audit id, each once), the history replays through ``rules.replay`` and ends at the
  stored status;
- no lost update of a person: the stored first name, last name and e-mail are all of
  one variant, and so are the mobile and street (a request writes its group whole or
  not at all; a group mixed from two requests is a lost update), and that variant was
  written by an answered request or is the initial one; every answer names the same
  contact for a lead, which is converted once, and only one answer says it converted it;
- nothing half-written and ``person_keys`` in step (``harness.check_invariants``);
- deadlocks: PostgreSQL's own count for the database (pg_stat_database) and the
  server's "transaction retried" log lines are reported; none may be left unresolved
  (an unresolved one would be a 5xx or an "unhandled error" in the log).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import make_url, text  # noqa: E402

from bench import harness  # noqa: E402
from bench.operations_bench import new_booking  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.db import build_engine  # noqa: E402

BOOK_PATH = "/crm/people/rider_courses"
MODIFY_PATH = "/crm/modify"
MATCH_PATH = "/crm/people/match"
REQUEST_TIMEOUT_S = 60.0
JOIN_TIMEOUT_S = 120.0
WORKERS = 3
STATUSES = ("booked", "cancelled")
NAMES = (
    ("Ann", "Lee", "ann.lee"),
    ("Anna", "Li", "anna.li"),
    ("Annie", "Lee", "annie.lee"),
    ("Ann", "Leigh", "ann.leigh"),
)
CONTACT_POINTS = (
    ("0412 345 678", "12 Main St"),
    ("0412 345 679", "12 Main Street"),
    ("0499 000 111", "7 High St"),
    ("0412 345 678", "7 High St"),
)
MATCH_RECEIPTS = {"Contact found.", "Lead found.", "Match not found."}


def names_of(person: int, variant: int) -> dict[str, str]:
    first, last, mail = NAMES[variant]
    return {
        "first_name": first,
        "last_name": f"{last}{'ABCDEF'[person]}",
        "email": f"{mail}.{person}@example.com",
    }


def points_of(variant: int) -> dict[str, str]:
    mobile, street = CONTACT_POINTS[variant]
    return {"mobile_phone": mobile, "street": street}


@dataclass
class World:
    people: list[str]  # index -> id (0-2 contacts, 3-5 leads)
    products: list[str]
    bookings: list[tuple[str, int, int]]  # (booking number, person index, product index)
    assets: dict[str, str] = field(default_factory=dict)  # booking number -> asset id
    lock: threading.Lock = field(default_factory=threading.Lock)


@dataclass
class Exchange:
    """One request and its answer."""

    path: str
    body: dict[str, Any]
    status: int = 0
    answer: dict[str, Any] | None = None
    error: str = ""
    seconds: float = 0.0


def setup(server: harness.Server) -> World:
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:

        def create(path: str, body: dict[str, Any]) -> str:
            response = http.post(path, json=body)
            if response.status_code != 201:
                raise harness.HarnessError(f"POST {path}: {response.status_code} {response.text}")
            return str(response.json()["id"])

        products = [
            create("/admin/products", {"name": f"Race {n}", "code": f"RACE-{n}", "price": "249.00"})
            for n in range(2)
        ]
        base = {k: v for k, v in new_booking("", "", "").items() if k in PERSON_CONSTANTS}
        people = [
            create(
                "/admin/contacts" if n < 3 else "/admin/leads",
                {**base, **names_of(n, 0), **points_of(0)},
            )
            for n in range(6)
        ]
    bookings = [
        ("RACE-0", 0, 0),
        ("RACE-1", 0, 1),
        ("RACE-2", 1, 0),
        ("RACE-3", 2, 1),
        ("RACE-4", 3, 0),
        ("RACE-5", 3, 1),  # a second booking for the same lead: conversions race
        ("RACE-6", 4, 0),
        ("RACE-7", 5, 1),
    ]
    return World(people=people, products=products, bookings=bookings)


# The person fields a booking item carries besides mobile and street: the people are
# created with the same values, so bookings change only the mobile and street.
PERSON_CONSTANTS = (
    "date_of_birth",
    "license_type",
    "drivers_license",
    "postcode",
    "city",
    "state",
    "country",
    "opt_in",
)


def next_request(rng: random.Random, world: World) -> tuple[str, dict[str, Any]]:
    roll = rng.random()
    with world.lock:
        known = dict(world.assets)
    if roll < 0.2 and known:
        chosen = rng.sample(sorted(known), min(len(known), rng.choice((1, 2))))
        items = [
            {"asset_id": known[booking], "course_status": rng.choice(STATUSES)}
            for booking in chosen
        ]
        return BOOK_PATH, {"people_product": items}
    if roll < 0.55:
        items = []
        for number, person, product in rng.sample(world.bookings, rng.choice((1, 2, 3))):
            item = new_booking(world.people[person], world.products[product], number)
            item.update(points_of(rng.randrange(len(CONTACT_POINTS))))
            item["course_status"] = rng.choice(STATUSES)
            items.append(item)
        return BOOK_PATH, {"people_product": items}
    if roll < 0.85:
        people = rng.sample(range(len(world.people)), rng.choice((1, 2)))
        items = [{"ID": world.people[p], **names_of(p, rng.randrange(len(NAMES)))} for p in people]
        return MODIFY_PATH, {"people_data": items}
    person = rng.randrange(len(world.people))
    data = {**names_of(person, rng.randrange(len(NAMES))), "date_of_birth": "1999-04-12"}
    data["postcode"] = "3064"
    return MATCH_PATH, {"person_data": data}


def client(
    index: int,
    seed: int,
    count: int,
    base: str,
    headers: dict[str, str],
    world: World,
    start: threading.Barrier,
    out: list[Exchange],
) -> None:
    rng = random.Random(seed * 1000 + index)
    with httpx.Client(base_url=base, headers=headers, timeout=REQUEST_TIMEOUT_S) as http:
        start.wait(timeout=60)
        for _ in range(count):
            path, body = next_request(rng, world)
            exchange = Exchange(path, body)
            began = time.perf_counter()
            try:
                response = http.post(path, content=json.dumps(body).encode())
            except httpx.HTTPError as exc:
                exchange.error = repr(exc)
            else:
                exchange.status = response.status_code
                try:
                    exchange.answer = response.json()
                except ValueError:
                    exchange.error = f"not JSON: {response.text[:200]}"
                audit = response.headers.get("x-audit-id")
                if exchange.answer is not None and audit != (
                    exchange.answer.get("audit_id") or exchange.answer.get("audit_ID")
                ):
                    exchange.error = f"X-Audit-Id {audit} differs from the body's audit id"
            exchange.seconds = time.perf_counter() - began
            out.append(exchange)
            if path == BOOK_PATH and exchange.answer and exchange.status == 200:
                with world.lock:
                    for sent, item in zip(
                        body["people_product"], exchange.answer.get("details", []), strict=False
                    ):
                        if item.get("delivery") == "true" and sent.get("booking_number"):
                            world.assets.setdefault(sent["booking_number"], item["asset_id"])


@dataclass
class Result:
    violations: list[str] = field(default_factory=list)
    requests: Counter[str] = field(default_factory=Counter)
    latencies: list[float] = field(default_factory=list)
    retried: int = 0
    deadlocks: int = 0
    converted_receipts: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    log_events: Counter[str] = field(default_factory=Counter)
    log_errors: list[str] = field(default_factory=list)

    def summary(self, args: argparse.Namespace) -> str:
        ordered = sorted(self.latencies)
        p50 = ordered[len(ordered) // 2] * 1000 if ordered else 0.0
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000 if ordered else 0.0
        worst = ordered[-1] * 1000 if ordered else 0.0
        lines = [
            f"concurrency on PostgreSQL, {WORKERS} workers, {args.threads} threads x"
            f" {args.requests} requests in {self.seconds:.1f} s: {dict(self.requests)}",
            f"  latency median {p50:.0f} ms, p99 {p99:.0f} ms, max {worst:.0f} ms",
            f"  deadlocks detected by PostgreSQL: {self.deadlocks}; transactions retried by the"
            f" server: {self.retried}",
            f"  'lead converted' receipts per lead: {dict(self.converted_receipts)}",
            f"  server log events: {dict(self.log_events)}",
        ]
        if self.violations:
            lines.append(f"  VIOLATIONS ({len(self.violations)}):")
            lines.extend(f"    - {v}" for v in self.violations[:60])
            lines.extend(f"  logged: {e}" for e in self.log_errors)
        else:
            lines.append("  no violations")
        return "\n".join(lines)


def check(world: World, exchanges: list[Exchange], url: str, result: Result) -> None:
    bad = result.violations
    snap = harness.snapshot(url)
    invariants = harness.check_invariants(snap, loaded_contacts=set(world.people[:3]))
    bad.extend(invariants.violations)
    if invariants.history_without_audit:
        bad.append(f"history rows without audit record: {sorted(invariants.history_without_audit)}")
    booked: dict[str, list[str]] = defaultdict(list)  # booking number -> audit ids "booked"
    asset_ids: dict[str, set[str]] = defaultdict(set)
    changes: dict[str, Counter[tuple[str, str, str]]] = defaultdict(Counter)  # by asset id
    updated: dict[str, set[str]] = defaultdict(set)  # asset id -> audit ids "Course updated."
    contacts: dict[str, set[str]] = defaultdict(set)  # lead id -> contact ids answered
    names_written: dict[str, set[int]] = defaultdict(set)  # person id (as sent) -> variants
    points_written: dict[str, set[int]] = defaultdict(set)
    for exchange in exchanges:
        result.requests[exchange.path] += 1
        result.latencies.append(exchange.seconds)
        answer = exchange.answer
        if exchange.error or exchange.status != 200 or answer is None:
            bad.append(
                f"{exchange.path}: HTTP {exchange.status} {exchange.error}"
                f" {str(answer)[:300] if answer else ''}"
            )
            continue
        audit_id = str(answer.get("audit_id") or answer.get("audit_ID"))
        if snap.audit.get(audit_id, (0,))[0] != 200:
            bad.append(f"audit id {audit_id} of an answer is stored as {snap.audit.get(audit_id)}")
        if exchange.path == MATCH_PATH:
            if answer.get("receipt") not in MATCH_RECEIPTS:
                bad.append(f"match answered {answer}")
            continue
        details = answer.get("details", [])
        key = "people_product" if exchange.path == BOOK_PATH else "people_data"
        sent_items = exchange.body[key]
        if len(details) != len(sent_items):
            bad.append(f"{exchange.path}: {len(details)} details for {len(sent_items)} items")
            continue
        for sent, entry in zip(sent_items, details, strict=True):
            if exchange.path == MODIFY_PATH:
                if entry.get("status") is not True or entry.get("fields") != 3:
                    bad.append(f"modify refused: {entry}")
                    continue
                variant = next(i for i in range(len(NAMES)) if NAMES[i][2] in sent["email"])
                names_written[sent["ID"]].add(variant)
                continue
            receipt = entry.get("receipt", "")
            if entry.get("delivery") != "true":
                bad.append(f"booking item refused: {receipt!r} for {sent.get('booking_number')}")
                continue
            asset_id = entry["asset_id"]
            if sent.get("booking_number"):
                asset_ids[sent["booking_number"]].add(asset_id)
                person = sent["person_id"]
                if person in world.people[3:]:
                    contacts[person].add(entry["contact_id"])
                variant = CONTACT_POINTS.index((sent["mobile_phone"], sent["street"]))
                points_written[person].add(variant)
            if receipt.startswith("Course booked"):
                booked[sent.get("booking_number", "")].append(audit_id)
                if "converted" in receipt:
                    result.converted_receipts[sent["person_id"]] += 1
            elif receipt == "Course updated.":
                updated[asset_id].add(audit_id)
            elif receipt.startswith("Course status changed from "):
                before, after = receipt.removeprefix("Course status changed from ").split(" to ")
                changes[asset_id][(before, after.rstrip("."), audit_id)] += 1
            else:
                bad.append(f"unexpected receipt {receipt!r}")
    # One course per booking number, named by every answer; booked exactly once.
    for number, ids in asset_ids.items():
        stored = snap.by_booking.get(number)
        if len(ids) != 1 or stored not in ids:
            bad.append(f"booking {number}: answers name courses {ids}, stored {stored}")
        if len(booked[number]) != 1:
            bad.append(f"booking {number}: {len(booked[number])} answers say it was booked")
    if len(snap.assets) != len(asset_ids):
        bad.append(f"{len(snap.assets)} courses stored for {len(asset_ids)} booking numbers")
    # Status history: exactly the answered changes, each once, in a valid order.
    for asset_id, asset in snap.assets.items():
        rows = snap.history.get(asset_id, [])
        number = asset["booking_number"]
        if rows and booked.get(number) and rows[0]["audit_id"] != booked[number][0]:
            bad.append(f"course {asset_id}: first history row is not the booking's audit id")
        stored = Counter((r["from_status"], r["to_status"], r["audit_id"]) for r in rows[1:])
        if stored != changes[asset_id]:
            bad.append(
                f"course {asset_id}: history {sorted(stored.items())} but answered changes"
                f" {sorted(changes[asset_id].items())}"
            )
        for row in rows:
            if row["audit_id"] in updated[asset_id] and row is not rows[0]:
                bad.append(
                    f"course {asset_id}: 'Course updated.' answer {row['audit_id']} has a history row"
                )
    for lead, count in result.converted_receipts.items():
        if count > 1:
            bad.append(f"lead {lead}: {count} answers say they converted it (it converts once)")
    # People: each group written whole by one answered request (or initial).
    leads = {world.people[n]: n for n in range(3, 6)}
    for index, person_id in enumerate(world.people):
        row = snap.people[person_id]
        if person_id in leads:
            answered = contacts.get(person_id, set())
            if len(answered) > 1 or (answered and row["converted_contact_id"] not in answered):
                bad.append(
                    f"lead {person_id}: answers name contacts {answered}, stored"
                    f" {row['converted_contact_id']}"
                )
        targets = [row]
        if row["converted_contact_id"]:
            targets.append(snap.people[row["converted_contact_id"]])
        for target in targets:
            names = [v for v in range(len(NAMES)) if _has(target, names_of(index, v))]
            if len(names) != 1:
                bad.append(
                    f"{target['id']}: first/last name and e-mail mixed from several requests: {_show(target)}"
                )
            elif names[0] != 0 and names[0] not in names_written[person_id]:
                bad.append(f"{target['id']}: names variant {names[0]} was never answered")
            points = [v for v in range(len(CONTACT_POINTS)) if _has(target, points_of(v))]
            if not points:
                bad.append(
                    f"{target['id']}: mobile and street mixed from several requests: {_show(target)}"
                )
            elif 0 not in points and not set(points) & points_written[person_id]:
                bad.append(f"{target['id']}: mobile/street variant {points} was never answered")


def _has(row: dict[str, Any], values: dict[str, str]) -> bool:
    return all(row[k] == v for k, v in values.items())


def _show(row: dict[str, Any]) -> str:
    fields = ("first_name", "last_name", "email", "mobile_phone", "street")
    return ", ".join(f"{k}={row[k]!r}" for k in fields)


def deadlock_count(url: str) -> int:
    engine = build_engine(Settings(database_url=url))
    try:
        with engine.connect() as connection:
            return int(
                connection.execute(
                    text("SELECT deadlocks FROM pg_stat_database WHERE datname = :name"),
                    {"name": make_url(url).database},
                ).scalar_one()
            )
    finally:
        engine.dispose()


def run(args: argparse.Namespace, directory: Path) -> Result:
    started = time.monotonic()
    result = Result()
    with harness.fresh_database("postgresql", "conc", directory, args.pg_url) as url:
        key = harness.admin_key(url)
        server = harness.Server(
            url, key, directory, workers=WORKERS, name="conc", env={"RIDERCRM_LOG_LEVEL": "WARNING"}
        )
        try:
            server.start()
            world = setup(server)
            deadlocks_before = deadlock_count(url)
            outputs: list[list[Exchange]] = [[] for _ in range(args.threads)]
            barrier = threading.Barrier(args.threads)
            headers = {**server.headers(), "Content-Type": "application/json"}
            threads = [
                threading.Thread(
                    target=client,
                    args=(
                        n,
                        args.seed,
                        args.requests,
                        server.base,
                        headers,
                        world,
                        barrier,
                        outputs[n],
                    ),
                    daemon=True,
                )
                for n in range(args.threads)
            ]
            for thread in threads:
                thread.start()
            deadline = time.monotonic() + args.time_limit
            for thread in threads:
                thread.join(timeout=max(1.0, deadline - time.monotonic()))
                if thread.is_alive():
                    result.violations.append("a client thread did not finish within the time limit")
                    break
            time.sleep(1.0)  # pg_stat_database is updated asynchronously
            result.deadlocks = deadlock_count(url) - deadlocks_before
            check(world, [e for out in outputs for e in out], url, result)
        finally:
            server.stop()
            result.log_events = server.log_events()
            result.log_errors = server.log_errors()
    result.retried = result.log_events.get("transaction retried", 0)
    for name, count in result.log_events.items():
        if name.startswith("error:") or name in ("unhandled error", "audit record not stored"):
            result.violations.append(f"server log: {count} x {name!r}")
    result.seconds = time.monotonic() - started
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--short", action="store_true", help="CI form: 16 threads x 25 requests")
    parser.add_argument("--threads", type=int, choices=range(2, 65), metavar="2..64")
    parser.add_argument("--requests", type=int, choices=range(1, 1001), metavar="1..1000")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--pg-url", help="PostgreSQL to create the database on (127.0.0.1)")
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds for the load")
    args = parser.parse_args(argv)
    args.threads = args.threads or 16
    args.requests = args.requests or (25 if args.short else 100)
    print(f"concurrency: --threads {args.threads} --requests {args.requests} --seed {args.seed}")
    with tempfile.TemporaryDirectory(prefix="ridercrm-conc-") as directory:
        result = run(args, Path(directory))
    print(result.summary(args))
    return 1 if result.violations else 0


if __name__ == "__main__":
    sys.exit(main())
