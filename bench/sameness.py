"""Operations 1 and 2 answer and store exactly what the previous build did (issue 23).

Run from the repository root (``make bench NAME=sameness ARGS="--previous DIR"``):

    .venv/bin/python bench/sameness.py --previous ../prev             # SQLite, then PostgreSQL
    .venv/bin/python bench/sameness.py --previous ../prev --db sqlite

``DIR`` is a worktree of the previous commit (``git worktree add DIR <commit>``); its
``src`` runs with this checkout's installed packages. Each build gets its own fresh
database and ``ridercrm serve``, and the same corpus of requests, sent in the same
order: setup (products, contacts, leads, sessions, a webhook endpoint for every event
type, so the outbox stores events), then operation 1 and 2 requests of every kind —
new bookings, leads converted, moves, cancels, results, refusals of every kind, the
same booking number twice in one request, a course full, bad items, bad bodies —
and a 200-item booking. Compared: every answer (status, body, the headers that are not
timing) and every stored row of every table.

What must differ is normalised, the same way on both sides: record ids, audit ids,
event ids and message keys become ``<id1>``, ``<id2>``, ... in the order they first
appear (the answers in order, then each table's rows); times within a week of the
run's start become their offset from it in whole hours (course dates, further off,
stay as they are); columns that time the work (``*_ms``) are dropped.

Prints one line per database: requests, rows per table, and every difference (none:
the builds are the same on this corpus). Exit status 1 on a difference.
"""

from __future__ import annotations

import argparse
import base64
import datetime as dt
import json
import os
import re
import sys
import tempfile
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import MetaData, create_engine, select

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testkit.factories import new_booking
from testkit.serve import free_port, run_cli, running_server

from bench.harness import fresh_database, previous_build_env

ID = re.compile(
    r"\b(?:msg_)?[0-9a-f]{32}\b|\bep_[0-9a-f]{16}\b|\b(?=[0-9A-Za-z]*[0-9])[0-9A-Za-z]{15}(?:[0-9A-Za-z]{3})?\b"
)
PACKED = "\x01z:"  # a long audit body as stored: zlib, then base64 (ridercrm.audit.models)
SECRETS = {"key_hash", "prefix", "password_hash", "secret"}  # columns and answer fields
ISO_TIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[+-]\d{2}:?\d{2}|Z)?"
)
KEPT_HEADERS = ("content-type", "x-failure-reason")
NEAR = dt.timedelta(days=7)


@dataclass
class Side:
    """One build's run: what it answered and stored, and its ids."""

    label: str
    env: dict[str, str]
    start: dt.datetime = field(default_factory=lambda: dt.datetime.now(dt.UTC))
    ids: dict[str, str] = field(default_factory=dict)  # name in the corpus -> id
    answers: list[Any] = field(default_factory=list)
    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)


# --------------------------------------------------------------------------- the corpus


def person(first: str, last: str, **more: Any) -> dict[str, Any]:
    body = {
        "first_name": first,
        "last_name": last,
        "date_of_birth": "1990-03-0" + str(1 + len(first) % 9),
        "email": f"{first.lower()}.{last.lower()}@example.com",
        "postcode": "3064",
        "mobile_phone": "0412 345 6" + str(10 + len(last)),
        "drivers_license": "L" + str(1000000 + len(first) * 7919 + len(last)),
        "license_type": "CYL",
        "street": "12 Main St",
        "city": "Craigieburn",
        "state": "VIC",
        "country": "Australia",
    }
    body.update(more)
    return body


def booking(person_id: str, product_id: str, number: str, **more: Any) -> dict[str, Any]:
    return new_booking(
        person_id,
        product_id,
        course_datetime="2027-02-05 08:30:00",
        course_date_end="2027-02-05 16:30:00",
        booking_number=number,
        **more,
    )


Step = tuple[str, str, Callable[[dict[str, str]], Any]]  # method, path, body from the ids
OP1 = "/crm/people/rider_courses"
OP2 = "/crm/modify"


def _op1(*items: Callable[[dict[str, str]], Any]) -> Step:
    return ("POST", OP1, lambda ids: {"people_product": [item(ids) for item in items]})


def _op2(*items: Callable[[dict[str, str]], Any]) -> Step:
    return ("POST", OP2, lambda ids: {"people_data": [item(ids) for item in items]})


def corpus() -> list[Step]:
    """The requests, in order; ``ids`` names the records made so far on that server."""
    steps: list[Step] = []
    steps += [
        (
            "POST",
            "/admin/products",
            lambda ids: {"name": "Pre-Licence", "code": "LAP", "price": "249.00"},
        ),
        (
            "POST",
            "/admin/products",
            lambda ids: {"name": "Licence Test", "code": "LT", "price": "199.00"},
        ),
        (
            "POST",
            "/admin/webhooks",
            lambda ids: {"url": "http://127.0.0.1:9/in", "event_types": EVENTS},
        ),
    ]
    for n in range(1, 7):
        steps.append(
            ("POST", "/admin/contacts", lambda ids, n=n: person(f"Cora{'x' * n}", "Contact"))
        )
        steps.append(("POST", "/admin/leads", lambda ids, n=n: person(f"Leo{'y' * n}", "Lead")))
    steps += [
        (
            "POST",
            "/admin/sessions",
            lambda ids: {
                "product_id": ids["P1"],
                "location": "somerton",
                "course_datetime": "2027-03-01 08:30:00",
                "capacity": 1,
            },
        ),
        (
            "POST",
            "/admin/sessions",
            lambda ids: {
                "product_id": ids["P1"],
                "location": "somerton",
                "course_datetime": "2027-03-08 08:30:00",
                "capacity": 5,
            },
        ),
    ]
    c, lead, p = "C{}".format, "L{}".format, "P{}".format

    def b(who: str, prod: str, number: str, **more: Any) -> Callable[[dict[str, str]], Any]:
        return lambda ids: {**booking(ids[who], ids[prod], number), **more}

    def raw(value: Any) -> Callable[[dict[str, str]], Any]:
        return lambda ids: value

    def by(key: str, **more: Any) -> Callable[[dict[str, str]], Any]:
        return lambda ids: {"asset_id": ids.get(key, "02i000000000000AAA"), **more}

    steps += [
        # New bookings: a contact, a lead converted, the same number twice, a full session.
        _op1(b(c(1), p(1), "HB-1"), b(lead(1), p(1), "HB-2"), b(c(2), p(2), "HB-3")),
        _op1(
            b(c(3), p(1), "HB-4", course_datetime="2027-03-01 08:30:00"),
            b(c(4), p(1), "HB-5", course_datetime="2027-03-01 08:30:00"),
            b(lead(2), p(1), "HB-6", course_datetime="2027-03-08 08:30:00"),
        ),
        _op1(b(c(5), p(1), "HB-7"), b(c(5), p(1), "HB-7", course_status="cancelled")),
        _op1(b(lead(3), p(2), "HB-8"), b(lead(3), p(2), "HB-8", course_location="broadmeadows")),
        # C4 waits for the full session; HB-4's cancel below offers them its seat.
        ("POST", "/crm/sessions/{S1}/waitlist", lambda ids: {"person_id": ids["C4"]}),
        # Refusals of every kind, and bad items.
        _op1(
            b(c(1), p(1), "HB-9", person_id="003000000000000AAA"),
            b(c(1), p(1), "HB-10", product_id="01t000000000000AAA"),
            raw({"asset_id": "02i000000000000AAA"}),
            raw({"asset_id": "not an id"}),
            b(c(1), p(1), "HB-11", date_of_birth=""),
            b(c(1), p(1), "HB-12", course_status="completed - pass"),
            b(c(1), p(1), "HB-13", course_status="teleported"),
            b(c(1), p(1), "HB-14", course_location="the moon"),
            raw("a string"),
            raw(42),
            raw(None),
            raw({}),
            raw({"person_id": "x", "product_id": 7}),
            b(c(6), p(2), "HB-1"),
            b(c(1), p(2), "HB-1"),
            lambda ids: {
                "person_id": ids["C1"],
                "product_id": ids["P1"],
                "booking_number": "HB-1",
                "asset_id": "",
            },
            lambda ids: {"person_id": ids["C2"], "product_id": ids["P1"]},
            lambda ids: {"person_id": ids["C5"], "product_id": ids["P1"]},
        ),
    ]
    steps += [
        # Changes by booking number, by the pair, by asset id (filled in after the above).
        _op1(
            raw({"booking_number": "HB-1", "course_location": "broadmeadows"}),
            raw({"booking_number": "HB-1", "course_datetime": "2027-02-06 08:30:00"}),
            lambda ids: {
                "person_id": ids["C2"],
                "product_id": ids["P2"],
                "course_status": "completed - pass",
                "course_feedback": "pass A",
            },
            lambda ids: {
                "person_id": ids["L1"],
                "product_id": ids["P1"],
                "course_status": "completed - fail",
            },
            lambda ids: {
                "person_id": ids["L1"],
                "product_id": ids["P1"],
                "course_status": "completed - fail",
                "course_feedback": "fail B",
            },
            by("A:HB-4", course_status="cancelled"),
            b(c(5), p(1), "HB-15", course_datetime="2027-03-01 08:30:00"),
            by("A:HB-5", booking_number="HB-99"),
            by("A:HB-6", booking_number="HB-1"),
            by("A:HB-6", person_id="003000000000000AAA"),
            lambda ids: {"asset_id": ids.get("A:HB-6", ""), "person_id": ids["C1"]},
            lambda ids: {"asset_id": ids.get("A:HB-6", ""), "product_id": ids["P2"]},
            raw(
                {
                    "booking_number": "HB-7",
                    "course_status": "booked",
                    "course_datetime": "2027-03-08 08:30:00",
                    "course_location": "somerton",
                }
            ),
            raw({"booking_number": "HB-3", "course_status": "booked"}),
            raw({"booking_number": "HB-8", "course_status": "cancelled"}),
            raw({"booking_number": "HB-8", "course_status": "booked"}),
            raw({"booking_number": "HB-2", "mobile_phone": "0499 000 111", "street": "1 New Rd"}),
        ),
        _op1(
            raw({"booking_number": "HB-6", "course_status": "cancelled"}),
            b(lead(2), p(1), "HB-16", course_datetime="2027-03-08 08:30:00"),
        ),
        _op1(),
        ("POST", OP1, lambda ids: {"people_product": "not a list"}),
        ("POST", OP1, lambda ids: {"nothing": []}),
        ("POST", OP1, lambda ids: [1, 2]),
        # Operation 2: contacts, leads, a converted lead's id, refusals.
        _op2(
            lambda ids: {"ID": ids["C1"], "email": "new.one@example.com", "city": "Melbourne"},
            lambda ids: {"ID": ids["L4"], "first_name": "Leonie", "mobile_phone": None},
            lambda ids: {"ID": ids["L1"], "street": "3 Lead St"},
            lambda ids: {"ID": ids["C3"], "first_name": None},
            lambda ids: {"ID": ids["C3"], "last_name": ""},
            lambda ids: {"ID": ids["C3"], "date_of_birth": "not a date"},
            lambda ids: {"ID": "003000000000000AAA", "city": "X"},
            lambda ids: {"ID": "nonsense", "city": "X"},
            raw({"city": "no id"}),
            raw("text"),
            lambda ids: {"ID": ids["C1"], "email": "new.one@example.com"},
            lambda ids: {"ID": ids["C4"], "postcode": "3000", "unknown": 1},
            lambda ids: {"ID": ids["C4"], "postcode": "30000"},
            lambda ids: {"ID": ids["C4"], "city": "Geelong"},
        ),
        _op2(),
        ("POST", OP2, lambda ids: {"people_data": {"ID": 1}}),
        ("POST", OP2, lambda ids: "junk"),
    ]
    # A 200-item booking: half of it leads converted, some refused, then all moved.
    big = [b(f"B{n}", p(1 + n % 2), f"BIG-{n}") for n in range(200)]
    big[17] = b("B17", p(1), "BIG-17", course_status="completed - pass")
    big[99] = b("B98", p(1), "BIG-98")
    steps.append(("PEOPLE", "", lambda ids: None))
    steps.append(_op1(*big))
    steps.append(
        _op1(
            *(
                raw({"booking_number": f"BIG-{n}", "course_datetime": "2027-04-01 08:30:00"})
                for n in range(0, 200, 3)
            )
        )
    )
    return steps


EVENTS = [
    "person.created",
    "person.updated",
    "lead.converted",
    "course.booked",
    "course.updated",
    "course.status_changed",
    "session.seat_offered",
]


# --------------------------------------------------------------------------- running


def run_corpus(side: Side, base: str, key: str) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    counters = {"P": 0, "C": 0, "L": 0, "S": 0}
    letters = {"/admin/products": "P", "/admin/contacts": "C", "/admin/leads": "L"}
    letters["/admin/sessions"] = "S"
    with httpx.Client(base_url=base, headers=headers, timeout=120, trust_env=False) as client:
        for method, path, body_of in corpus():
            if method == "PEOPLE":  # the people of the 200-item booking
                for n in range(200):
                    kind = "leads" if n % 2 else "contacts"
                    made = client.post(f"/admin/{kind}", json=person(f"Big{n}", f"Rider{n}"))
                    side.ids[f"B{n}"] = made.json()["id"]
                continue
            body = body_of(side.ids)
            path = path.format(**side.ids) if "{" in path else path
            response = client.request(method, path, json=body)
            kept = {name: response.headers.get(name) for name in KEPT_HEADERS}
            try:
                answer: Any = response.json()
            except ValueError:
                answer = response.text
            side.answers.append([path, response.status_code, kept, answer])
            if path in letters and response.status_code == 201:
                letter = letters[path]
                counters[letter] += 1
                side.ids[f"{letter}{counters[letter]}"] = answer["id"]
            if path == OP1 and isinstance(answer, dict):
                items = body["people_product"] if isinstance(body, dict) else []
                for item, detail in zip(items, answer.get("details") or [], strict=False):
                    if (
                        isinstance(item, dict)
                        and item.get("booking_number")
                        and detail.get("asset_id")
                    ):
                        side.ids.setdefault(f"A:{item['booking_number']}", detail["asset_id"])


def read_tables(url: str) -> dict[str, list[dict[str, Any]]]:
    engine = create_engine(url)
    metadata = MetaData()
    metadata.reflect(engine)
    tables: dict[str, list[dict[str, Any]]] = {}
    try:
        with engine.connect() as connection:
            for name, table in sorted(metadata.tables.items()):
                if name == "alembic_version":
                    continue
                rows = connection.execute(select(table)).mappings().all()
                tables[name] = [dict(row) for row in rows]
    finally:
        engine.dispose()
    return tables


@contextmanager
def serving(side: Side, url: str, directory: Path) -> Iterator[tuple[str, str]]:
    env = {
        **side.env,
        "RIDERCRM_DATABASE_URL": url,
        "RIDERCRM_LOG_LEVEL": "WARNING",
        "RIDERCRM_RATE_LIMIT": "off",
        # No background work: what a background round does, and when, is not the requests'.
        "RIDERCRM_WEBHOOK_DELIVERER": "false",
        "RIDERCRM_DUPLICATES_RECHECK": "false",
        # The webhook endpoint (never called: no deliverer) is on loopback.
        "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
    }
    run_cli(["db", "upgrade"], env, timeout=300)
    out = run_cli(["keys", "create", "--name", "sameness", "--scope", "admin"], env, timeout=60)
    key = out.strip().splitlines()[-1]
    with running_server(env, free_port(), directory / f"{side.label}.log") as (base, _pid):
        yield base, key


# --------------------------------------------------------------------------- normalising


def _key(found: str) -> str:
    """What names one id: a record id's first 15 characters (its case-safe form), or the
    whole of an event id or message key."""
    return found[:15] if len(found) in (15, 18) else found


class Normaliser:
    """Ids to ``<idN>`` in order of first appearance; near times to hour offsets."""

    def __init__(self, start: dt.datetime) -> None:
        self.start = start
        self.tokens: dict[str, str] = {}

    def _time(self, moment: dt.datetime) -> str | None:
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=dt.UTC)
        delta = moment - self.start
        if abs(delta) > NEAR:
            return None
        return f"<start{round(delta.total_seconds() / 3600):+d}h>"

    def _id(self, found: re.Match[str]) -> str:
        text = found.group(0)
        # A record id also appears as its first 15 characters (audit subjects).
        token = self.tokens.setdefault(_key(text), f"<id{len(self.tokens) + 1}>")
        return token if len(text) != 15 else token + ":15"

    def _text(self, text: str) -> str:
        def near(found: re.Match[str]) -> str:
            try:
                moment = dt.datetime.fromisoformat(found.group(0).replace("Z", "+00:00"))
            except ValueError:
                return found.group(0)
            return self._time(moment) or found.group(0)

        return ID.sub(self._id, ISO_TIME.sub(near, text))

    def value(self, value: Any) -> Any:
        if isinstance(value, dt.datetime):
            return self._time(value) or value.isoformat()
        if isinstance(value, dt.date):
            return value.isoformat()
        if isinstance(value, Decimal):
            return str(value)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        if isinstance(value, str) and value.startswith(PACKED):
            value = zlib.decompress(base64.b64decode(value[len(PACKED) :])).decode()
        if isinstance(value, str):
            return self._text(value)
        if isinstance(value, dict):
            return {self.value(k): self.value(v) for k, v in value.items() if k not in SECRETS}
        if isinstance(value, list | tuple):
            return [self.value(v) for v in value]
        return value

    def rows(self, rows: list[dict[str, Any]]) -> list[str]:
        """A table's rows, normalised, in an order that does not depend on random ids:
        by their text with the ids not seen yet blanked, then their ids named in it."""
        kept = [
            {k: v for k, v in row.items() if not k.endswith("_ms") and k not in SECRETS}
            for row in rows
        ]

        def blank(row: dict[str, Any]) -> str:
            plain = json.dumps(row, default=str, sort_keys=True)
            return ID.sub(lambda m: self.tokens.get(_key(m.group(0)), "<new>"), plain)

        kept.sort(key=blank)
        return [json.dumps(self.value(row), sort_keys=True, default=str) for row in kept]


def compare(this: Side, previous: Side, dump: Path | None = None) -> list[str]:
    left, right = Normaliser(this.start), Normaliser(previous.start)
    differences: list[str] = []
    dumped: dict[str, list[str]] = {this.label: [], previous.label: []}
    for n, (a, b) in enumerate(zip(this.answers, previous.answers, strict=True)):
        na, nb = left.value(a), right.value(b)
        dumped[this.label].append(json.dumps(na))
        dumped[previous.label].append(json.dumps(nb))
        if na != nb:
            differences.append(
                f"answer {n} ({a[0]}): this {json.dumps(na)[:600]} / previous {json.dumps(nb)[:600]}"
            )
    for name in sorted(set(this.tables) | set(previous.tables)):
        ra = left.rows(this.tables.get(name, []))
        rb = right.rows(previous.tables.get(name, []))
        dumped[this.label] += [f"{name} {row}" for row in ra]
        dumped[previous.label] += [f"{name} {row}" for row in rb]
        # As multisets: rows that tie once unseen ids are blanked keep the order their
        # random ids gave them, so the same rows can come in another order.
        if sorted(ra) != sorted(rb):
            only_a = [r for r in ra if r not in rb][:3]
            only_b = [r for r in rb if r not in ra][:3]
            differences.append(
                f"table {name}: {len(ra)} rows / {len(rb)}; this only {only_a}; previous only {only_b}"
            )
    if dump is not None:
        for label, lines in dumped.items():
            (dump / f"{label}.txt").write_text("\n".join(lines) + "\n")
    return differences


def run(kind: str, previous: Path, pg_url: str | None, dump: Path | None) -> int:
    sides = [
        Side("this", dict(os.environ)),
        Side("previous", previous_build_env(previous)),
    ]
    with tempfile.TemporaryDirectory(prefix="ridercrm-sameness-") as tmp:
        for side in sides:
            with fresh_database(kind, f"sameness_{side.label}", Path(tmp), pg_url) as url:
                with serving(side, url, Path(tmp)) as (base, key):
                    side.start = dt.datetime.now(dt.UTC)
                    run_corpus(side, base, key)
                side.tables = read_tables(url)
    if dump is not None:
        dump = dump / kind
        dump.mkdir(parents=True, exist_ok=True)
    differences = compare(*sides, dump=dump)
    rows = sum(len(rows) for rows in sides[0].tables.values())
    print(
        f"{kind}: {len(sides[0].answers)} requests, {rows} stored rows in "
        f"{len(sides[0].tables)} tables: {len(differences)} difference(s)"
    )
    for line in differences:
        print("  " + line)
    return 1 if differences else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--previous", type=Path, required=True, help="a worktree of the previous commit"
    )
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--pg-url")
    parser.add_argument("--dump", type=Path, help="write each side's normalised text here")
    args = parser.parse_args()
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    return max(run(kind, args.previous, args.pg_url, args.dump) for kind in kinds)


if __name__ == "__main__":
    sys.exit(main())
