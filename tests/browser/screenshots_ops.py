"""The day sheet's and the dashboard's screenshots, taken by tests/browser/screenshots.py."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from tests.courses import builders

RIDERS = (
    ("Mia", "Chen", "booked"), ("Noah", "Patel", "booked"), ("Olivia", "Smith", "booked"),
    ("Jack", "Brown", "booked"), ("Zoe", "Wilson", "cancelled"), ("Leo", "Nguyen", "booked"),
)  # fmt: skip


def sheet_day(today: dt.date) -> dt.date:
    """The next Saturday: a training day in the demo's weeks."""
    return today + dt.timedelta(days=(5 - today.weekday()) % 7 or 7)


def add_riders(sessions: sessionmaker[Session], day: dt.date) -> None:
    """A morning and an afternoon course at Somerton on ``day``."""
    with session_scope(sessions, write=True) as session:
        ride = builders.product(session, "RR-SOM", "Ride Ready (Somerton)")
        for index, (first, last, status) in enumerate(RIDERS):
            # A booking's person fields update the person: these are the rider's own.
            own = {
                "mobile_phone": f"0412 555 {index:03d}",
                "license_type": "CYP" if index % 3 else "CYL",
            }
            person = builders.person(
                session, first_name=first, last_name=last, email=f"{first}@example.com", **own
            )
            builders.course(
                session,
                person,
                ride,
                course_status=status,
                course_location="somerton",
                course_datetime=f"{day} {'08:30' if index < 4 else '13:00'}:00",
                course_date_end=f"{day} {'12:30' if index < 4 else '16:30'}:00",
                rider_instructor_1="Sam Lee",
                **own,
            )


def shoot(page: Any, root: str, shot: Callable[[str], None], day: dt.date) -> None:
    """As a staff user: a mixed submission of the day sheet, then the dashboard."""
    page.goto(f"{root}/daysheet?site=somerton&date={day}")
    page.get_by_label("Result for Mia Chen").select_option("pass A")
    page.get_by_label("Result for Noah Patel").select_option("fail 2")
    page.get_by_label("Result for Olivia Smith").select_option("pass B")
    page.get_by_label("Result for Zoe Wilson").select_option("pass C")  # cancelled: refused
    page.get_by_label("Record results for this future day anyway").check()  # next Saturday
    page.get_by_role("button", name="Record results").click()
    page.get_by_text("Saved 3 of 4 rows.").wait_for()
    shot("daysheet")
    page.goto(f"{root}/dashboard")
    shot("dashboard")
