"""Crash safety: SIGKILL the running server mid-load, restart it, check every answer.

Run from the repository root:

    .venv/bin/python bench/crash_safety.py --db sqlite --short        # CI: 2 kills
    .venv/bin/python bench/crash_safety.py --db postgresql --short
    .venv/bin/python bench/crash_safety.py --db postgresql --kills 6  # longer

One run: a fresh database (a SQLite file in a temporary directory, or a PostgreSQL
database ``ridercrm_crash_<pid>`` next to $RIDERCRM_TEST_POSTGRES_URL, dropped at the
end); ``ridercrm serve`` (1 worker on SQLite, 2 on PostgreSQL) in its own process group;
products, reference contacts and, per client thread, its own contacts and leads,
created through the admin API. Then, per round: several client threads send a mix of
operation-1 new bookings (unique booking numbers; some for leads, which converts
them; one to three items a request), operation-1 status updates (along the status
machine), operation-2 modifies and operation-3 matches; at a random moment the whole
process group gets SIGKILL; the server is started again on the same database and
checked:

- every answered request is fully present: each thread owns its people and courses
  (nobody else writes them), keeps the state its answered requests imply (person
  fields, lead conversions, courses with person, product, status, feedback and the
  whole status history with the answering audit id), and the stored state must equal
  it exactly;
- a request that got no answer (at most one per thread, the one in flight at the
  kill) happened whole or not at all: the stored state must equal the state without
  it or the state with all of it (its ids and audit id taken from what is stored, the
  same audit id for all of its status changes); an audit record of it that says 200
  while its work is missing is a violation;
- every answer's audit id (header and body, equal) names a stored audit record with
  status 200 and the right operation;
- nothing is half-written anywhere (``harness.check_invariants``): no course without
  its history or history without its course, every history replays through
  ``rules.replay`` and ends at the course's status, every contact made by a
  conversion is linked from exactly one lead and has a course, ``person_keys`` equals
  ``stored_keys(identity_of(person))`` for every person;
- work and audit record are one fact (the record is committed in the work's
  transaction): every status-history row names a stored audit record, and an
  unanswered request whose work is stored has its audit record stored too;
- the restarted server answers the admin reads of a sample of the round's courses and
  audit records with what is stored.

Exit status 1 on any violation. Only 127.0.0.1 is used; every server runs in
try/finally and is killed or stopped by process group; every wait is bounded.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=crash_safety ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import delete, func, insert, select, update  # noqa: E402

from bench import harness  # noqa: E402
from bench.operations_bench import new_booking  # noqa: E402
from ridercrm.audit.models import AuditRecord  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.courses import rules  # noqa: E402
from ridercrm.courses.models import Asset, AssetStatusChange  # noqa: E402
from ridercrm.db import build_engine, utcnow  # noqa: E402
from ridercrm.fields import COURSE_FEEDBACK, LEAD_SOURCES  # noqa: E402
from ridercrm.ids import RecordKind, new_id  # noqa: E402
from ridercrm.people.models import (  # noqa: E402
    CONTACT,
    LEAD,
    Person,
    PersonKey,
)

BOOK_PATH = "/crm/people/rider_courses"
MODIFY_PATH = "/crm/modify"
MATCH_PATH = "/crm/people/match"
OPERATIONS = {
    BOOK_PATH: "crm.rider_courses",
    MODIFY_PATH: "crm.modify",
    MATCH_PATH: "crm.people_match",
}
JSON_HEADERS = {"Content-Type": "application/json"}
REQUEST_TIMEOUT_S = 30.0
JOIN_TIMEOUT_S = 60.0
PRODUCTS = 3
REFERENCES = 4
CITIES = ("Craigieburn", "Somerton", "Kilsyth", "Tullamarine", "Epping", "Broadmeadows")
STATES = ("VIC", "NSW", "QLD")
FIRST = ("Ann", "Bob", "Cate", "Dev", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kim", "Lou")
LAST = ("Nguyen", "Smith", "Patel", "Rossi", "Khan", "Olsen", "Lee", "Moore", "Bauer")


class Impossible(Exception):
    """The stored state cannot be the result of the unanswered request."""


# --------------------------------------------------------------------------- the model


@dataclass
class PersonState:
    kind: str
    fields: dict[str, Any]
    converted: str | None = None


@dataclass
class CourseState:
    asset_id: str
    person_id: str
    product_id: str
    status: str
    feedback: str | None
    instructor: str | None
    history: list[tuple[str | None, str, str]]


@dataclass
class Model:
    """What one thread's answered requests imply about its people and courses."""

    persons: dict[str, PersonState] = field(default_factory=dict)
    courses: dict[str, CourseState] = field(default_factory=dict)  # by booking number

    def resolve(self, person_id: str) -> str:
        person = self.persons[person_id]
        return person.converted if person.kind == LEAD and person.converted else person_id


@dataclass
class Item:
    op: str  # book | status | modify | match
    person: str = ""
    product: str = ""
    booking: str = ""
    status: str = ""
    feedback: str | None = None
    instructor: str | None = None
    changes: dict[str, Any] = field(default_factory=dict)


@dataclass
class Sent:
    path: str
    items: list[Item]
    text: str

    @property
    def bookings(self) -> set[str]:
        return {item.booking for item in self.items if item.booking}


class Answered:
    """Ids of an answered request, from its answer."""

    def __init__(self, body: dict[str, Any]) -> None:
        self.body = body
        self.audit_id = str(body.get("audit_id") or body.get("audit_ID"))

    def audit(self, _asset_id: str, _row: int) -> str:
        return self.audit_id

    def asset(self, index: int, _booking: str) -> str:
        return str(self.body["details"][index]["asset_id"])

    def contact(self, index: int, _lead: str) -> str:
        return str(self.body["details"][index]["contact_id"])


class Observed:
    """Ids of an unanswered request, taken from what is stored (if it happened)."""

    def __init__(self, snap: harness.Snapshot) -> None:
        self.snap = snap
        self.audit_id: str | None = None

    def audit(self, asset_id: str, row: int) -> str:
        rows = self.snap.history.get(asset_id, [])
        if row >= len(rows):
            raise Impossible(f"course {asset_id} has no status-history row {row}")
        found = rows[row]["audit_id"]
        if self.audit_id is None:
            self.audit_id = found
        elif found != self.audit_id:
            raise Impossible("its status changes carry different audit ids")
        return found

    def asset(self, _index: int, booking: str) -> str:
        asset_id = self.snap.by_booking.get(booking)
        if asset_id is None:
            raise Impossible(f"booking {booking} is not stored")
        return asset_id

    def contact(self, _index: int, lead: str) -> str:
        person = self.snap.people.get(lead)
        if person is None or not person["converted_contact_id"]:
            raise Impossible(f"lead {lead} is not converted")
        return str(person["converted_contact_id"])


def apply(model: Model, sent: Sent, ids: Answered | Observed) -> None:
    """Change ``model`` as the request does when it is carried out (items in order)."""
    for index, item in enumerate(sent.items):
        if item.op == "book":
            person = model.persons[item.person]
            contact_id = item.person
            if person.kind == LEAD:
                if person.converted:
                    contact_id = person.converted
                else:
                    contact_id = ids.contact(index, item.person)
                    model.persons[contact_id] = PersonState(CONTACT, dict(person.fields))
                    person.converted = contact_id
            model.persons[contact_id].fields.update(item.changes)
            asset_id = ids.asset(index, item.booking)
            model.courses[item.booking] = CourseState(
                asset_id=asset_id,
                person_id=contact_id,
                product_id=item.product,
                status=item.status,
                feedback=item.feedback,
                instructor=item.instructor,
                history=[(None, item.status, ids.audit(asset_id, 0))],
            )
        elif item.op == "status":
            course = model.courses[item.booking]
            if item.status != course.status:
                row = len(course.history)
                course.history.append((course.status, item.status, ids.audit(course.asset_id, row)))
            course.status, course.feedback = item.status, item.feedback
            course.instructor = item.instructor
        elif item.op == "modify":
            model.persons[model.resolve(item.person)].fields.update(item.changes)


def differences(model: Model, snap: harness.Snapshot, bookings: set[str]) -> list[str]:
    """How the stored state differs from the model (its people and courses only)."""
    found = []
    for person_id, person in model.persons.items():
        row = snap.people.get(person_id)
        if row is None:
            found.append(f"person {person_id} is not stored")
            continue
        if row["kind"] != person.kind:
            found.append(f"person {person_id} is a {row['kind']}, expected a {person.kind}")
        for name, value in person.fields.items():
            if row[name] != value:
                found.append(f"person {person_id}: {name} is {row[name]!r}, expected {value!r}")
        if person.kind == LEAD and row["converted_contact_id"] != person.converted:
            found.append(
                f"lead {person_id}: converted_contact_id is {row['converted_contact_id']!r},"
                f" expected {person.converted!r}"
            )
    for booking in sorted(set(model.courses) | bookings):
        stored_id = snap.by_booking.get(booking)
        course = model.courses.get(booking)
        if course is None:
            if stored_id is not None:
                found.append(f"booking {booking} is stored as {stored_id} but was not expected")
            continue
        if stored_id is None:
            found.append(f"booking {booking} ({course.asset_id}) is not stored")
            continue
        row = snap.assets[stored_id]
        expected = {
            "id": course.asset_id,
            "person_id": course.person_id,
            "product_id": course.product_id,
            "course_status": course.status,
            "course_feedback": course.feedback,
            "rider_instructor_1": course.instructor,
        }
        for name, value in expected.items():
            if row[name] != value:
                found.append(f"booking {booking}: {name} is {row[name]!r}, expected {value!r}")
        history = [
            (r["from_status"], r["to_status"], r["audit_id"])
            for r in snap.history.get(stored_id, [])
        ]
        if history != course.history:
            found.append(f"booking {booking}: history {history}, expected {course.history}")
    return found


# --------------------------------------------------------------------------- requests


def person_body(rng: random.Random, label: str) -> dict[str, Any]:
    """A person as the admin API takes it, every value already in its stored form."""
    return {
        "first_name": rng.choice(FIRST),
        "last_name": f"{rng.choice(LAST)}{label}",
        "date_of_birth": f"{rng.randint(1960, 2006)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}",
        "email": f"{label.lower()}@example.com",
        "postcode": str(rng.randint(3000, 3999)),
        "mobile_phone": f"04{rng.randrange(10**8):08d}",
        "drivers_license": f"L{rng.randrange(10**7):07d}",
        "license_type": rng.choice(("CYL", "CYP")),
        "street": f"{rng.randint(1, 200)} Main St",
        "city": rng.choice(CITIES),
        "state": rng.choice(STATES),
        "country": "Australia",
        "lead_source": rng.choice(LEAD_SOURCES),
        "opt_in": rng.random() < 0.5,
    }


MODIFIABLE = (
    "first_name",
    "last_name",
    "date_of_birth",
    "email",
    "postcode",
    "mobile_phone",
    "drivers_license",
    "street",
    "city",
    "state",
    "country",
    "lead_source",
)


def modify_value(rng: random.Random, name: str, tag: str) -> tuple[Any, Any]:
    """(value to send, value stored) for one field of operation 2."""
    if name == "first_name":
        value = rng.choice(FIRST) + rng.choice(("", "na", "ie", "o"))
    elif name == "last_name":
        value = f"{rng.choice(LAST)}{tag}"
    elif name == "date_of_birth":
        value = f"{rng.randint(1960, 2006)}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
    elif name == "email":
        if rng.random() < 0.15:
            return None, None  # null clears an optional field
        value = f"{tag.lower()}@example.org"
    elif name == "postcode":
        number = rng.randint(800, 3999)
        if rng.random() < 0.3:
            return number, f"{number:04d}"  # an integer is zero-padded
        value = f"{number:04d}"
    elif name in ("mobile_phone", "drivers_license"):
        value = f"04{rng.randrange(10**8):08d}" if name == "mobile_phone" else f"D{tag}"
    elif name == "street":
        if rng.random() < 0.15:
            return "", None  # "" clears too
        value = f"{rng.randint(1, 300)} {tag} Rd"
    elif name == "city":
        value = rng.choice(CITIES)
    elif name == "state":
        value = rng.choice(STATES)
    elif name == "country":
        value = rng.choice(("Australia", "New Zealand"))
    else:
        value = rng.choice(LEAD_SOURCES)
    return value, value


STATUS_FEEDBACK = {
    rules.BOOKED: [""],
    rules.CANCELLED: [""],
    rules.PASSED: [f for f in COURSE_FEEDBACK if f.startswith("pass")],
    rules.FAILED: [f for f in COURSE_FEEDBACK if f.startswith("fail")],
}


@dataclass
class Client:
    """One client thread's people, courses, answered audit ids and counters."""

    index: int
    run_tag: str
    rng: random.Random
    model: Model = field(default_factory=Model)
    contacts: list[str] = field(default_factory=list)
    leads: list[str] = field(default_factory=list)  # not yet booked
    seq: int = 0
    answered: list[tuple[str, str]] = field(default_factory=list)  # (audit id, operation)
    counts: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    unanswered: Sent | None = None

    def tag(self) -> str:
        self.seq += 1
        return f"{self.run_tag}T{self.index}S{self.seq}"

    # -- building requests -------------------------------------------------------

    def next_request(self, products: list[str], references: list[dict[str, Any]]) -> Sent:
        roll = self.rng.random()
        if roll < 0.35 or not self.model.courses:
            return self.booking(products)
        if roll < 0.6:
            return self.status_update()
        if roll < 0.9:
            return self.modify()
        return self.match(references)

    def booking(self, products: list[str]) -> Sent:
        items, body_items, used = [], [], set()
        for _ in range(self.rng.choice((1, 1, 1, 2, 3))):
            if self.leads and self.rng.random() < 0.4:
                person = self.leads.pop()
            else:
                choices = [c for c in self.contacts if c not in used]
                if not choices:
                    break
                person = self.rng.choice(choices)
            used.add(person)
            tag = self.tag()
            product = self.rng.choice(products)
            status = self.rng.choices(
                (rules.BOOKED, rules.CANCELLED, rules.PASSED), weights=(8, 1, 1)
            )[0]
            feedback = self.rng.choice(STATUS_FEEDBACK[status]) or None
            changes = {
                "mobile_phone": f"04{self.rng.randrange(10**8):08d}",
                "street": f"{self.rng.randint(1, 300)} {tag} St",
                "city": self.rng.choice(CITIES),
            }
            body = new_booking(person, product, tag)
            body.update(changes)
            body.update(
                course_status=status,
                course_feedback=feedback or "",
                rider_instructor_1=f"Instructor {tag}",
            )
            # The other person fields new_booking carries, as they are stored.
            stored = {
                name: body[name]
                for name in (
                    "postcode",
                    "state",
                    "country",
                    "drivers_license",
                    "license_type",
                    "date_of_birth",
                    "opt_in",
                )
            }
            items.append(
                Item(
                    "book",
                    person=person,
                    product=product,
                    booking=tag,
                    status=status,
                    feedback=feedback,
                    instructor=f"Instructor {tag}",
                    changes={**stored, **changes},
                )
            )
            body_items.append(body)
        return Sent(BOOK_PATH, items, json.dumps({"people_product": body_items}))

    def status_update(self) -> Sent:
        bookings = self.rng.sample(sorted(self.model.courses), min(len(self.model.courses), 2))
        bookings = bookings[: self.rng.choice((1, 1, 2))]
        items, body_items = [], []
        for booking in bookings:
            course = self.model.courses[booking]
            targets = sorted(rules.TRANSITIONS[course.status] - {course.status})
            target = course.status if self.rng.random() < 0.15 else self.rng.choice(targets)
            feedback = self.rng.choice(STATUS_FEEDBACK[target]) or None
            tag = self.tag()
            body: dict[str, Any] = {
                "course_status": target,
                "course_feedback": feedback or "",
                "rider_instructor_1": f"Instructor {tag}",
            }
            if self.rng.random() < 0.7:
                body["asset_id"] = course.asset_id
            else:
                body.update(
                    booking_number=booking,
                    person_id=course.person_id,
                    product_id=course.product_id,
                )
            items.append(
                Item(
                    "status",
                    booking=booking,
                    status=target,
                    feedback=feedback,
                    instructor=f"Instructor {tag}",
                )
            )
            body_items.append(body)
        return Sent(BOOK_PATH, items, json.dumps({"people_product": body_items}))

    def modify(self) -> Sent:
        people = sorted(self.model.persons)
        chosen: list[str] = []
        seen: set[str] = set()
        for person in self.rng.sample(people, min(len(people), 3))[: self.rng.choice((1, 2, 3))]:
            if self.model.resolve(person) not in seen:
                seen.add(self.model.resolve(person))
                chosen.append(person)
        items, body_items = [], []
        for person in chosen:
            tag = self.tag()
            names = self.rng.sample(MODIFIABLE, self.rng.randint(1, 4))
            body: dict[str, Any] = {"ID": person}
            changes: dict[str, Any] = {}
            for name in names:
                body[name], changes[name] = modify_value(self.rng, name, tag)
            items.append(Item("modify", person=person, changes=changes))
            body_items.append(body)
        return Sent(MODIFY_PATH, items, json.dumps({"people_data": body_items}))

    def match(self, references: list[dict[str, Any]]) -> Sent:
        reference = self.rng.choice(references)
        data = {
            name: reference[name]
            for name in ("first_name", "last_name", "date_of_birth", "email", "postcode")
        }
        data["lead_source"] = self.tag()  # recorded, not used: makes the body unique
        return Sent(
            MATCH_PATH,
            [Item("match", person=reference["id"])],
            json.dumps({"person_data": data}),
        )

    # -- answers -----------------------------------------------------------------

    def expected_answer(self, sent: Sent, body: dict[str, Any]) -> list[str]:
        """Why the answer is not what the model says it must be (empty: as expected)."""
        problems = []
        if sent.path == MATCH_PATH:
            if body.get("ID") != sent.items[0].person or body.get("receipt") != "Contact found.":
                problems.append(f"match answered {body.get('receipt')!r} {body.get('ID')!r}")
            return problems
        details = body.get("details")
        if not isinstance(details, list) or len(details) != len(sent.items):
            return [f"expected {len(sent.items)} details, got {str(details)[:200]}"]
        if sent.path == MODIFY_PATH:
            for item, entry in zip(sent.items, details, strict=True):
                if entry.get("status") is not True or entry.get("fields") != len(item.changes):
                    problems.append(f"modify of {item.person} answered {entry}")
            return problems
        shadow = copy.deepcopy(self.model)
        for item, entry in zip(sent.items, details, strict=True):
            if entry.get("delivery") != "true" or not entry.get("asset_id"):
                problems.append(f"{item.op} {item.booking} refused: {entry.get('receipt')!r}")
                continue
            if item.op == "book":
                person = shadow.persons[item.person]
                lead = person.kind == LEAD and not person.converted
                receipt = "Course booked; lead converted to contact." if lead else "Course booked."
                contact = shadow.resolve(item.person)
                if entry.get("receipt") != receipt or (not lead and entry["contact_id"] != contact):
                    problems.append(f"book {item.booking} answered {entry}")
                if lead:
                    person.converted = entry["contact_id"]
            else:
                course = shadow.courses[item.booking]
                receipt = (
                    "Course updated."
                    if item.status == course.status
                    else f"Course status changed from {course.status} to {item.status}."
                )
                if entry.get("receipt") != receipt or entry.get("asset_id") != course.asset_id:
                    problems.append(f"status {item.booking} answered {entry}")
                course.status = item.status
        return problems

    def run(
        self,
        base: str,
        headers: dict[str, str],
        products: list[str],
        references: list[dict[str, Any]],
        killed: threading.Event,
    ) -> None:
        try:
            self._run(base, headers, products, references, killed)
        except Exception as exc:  # a bug of this script: say so rather than die silently
            self.violations.append(f"client {self.index} stopped: {exc!r}")

    def _run(
        self,
        base: str,
        headers: dict[str, str],
        products: list[str],
        references: list[dict[str, Any]],
        killed: threading.Event,
    ) -> None:
        self.unanswered = None
        with httpx.Client(
            base_url=base, headers={**headers, **JSON_HEADERS}, timeout=REQUEST_TIMEOUT_S
        ) as http:
            while True:
                sent = self.next_request(products, references)
                try:
                    response = http.post(sent.path, content=sent.text.encode())
                except httpx.TransportError as exc:
                    self.unanswered = sent
                    if not killed.is_set():
                        self.violations.append(f"no answer before the kill: {exc!r}")
                    return
                if response.status_code != 200:
                    self.unanswered = sent
                    self.violations.append(
                        f"HTTP {response.status_code} to {sent.path}: {response.text[:300]}"
                    )
                    return
                body = response.json()
                audit_id = str(body.get("audit_id") or body.get("audit_ID") or "")
                if response.headers.get("x-audit-id") != audit_id or not audit_id:
                    self.violations.append(
                        f"audit id {audit_id!r} in the body, {response.headers.get('x-audit-id')!r}"
                        " in the header"
                    )
                problems = self.expected_answer(sent, body)
                if problems:
                    # The model no longer knows what is stored; stop this thread.
                    self.violations.extend(problems)
                    self.unanswered = sent
                    return
                self.answered.append((audit_id, OPERATIONS[sent.path]))
                self.counts[sent.items[0].op] += 1
                apply(self.model, sent, Answered(body))
                note_conversions(self, sent)


# --------------------------------------------------------------------------- the run


@dataclass
class Options:
    db: str
    kills: int
    threads: int
    contacts: int
    leads: int
    min_kill_s: float
    max_kill_s: float
    seed: int
    pg_url: str | None = None
    time_limit_s: float = 600.0
    tamper: bool = False


@dataclass
class Report:
    db: str
    rounds: list[dict[str, Any]] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    log_events: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0
    # Audit ids of unanswered requests that happened: their records may be missing.
    unanswered_audits: set[str] = field(default_factory=set)
    # --tamper: what the checks must report after the database was damaged on purpose.
    planted: list[str] = field(default_factory=list)

    def missed(self) -> list[str]:
        """Planted damage that no violation mentions."""
        return [p for p in self.planted if not any(p in v for v in self.violations)]

    def summary(self) -> str:
        lines = [f"crash safety on {self.db}: {len(self.rounds)} kill(s) in {self.seconds:.1f} s"]
        for number, r in enumerate(self.rounds, start=1):
            lines.append(
                f"  kill {number} after {r['kill_after_s']:.2f} s: {r['answered']} answered"
                f" ({r['by_op']}), {r['in_flight']} in flight at the kill: {r['applied']} applied"
                f" whole ({r['applied_without_audit']} without an audit record), {r['not_applied']}"
                f" not applied, {r['invisible']} with no visible effect; checked"
                f" {r['people']} people, {r['courses']} courses, {r['audit_ids']} answered audit ids"
            )
        retried = self.log_events.get("transaction retried", 0)
        lines.append(
            f"  server log: {retried} transaction(s) retried; events {dict(self.log_events)}"
        )
        if self.planted:
            missed = self.missed()
            lines.append(
                f"  tamper self-test: {len(self.planted) - len(missed)} of {len(self.planted)}"
                f" planted faults reported{'; MISSED: ' + repr(missed) if missed else ''}"
            )
        if self.violations:
            lines.append(f"  VIOLATIONS ({len(self.violations)}):")
            lines.extend(f"    - {v}" for v in self.violations[:200])
        else:
            lines.append("  no violations")
        return "\n".join(lines)


def _create(http: httpx.Client, path: str, body: dict[str, Any]) -> str:
    response = http.post(path, json=body)
    if response.status_code != 201:
        raise harness.HarnessError(
            f"POST {path}: HTTP {response.status_code} {response.text[:300]}"
        )
    return str(response.json()["id"])


def setup(
    server: harness.Server, options: Options, clients: list[Client]
) -> tuple[list[str], list[dict[str, Any]], set[str]]:
    """Products, reference contacts and each client's own contacts and leads."""
    rng = random.Random(options.seed)
    loaded: set[str] = set()
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:
        products = [
            _create(
                http,
                "/admin/products",
                {"name": f"Crash course {n}", "code": f"CR-{n}", "price": "249.00"},
            )
            for n in range(PRODUCTS)
        ]
        references = []
        for n in range(REFERENCES):
            body = person_body(rng, f"Ref{n}")
            body["id"] = _create(http, "/admin/contacts", body)
            loaded.add(body["id"])
            references.append(body)
        for client in clients:
            for kind, count in ((CONTACT, options.contacts), (LEAD, options.leads)):
                for n in range(count):
                    body = person_body(rng, f"C{client.index}{kind[0].upper()}{n}")
                    person_id = _create(http, f"/admin/{kind}s", body)
                    client.model.persons[person_id] = PersonState(kind, body)
                    if kind == CONTACT:
                        client.contacts.append(person_id)
                        loaded.add(person_id)
                    else:
                        client.leads.append(person_id)
    return products, references, loaded


def run(options: Options, directory: Path) -> Report:
    started = time.monotonic()
    report = Report(db=options.db)
    run_tag = f"R{random.Random(options.seed).randrange(36**4):04d}"
    clients = [
        Client(index=n, run_tag=run_tag, rng=random.Random(options.seed * 1000 + n))
        for n in range(options.threads)
    ]
    workers = 1 if options.db == "sqlite" else 2
    with harness.fresh_database(options.db, "crash", directory, options.pg_url) as url:
        key = harness.admin_key(url)
        server = harness.Server(url, key, directory, workers=workers, name=f"crash-{options.db}")
        try:
            server.start()
            products, references, loaded = setup(server, options, clients)
            kill_rng = random.Random(options.seed + 1)
            for _round in range(options.kills):
                if time.monotonic() - started > options.time_limit_s:
                    report.violations.append(
                        f"time limit {options.time_limit_s:.0f} s reached before all kills"
                    )
                    break
                outcome = one_round(server, clients, products, references, kill_rng, options)
                if options.tamper:
                    report.planted = tamper(url, clients)
                outcome.update(check_round(server, url, clients, references, loaded, report))
                report.rounds.append(outcome)
                if report.violations or options.tamper:
                    break  # the models no longer say what must be stored
        finally:
            server.stop()
            report.log_events = server.log_events()
    for name, count in report.log_events.items():
        if name.startswith("error:") or name in ("unhandled error", "audit record not stored"):
            report.violations.append(f"server log: {count} x {name!r}")
    report.seconds = time.monotonic() - started
    return report


def one_round(
    server: harness.Server,
    clients: list[Client],
    products: list[str],
    references: list[dict[str, Any]],
    kill_rng: random.Random,
    options: Options,
) -> dict[str, Any]:
    """Drive the load, SIGKILL the server at a random moment, wait for every thread."""
    killed = threading.Event()
    before = {c.index: len(c.answered) for c in clients}
    before_ops = Counter[str]()
    for c in clients:
        before_ops.update(c.counts)
    threads = [
        threading.Thread(
            target=c.run,
            args=(server.base, server.headers(), products, references, killed),
            name=f"crash-client-{c.index}",
            daemon=True,
        )
        for c in clients
    ]
    for thread in threads:
        thread.start()
    kill_after = kill_rng.uniform(options.min_kill_s, options.max_kill_s)
    time.sleep(kill_after)
    killed.set()
    server.kill()
    for thread in threads:
        thread.join(timeout=JOIN_TIMEOUT_S)
        if thread.is_alive():
            raise harness.HarnessError(f"{thread.name} did not finish after the kill")
    after_ops = Counter[str]()
    for c in clients:
        after_ops.update(c.counts)
    return {
        "kill_after_s": kill_after,
        "answered": sum(len(c.answered) - before[c.index] for c in clients),
        "by_op": ", ".join(f"{op} {after_ops[op] - before_ops[op]}" for op in sorted(after_ops)),
        "in_flight": sum(1 for c in clients if c.unanswered is not None),
    }


def check_round(
    server: harness.Server,
    url: str,
    clients: list[Client],
    references: list[dict[str, Any]],
    loaded: set[str],
    report: Report,
) -> dict[str, Any]:
    """Restart the server on the same database and check everything stored."""
    server.start()
    snap = harness.snapshot(url)
    bad = report.violations
    bad.extend(v for c in clients for v in c.violations)
    for c in clients:
        c.violations.clear()
    invariants = harness.check_invariants(snap, loaded_contacts=loaded)
    bad.extend(invariants.violations)
    counts = Counter[str]()
    unanswered_audits = report.unanswered_audits
    texts = [c.unanswered.text for c in clients if c.unanswered is not None]
    audited = snap.audit_bodies(url, texts)
    for c in clients:
        sent = c.unanswered
        bookings = sent.bookings if sent else set()
        without = differences(c.model, snap, bookings)
        with_it: list[str] | None = None
        applied: Model | None = None
        observed = Observed(snap)
        if sent is not None:
            applied = copy.deepcopy(c.model)
            try:
                apply(applied, sent, observed)
                with_it = differences(applied, snap, bookings)
            except Impossible as exc:
                with_it = [f"cannot have happened: {exc}"]
        records = audited.get(sent.text, []) if sent else []
        if sent is None:
            if without:
                bad.append(
                    f"client {c.index}: stored state differs from its answers: {without[:8]}"
                )
        elif not without and with_it == []:
            counts["invisible"] += 1
        elif not without:
            counts["not_applied"] += 1
            if any(status == 200 for _id, status in records):
                bad.append(
                    f"client {c.index}: an audit record says 200 for a request whose work is"
                    f" not stored: {sent.text[:200]}"
                )
        elif with_it == []:
            assert applied is not None
            counts["applied"] += 1
            c.model = applied
            note_conversions(c, sent)
            if observed.audit_id is not None:
                unanswered_audits.add(observed.audit_id)
                if observed.audit_id not in snap.audit:
                    counts["applied_without_audit"] += 1
                    bad.append(
                        f"client {c.index}: its work is stored, its audit record"
                        f" {observed.audit_id} is not: {sent.text[:200]}"
                    )
                if records and observed.audit_id not in {i for i, _s in records}:
                    bad.append(
                        f"client {c.index}: its status history names audit {observed.audit_id}"
                        f" but the audit record of its body is {records}"
                    )
            elif not records:
                counts["applied_without_audit"] += 1
                bad.append(
                    f"client {c.index}: its work is stored, no audit record of it is:"
                    f" {sent.text[:200]}"
                )
            if any(status != 200 for _id, status in records):
                bad.append(f"client {c.index}: applied, but audited as {records}")
        else:
            bad.append(
                f"client {c.index}: stored state matches neither its answered requests nor them"
                f" plus the unanswered one. Without it: {without[:8]}. With it: {(with_it or [])[:8]}"
            )
        c.unanswered = None
    # The audit record is committed with the work: no status change, answered or not,
    # may name a record that is not stored.
    stray = invariants.history_without_audit
    if stray:
        bad.append(
            f"status-history rows name audit ids that were never stored: {sorted(stray)[:10]}"
        )
    answered = [pair for c in clients for pair in c.answered]
    for audit_id, operation in answered:
        stored = snap.audit.get(audit_id)
        if stored is None:
            bad.append(f"answered audit id {audit_id} names no stored audit record")
        elif stored != (200, operation):
            bad.append(f"audit record {audit_id} is {stored}, expected (200, {operation!r})")
    for reference in references:
        row = snap.people.get(reference["id"], {})
        for name, value in reference.items():
            if name != "id" and row.get(name) != value:
                bad.append(f"reference contact {reference['id']}: {name} changed")
    bad.extend(read_back(server, snap, clients))
    return {
        "applied": counts["applied"],
        "applied_without_audit": counts["applied_without_audit"],
        "not_applied": counts["not_applied"],
        "invisible": counts["invisible"],
        "people": sum(len(c.model.persons) for c in clients),
        "courses": sum(len(c.model.courses) for c in clients),
        "audit_ids": len(answered),
    }


def note_conversions(client: Client, sent: Sent) -> None:
    """Contacts made by a booking's lead conversions become bookable for their thread."""
    for item in sent.items:
        if item.op == "book":
            person = client.model.persons[item.person]
            if person.kind == LEAD and person.converted and person.converted not in client.contacts:
                client.contacts.append(person.converted)


def read_back(server: harness.Server, snap: harness.Snapshot, clients: list[Client]) -> list[str]:
    """The restarted server answers admin reads with what is stored (a sample)."""
    problems = []
    rng = random.Random(len(snap.assets))
    courses = [course for c in clients for course in c.model.courses.values()]
    audits = [audit_id for c in clients for audit_id, _op in c.answered]
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=30) as http:
        for course in rng.sample(courses, min(20, len(courses))):
            response = http.get(f"/admin/assets/{course.asset_id}")
            if response.status_code != 200:
                problems.append(f"GET /admin/assets/{course.asset_id}: HTTP {response.status_code}")
                continue
            body = response.json()
            history = [
                (h["from_status"], h["to_status"], h["audit_id"]) for h in body["status_history"]
            ]
            if body["course_status"] != course.status or history != course.history:
                problems.append(f"the restarted server reads course {course.asset_id} as {body}")
        for audit_id in rng.sample(audits, min(20, len(audits))):
            response = http.get(f"/admin/audit/{audit_id}")
            if response.status_code != 200:
                problems.append(f"GET /admin/audit/{audit_id}: HTTP {response.status_code}")
    return problems


def tamper(url: str, clients: list[Client]) -> list[str]:
    """Damage the stored records the way a broken write path would (the --tamper
    self-test); return what the checks must then report."""
    engine = build_engine(Settings(database_url=url))
    planted = []
    courses = [
        (booking, course)
        for client in clients
        for booking, course in sorted(client.model.courses.items())
        if len(course.history) >= 2
    ]
    booking, course = courses[0]
    person_id = next(iter(clients[1].model.persons))
    audit_id = clients[2].answered[0][0]
    with engine.begin() as connection:
        # An answered status change lost.
        last = connection.scalar(
            select(func.max(AssetStatusChange.id)).where(
                AssetStatusChange.asset_id == course.asset_id
            )
        )
        connection.execute(delete(AssetStatusChange).where(AssetStatusChange.id == last))
        planted.append(f"booking {booking}: history")
        # An answered field change lost.
        connection.execute(update(Person).where(Person.id == person_id).values(city="Tampered"))
        planted.append(f"person {person_id}: city is 'Tampered'")
        # An answered audit record lost.
        connection.execute(delete(AuditRecord).where(AuditRecord.id == audit_id))
        planted.append(f"answered audit id {audit_id} names no stored audit record")
        # A matching key lost.
        victim = clients[3].contacts[0]
        key = connection.scalar(select(PersonKey.key).where(PersonKey.person_id == victim).limit(1))
        connection.execute(
            delete(PersonKey).where(PersonKey.person_id == victim, PersonKey.key == key)
        )
        planted.append(f"person_keys of {victim} out of step")
        # A half-written course: no status history.
        orphan = new_id(RecordKind.ASSET)
        connection.execute(
            insert(Asset).values(
                id=orphan,
                person_id=clients[0].contacts[0],
                product_id=course.product_id,
                booking_number=f"TAMPER-{orphan}",
                course_status="booked",
                created_at=utcnow(),
                updated_at=utcnow(),
            )
        )
        planted.append(f"course {orphan} has no status-history row")
    engine.dispose()
    return planted


def options_from(args: argparse.Namespace) -> Options:
    short = args.short
    return Options(
        db=args.db,
        kills=args.kills or (2 if short else 5),
        threads=args.threads,
        contacts=4 if short else 8,
        leads=12 if short else 30,
        min_kill_s=1.5 if short else 3.0,
        max_kill_s=4.0 if short else 10.0,
        seed=args.seed,
        pg_url=args.pg_url,
        time_limit_s=args.time_limit,
        tamper=args.tamper,
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--short", action="store_true", help="CI form: 2 kills, short rounds")
    parser.add_argument("--kills", type=int, choices=range(1, 21), metavar="1..20")
    parser.add_argument("--threads", type=int, default=6, choices=range(1, 33), metavar="1..32")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--pg-url", help="PostgreSQL to create the database on (127.0.0.1)")
    parser.add_argument("--time-limit", type=float, default=600.0, help="seconds, whole run")
    parser.add_argument(
        "--tamper",
        action="store_true",
        help="self-test: damage the database after the first kill; pass if every fault is reported",
    )
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.crash_safety")) is not None:
        return status
    if args.tamper and args.threads < 4:
        parser.error("--tamper needs 4 or more threads")
    options = options_from(args)
    print(f"crash safety: --db {options.db} --seed {options.seed}", flush=True)
    with tempfile.TemporaryDirectory(prefix="ridercrm-crash-") as directory:
        try:
            report = run(options, Path(directory))
        except harness.HarnessError as exc:
            print(f"crash safety could not run: {exc}", file=sys.stderr)
            return 2
    print(report.summary())
    if options.tamper:
        return 1 if report.missed() or not report.planted else 0
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
