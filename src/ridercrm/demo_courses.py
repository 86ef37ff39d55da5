"""The demo data's well-known records and its courses.

The README's examples name these records by their fixed ids (``ridercrm demo`` prints
them): a contact to find (Ann Nguyen), a contact to modify (Ben Kelly) with a booked
course to cancel, a lead to book (Liam Tran) and the products. Courses cover every
status at every location, in the weeks before and after the day the demo is loaded,
and two sites (Somerton, Ipswich) have courses on every day of the current week.
"""

from __future__ import annotations

import datetime as dt
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

from ridercrm.fields import COURSE_LOCATIONS, SITE_ZONES
from ridercrm.ids import checksum
from ridercrm.people.models import CONTACT, LEAD


def fixed_id(id15: str) -> str:
    """The 18-character form of a hand-picked 15-character id."""
    return id15 + checksum(id15)


def product_id(code: str) -> str:
    """The fixed id of the demo product with this code (LAP-SOM -> 01tDEMO00LAPSOM...)."""
    return fixed_id("01tDEMO" + code.replace("-", "").rjust(8, "0"))


def course_id(number: int) -> str:
    return fixed_id(f"02iDEMO{number:08d}")


ANN = fixed_id("003DEMO00000ANN")
BEN = fixed_id("003DEMO00000BEN")
LIAM = fixed_id("00QDEMO0000LIAM")
# A rider stored twice, as the review queue finds them: the contact Chloe Martin, who
# enquired again on the website as a lead with a new e-mail address. The README merges
# them (`ridercrm duplicates merge`).
CHLOE = fixed_id("003DEMO000CHLOE")
CHLOE_AGAIN = fixed_id("00QDEMO000CHLOE")
BOOKED_COURSE = course_id(1)  # Ben's, at Somerton next week: the README cancels it

# (kind, id, raw values) of the people the README's examples use.
README_PEOPLE: tuple[tuple[str, str, dict[str, str]], ...] = (
    (CONTACT, ANN, {
        "first_name": "Ann", "last_name": "Nguyen", "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com", "postcode": "3064", "mobile_phone": "0412 345 678",
        "street": "12 Main St", "city": "Craigieburn", "state": "VIC", "country": "Australia",
        "drivers_license": "L1234567", "license_type": "CYL", "opt_in": "true",
    }),
    (CONTACT, BEN, {
        "first_name": "Ben", "last_name": "Kelly", "date_of_birth": "1987-11-03",
        "email": "ben.kelly@example.com", "postcode": "3062", "mobile_phone": "0422 808 115",
        "street": "4 Banksia Cres", "city": "Somerton", "state": "VIC", "country": "Australia",
        "drivers_license": "093412876", "license_type": "CYL",
    }),
    (LEAD, LIAM, {
        "first_name": "Liam", "last_name": "Tran", "date_of_birth": "2004-07-21",
        "email": "liam.tran@example.net", "postcode": "3064", "mobile_phone": "0413 555 019",
        "street": "7 Hume Hwy", "city": "Craigieburn", "state": "VIC", "country": "Australia",
        "lead_source": "Web",
    }),
)  # fmt: skip

# (kind, id, raw values) of the demo's known duplicate: loaded after everyone else, so
# the generated people and their courses are the same as without it.
README_DUPLICATE: tuple[tuple[str, str, dict[str, str]], ...] = (
    (CONTACT, CHLOE, {
        "first_name": "Chloe", "last_name": "Martin", "date_of_birth": "2001-09-14",
        "email": "chloe.martin@example.com", "postcode": "3152", "mobile_phone": "0431 276 904",
        "street": "9 Wattle Ave", "city": "Wantirna South", "state": "VIC",
        "country": "Australia", "drivers_license": "L5517204", "license_type": "CYL",
    }),
    (LEAD, CHLOE_AGAIN, {
        "first_name": "Chloe", "last_name": "Martin", "date_of_birth": "2001-09-14",
        "email": "chloe.m@example.net", "postcode": "3152", "mobile_phone": "0431 276 904",
        "street": "9 Wattle Avenue", "city": "Wantirna South", "state": "VIC",
        "country": "Australia", "lead_source": "Web",
    }),
)  # fmt: skip

INSTRUCTORS = ("Sam Lee", "Alex Kim", "Jo Walsh", "Priya Nair", "Tom Brennan", "Mia Rossi")
# Per week before or after the load: the statuses of that week's course at each location,
# so every location has every status.
WEEKS: tuple[tuple[int, str], ...] = (
    (1, "booked"),
    (2, "booked"),
    (3, "cancelled"),
    (-1, "completed - pass"),
    (-2, "completed - fail"),
    (-3, "cancelled"),
)
# The sites whose whole current week the demo fills (Victoria and Queensland), and the
# courses of a day there: (start, end, riders).
WEEK_SITES = ("somerton", "ipswitch")
TODAY_SESSIONS = (("08:30", "12:30", 6), ("13:00", "16:30", 4))
OTHER_DAY_SESSIONS = (("08:30", "16:30", 2),)
COMPLETED = ("completed - pass", "completed - pass", "completed - fail")
FEEDBACK = {
    "completed - pass": ("pass A", "pass B", "pass C"),
    "completed - fail": ("fail 1", "fail 2"),
}


@dataclass(frozen=True)
class DemoProduct:
    id: str
    code: str
    price: Decimal


def demo_courses(
    *,
    contacts: Sequence[str],
    products: Mapping[str, Sequence[DemoProduct]],
    today: dt.date,
    now: dt.datetime,
    rng: random.Random,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Rows of the demo courses and of their status history.

    ``products`` are each location's. The first course is BOOKED_COURSE, Ben Kelly's
    at Somerton next week; the others belong to contacts drawn from ``contacts``.
    """
    courses: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = []
    number = 0
    for weeks, status in WEEKS:
        for location in COURSE_LOCATIONS:
            choices = products.get(location)
            if not choices:
                continue
            number += 1
            product = choices[number % len(choices)]
            day = today + dt.timedelta(weeks=weeks, days=rng.randint(0, 4))
            feedback = rng.choice(FEEDBACK[status]) if status in FEEDBACK else None
            courses.append(
                {
                    "id": course_id(number),
                    "person_id": BEN if number == 1 else rng.choice(contacts),
                    "product_id": product.id,
                    "booking_number": f"DEMO-{number:04d}",
                    "course_status": status,
                    "course_feedback": feedback,
                    "course_datetime": f"{day.isoformat()} 08:30:00",
                    "course_date_end": f"{day.isoformat()} 16:30:00",
                    "course_location": location,
                    "rider_instructor_1": rng.choice(INSTRUCTORS),
                    "rider_instructor_2": rng.choice((None, *INSTRUCTORS)),
                    "dealer_code": f"D{rng.randint(1, 12):03d}",
                    "course_price": product.price,
                    "booking_source": rng.choice(("Website", "Website", "Phone", "In Person")),
                    "created_at": now,
                    "updated_at": now,
                }
            )
            # Demo changes were made by no request: their audit id is empty.
            history.append(_change(course_id(number), None, "booked", now))
            if status != "booked":
                history.append(_change(course_id(number), "booked", status, now))
    # This week's sheets at two sites (in two zones), so the day sheet opens on riders:
    # today's in the site's own calendar, booked; the week's earlier days completed.
    for location in WEEK_SITES:
        choices = products.get(location)
        if not choices:
            continue
        product = choices[0]
        local_today = now.astimezone(ZoneInfo(SITE_ZONES[location])).date()
        monday = local_today - dt.timedelta(days=local_today.weekday())
        for offset in range(7):
            day = monday + dt.timedelta(days=offset)
            sessions = TODAY_SESSIONS if day == local_today else OTHER_DAY_SESSIONS
            for start, end, riders in sessions:
                for _ in range(riders):
                    number += 1
                    status = "booked" if day >= local_today else rng.choice(COMPLETED)
                    feedback = rng.choice(FEEDBACK[status]) if status in FEEDBACK else None
                    courses.append(
                        {
                            "id": course_id(number),
                            "person_id": rng.choice(contacts),
                            "product_id": product.id,
                            "booking_number": f"DEMO-{number:04d}",
                            "course_status": status,
                            "course_feedback": feedback,
                            "course_datetime": f"{day.isoformat()} {start}:00",
                            "course_date_end": f"{day.isoformat()} {end}:00",
                            "course_location": location,
                            "rider_instructor_1": rng.choice(INSTRUCTORS),
                            "rider_instructor_2": None,
                            "dealer_code": f"D{rng.randint(1, 12):03d}",
                            "course_price": product.price,
                            "booking_source": rng.choice(("Website", "Phone", "In Person")),
                            "created_at": now,
                            "updated_at": now,
                        }
                    )
                    history.append(_change(course_id(number), None, "booked", now))
                    if status != "booked":
                        history.append(_change(course_id(number), "booked", status, now))
    return courses, history


def _change(asset: str, before: str | None, after: str, now: dt.datetime) -> dict[str, Any]:
    return {
        "asset_id": asset,
        "from_status": before,
        "to_status": after,
        "changed_at": now,
        "audit_id": "",
    }
