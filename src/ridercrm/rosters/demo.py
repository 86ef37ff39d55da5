"""The demo's course sessions (``ridercrm demo`` and ``serve --demo``, after the demo data).

So the first page shows the feature: today's sessions at Somerton and Kilsyth with riders
booked (Kilsyth short of instructor cover), a full Somerton session next week with two
people waiting, and a session of capacity 12 for each product, site and start of the
demo's courses. The records the README's examples name keep fixed ids.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, cast
from zoneinfo import ZoneInfo

from sqlalchemy import Table, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import session_scope, utcnow
from ridercrm.fields import SITE_ZONES
from ridercrm.ids import checksum
from ridercrm.people.models import CONTACT, Person
from ridercrm.products.models import Product
from ridercrm.rosters import service as rosters
from ridercrm.sessions.models import CourseSession, WaitlistEntry


def _fixed(id15: str) -> str:
    return id15 + checksum(id15)


TODAY_SOMERTON = _fixed("a0SDEMO00TODSOM")
TODAY_KILSYTH = _fixed("a0SDEMO00TODKIL")
FULL_SESSION = _fixed("a0SDEMO0000FULL")
FULL_COURSE = _fixed("02iDEMO00000911")  # one of the full session's: the README cancels it
ASSETS = cast(Table, Asset.__table__)
HISTORY = cast(Table, AssetStatusChange.__table__)


def _product(session: Session, code: str) -> str | None:
    return session.scalar(select(Product.id).where(Product.code == code))


def load_demo_sessions(
    sessions: sessionmaker[Session], *, today: dt.date | None = None, now: dt.datetime | None = None
) -> str:
    """Load the demo sessions once; say what was loaded ("" when they already are).

    "Today" is each site's own at ``now`` (its zone, as a course's time is its site's wall
    time and the day sheet opens on the site's today), not the server's date: a server on
    UTC is still on yesterday until 10 or 11 am in Melbourne. ``today`` sets it outright."""
    now = now or utcnow()

    def site_today(site: str) -> dt.date:
        return today or now.astimezone(ZoneInfo(SITE_ZONES[site])).date()

    with session_scope(sessions, write=True) as session:
        if session.get(CourseSession, FULL_SESSION) is not None:
            return ""
        lap_som, lap_kil = _product(session, "LAP-SOM"), _product(session, "LAP-KIL")
        if lap_som is None or lap_kil is None:
            return ""
        # UK CBT style: four trainees per instructor on the learner courses.
        session.execute(
            update(Product).where(Product.code.like("LAP-%")).values(trainees_per_instructor=4)
        )
        riders = list(
            session.scalars(
                select(Person.id)
                .where(
                    Person.kind == CONTACT,
                    Person.merged_into.is_(None),
                    Person.id.not_like("003DEMO%"),  # the README's people stay free
                )
                .order_by(Person.id)
                .limit(40)
            )
        )
        somerton, kilsyth = site_today("somerton"), site_today("kilsyth")
        week = somerton + dt.timedelta(days=7)
        plan: list[tuple[str, str, str, str, int, int, int, int]] = [
            # id, product, site, start, capacity, instructors, minimum, riders booked
            (TODAY_SOMERTON, lap_som, "somerton", f"{somerton} 08:30:00", 12, 3, 4, 7),
            (TODAY_KILSYTH, lap_kil, "kilsyth", f"{kilsyth} 08:30:00", 8, 1, 4, 3),
            (FULL_SESSION, lap_som, "somerton", f"{week} 12:30:00", 4, 1, 2, 4),
        ]
        number = 900
        taken = 0
        for session_id, product_id, site, start, capacity, instructors, minimum, booked in plan:
            end = start[:11] + ("16:30:00" if start.endswith("08:30:00") else "16:00:00")
            # The demo's courses may already hold seats here (the day sheet's riders at
            # Somerton today, 08:30): they count, and the session's riders make up the rest.
            already = rosters.booked_count(
                session, product_id=product_id, location=site, course_datetime=start
            )
            added = max(0, booked - already)
            session.add(
                CourseSession(
                    id=session_id, product_id=product_id, location=site, course_datetime=start,
                    course_date_end=end, capacity=capacity, minimum=minimum,
                    instructors=instructors, seats=min(capacity, instructors * 4),
                    booked=already + added, held=0, status="confirmed" if start[:10] == str(site_today(site)) else "scheduled",
                )
            )  # fmt: skip
            rows = []
            for n in range(booked):  # numbers and riders as planned: the README names 911
                number += 1
                if n < added:
                    rows.append(_course(number, riders[taken], product_id, site, start, end, now))
                taken += 1
            if not rows:
                continue
            session.execute(insert(ASSETS), rows)
            session.execute(
                insert(HISTORY),
                [
                    {"asset_id": r["id"], "from_status": None, "to_status": "booked",
                     "changed_at": now, "audit_id": ""}
                    for r in rows
                ],
            )  # fmt: skip
        session.flush()
        for rank in (1, 2):
            session.add(
                WaitlistEntry(
                    session_id=FULL_SESSION, person_id=riders[taken], rank=rank, state="waiting"
                )
            )
            taken += 1
        made = rosters.backfill(session)
        for row in made:
            row.capacity = row.seats = max(12, row.booked)
            row.instructors = 3
    return (
        f"sessions: {len(made) + 3} (today at somerton and kilsyth; full, with 2 waiting:"
        f" {FULL_SESSION}; its course {FULL_COURSE} is cancelled in the README)"
    )


def _course(
    number: int, person: str, product: str, site: str, start: str, end: str, now: dt.datetime
) -> dict[str, Any]:
    return {
        "id": _fixed(f"02iDEMO{number:08d}"),
        "person_id": person,
        "product_id": product,
        "booking_number": f"DEMO-S{number:04d}",
        "course_status": "booked",
        "course_feedback": None,
        "course_datetime": start,
        "course_date_end": end,
        "course_location": site,
        "rider_instructor_1": "Sam Lee",
        "rider_instructor_2": None,
        "dealer_code": "D001",
        "course_price": None,
        "booking_source": "Website",
        "created_at": now,
        "updated_at": now,
    }
