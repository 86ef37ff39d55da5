"""What writing the messages costs a 200-item booking on SQLite (issue 27).

Run from the repository root:

    .venv/bin/python bench/messages_bench.py              # 15 rounds
    .venv/bin/python bench/messages_bench.py --rounds 30

In one process, on a fresh SQLite file in a temporary directory: 200 contacts and a
product, then rounds of 200-item new bookings through operation 1's service
(``courses.book_courses`` in one write transaction, as a request runs it), each booking
announcing a confirmation and two reminders on two channels (1,200 message rows). Each
round runs every variant once, in turn, so a noisy neighbour slows all alike:

- ``bulk``: as the service runs (rows kept with the session, one executemany at commit);
- ``orm``: as before 2026-11-27: each message an ORM row added to the session, and a
  look-up of the person's reminder stop per item (``session.get``), by putting those
  in the service's place (this bench only);
- ``none``: the same booking with ``notifications.service.course_booked`` replaced by a
  function that writes nothing (this bench only), the floor without messages.

Printed: rows written per booking, the median time of each variant, and the median of
the per-round ratios to ``none`` (what the messages add to the booking).

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=messages_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import new_booking, person_body

from bench import harness
from ridercrm.config import Settings
from ridercrm.courses import service as courses
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.migrate import upgrade
from ridercrm.notifications import service as notifications
from ridercrm.notifications.models import Message
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT
from ridercrm.people.schemas import PersonCreate
from ridercrm.products import service as products
from ridercrm.products.schemas import ProductCreate

ITEMS = 200


def setup(sessions: sessionmaker[Session]) -> tuple[str, list[str]]:
    from decimal import Decimal

    with session_scope(sessions, write=True) as session:
        product = products.create_product(
            session, data=ProductCreate(name="Learner Approved", code="LAP", price=Decimal("249"))
        ).id
        people_ids = [
            people.create_person(
                session,
                kind=CONTACT,
                data=PersonCreate.model_validate(
                    person_body(email=f"rider{n}@example.com", first_name=f"Rider{n}")
                ),
            ).id
            for n in range(ITEMS)
        ]
    return product, people_ids


def booking(
    sessions: sessionmaker[Session], product: str, people_ids: list[str], rep: int
) -> float:
    items = [
        new_booking(
            person_id,
            product,
            booking_number=f"B-{rep}-{n}",
            course_datetime="2027-06-05 08:30:00",
            course_date_end="2027-06-05 16:30:00",
        )
        for n, person_id in enumerate(people_ids)
    ]
    started = time.perf_counter()
    with session_scope(sessions, write=True) as session:
        results = courses.book_courses(session, items=items, audit_id=new_id(RecordKind.AUDIT))
    elapsed = time.perf_counter() - started
    assert all(result.delivery for result in results), results[0].receipt
    return elapsed


def count_messages(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return int(session.scalar(select(func.count()).select_from(Message)) or 0)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    harness.add_previous(parser)
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.messages_bench")) is not None:
        return status
    real: Callable[..., Any] = notifications.course_booked
    bulk_message: Callable[..., Any] = notifications._message

    def nothing(_session: Session, _asset: Any, **_fields: Any) -> None:
        return None

    def orm_message(session: Session, asset: Any, **fields: Any) -> None:
        bulk_message(session, asset, **fields)
        row = notifications.MESSAGES.pending(session).pop()
        session.add(Message(**row))

    bulk_stopped: Callable[..., Any] = notifications._stopped

    def orm_stopped(session: Session, person_id: str) -> bool:
        return session.get(notifications.ReminderStop, person_id) is not None

    variants: dict[str, tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]]] = {
        "bulk": (real, bulk_message, bulk_stopped),
        "orm": (real, orm_message, orm_stopped),
        "none": (nothing, bulk_message, bulk_stopped),
    }
    times: dict[str, list[float]] = {name: [] for name in variants}
    rows: dict[str, int] = {}
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(database_url=f"sqlite:///{Path(directory) / 'bench.db'}")
        engine = build_engine(settings)
        upgrade(engine)
        sessions = session_factory(engine)
        product, people_ids = setup(sessions)
        os.environ.setdefault("RIDERCRM_REMINDERS", "48h,2h")
        rep = 0
        for round_number in range(args.rounds + 1):  # the first round warms up
            for name, (booked, writer, stopped) in variants.items():
                notifications.course_booked = booked
                notifications._message = writer
                notifications._stopped = stopped
                before = count_messages(sessions)
                elapsed = booking(sessions, product, people_ids, rep)
                rows[name] = count_messages(sessions) - before
                rep += 1
                if round_number:
                    times[name].append(elapsed)
        notifications.course_booked = real
        notifications._message = bulk_message
        notifications._stopped = bulk_stopped
        engine.dispose()
    print(f"load average at the end: {os.getloadavg()[0]:.2f}")
    for name in variants:
        print(
            f"{name:>9}: {rows[name]:5d} message rows, median {statistics.median(times[name]) * 1000:.1f} ms"
            f" (min {min(times[name]) * 1000:.1f})"
        )
    for name in ("bulk", "orm"):
        ratios = [m / n for m, n in zip(times[name], times["none"], strict=True)]
        print(f"{name} / none, median of {len(ratios)} rounds: {statistics.median(ratios):.3f}")
    ratios = [b / o for b, o in zip(times["bulk"], times["orm"], strict=True)]
    print(f"bulk / orm, median of {len(ratios)} rounds: {statistics.median(ratios):.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
