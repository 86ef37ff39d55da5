"""The day sheet of a training site: the day's courses, and their results recorded in bulk.

A sheet lists every course booked at a site on a date, grouped by start time and
product. Results come back as rows of (course, new status, feedback); they go through
operation 1's status changes (:func:`ridercrm.courses.service.change_statuses`), so the
validation, status machine, feedback rule, status history and events are exactly the
interface's: each row is checked alone, a broken row is reported with its error and the
others are kept, written together in one flush. The whole submission is one audit
record, written by the caller (the console's change, which names the staff user).
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.courses import rules, service
from ridercrm.courses.models import Asset
from ridercrm.errors import DomainError
from ridercrm.fields import (
    COURSE_FEEDBACK,
    COURSE_FIRST_YEAR,
    COURSE_LAST_YEAR,
    COURSE_LOCATIONS,
    enumeration,
)
from ridercrm.ids import RecordKind, canonical_id
from ridercrm.people.models import Person
from ridercrm.products.models import Product

SITES = COURSE_LOCATIONS
parse_site = enumeration(COURSE_LOCATIONS)

# What a row of a submission may set: the interface's statuses that a day at the site
# ends with. "booked" puts a course back (e.g. a cancelled rider who turned up after all).
RESULT_STATUSES = (rules.PASSED, rules.FAILED, rules.CANCELLED, rules.BOOKED)
# A sheet links to the day before and after.
FIRST_YEAR, LAST_YEAR = COURSE_FIRST_YEAR, COURSE_LAST_YEAR
MAX_ROWS = 500
"""Rows one submission may carry: far more than a site's day (about 40 riders)."""


class SheetError(DomainError, ValueError):
    """The sheet or submission as a whole is unusable (an unknown site, a bad date)."""


@dataclass(frozen=True)
class Rider:
    """One booked course on the sheet, with what the instructor needs about the rider."""

    asset_id: str
    person_id: str
    first_name: str
    last_name: str
    license_type: str
    mobile_phone: str
    home_phone: str
    booking_number: str
    course_status: str
    course_feedback: str
    rider_instructor_1: str
    rider_instructor_2: str

    @property
    def phone(self) -> str:
        return self.mobile_phone or self.home_phone


@dataclass
class Group:
    """The riders of one product starting at one time."""

    start: str  # "HH:MM", local wall time of the site
    end: str  # "HH:MM" or "" when the course has no end time
    product_id: str
    product_name: str
    product_code: str
    riders: list[Rider] = field(default_factory=list)


@dataclass
class DaySheet:
    site: str
    day: dt.date
    groups: list[Group]

    @property
    def rider_count(self) -> int:
        return sum(len(group.riders) for group in self.groups)

    def asset_ids(self) -> set[str]:
        return {rider.asset_id for group in self.groups for rider in group.riders}


def parse_day(value: str | None, *, today: dt.date) -> dt.date:
    """The sheet's date from ``YYYY-MM-DD``; today when none is given."""
    if value is None or not value.strip():
        return today
    try:
        day = dt.date.fromisoformat(value.strip())
    except ValueError:
        raise SheetError(f"date: {value[:40]!r} is not a date written YYYY-MM-DD") from None
    if not FIRST_YEAR <= day.year <= LAST_YEAR:
        raise SheetError(f"date: must be in the years {FIRST_YEAR} to {LAST_YEAR}")
    return day


def site_of(value: str | None) -> str:
    """The site in its stored spelling; any casing or alias of one of ``SITES``."""
    try:
        site = parse_site(value)
    except ValueError as exc:
        raise SheetError(f"site: {exc}") from None
    if site is None:
        raise SheetError(f"site: choose one of {', '.join(SITES)}")
    return site


def _day_bounds(day: dt.date) -> tuple[str, str]:
    # course_datetime is text "YYYY-MM-DD HH:MM:SS", or the date alone (operation 1 takes
    # it; it sorts before the day's times): a day is a range of the index.
    return day.isoformat(), f"{day.isoformat()} 23:59:59"


def day_sheet(session: Session, *, site: str, day: dt.date) -> DaySheet:
    """Every course at ``site`` on ``day``, grouped by start time and product."""
    first, last = _day_bounds(day)
    query = (
        select(
            Asset.id.label("asset_id"),
            Asset.course_datetime,
            Asset.course_date_end,
            Asset.booking_number,
            Asset.course_status,
            Asset.course_feedback,
            Asset.rider_instructor_1,
            Asset.rider_instructor_2,
            Product.id.label("product_id"),
            Product.name.label("product_name"),
            Product.code.label("product_code"),
            Person.id.label("person_id"),
            Person.first_name,
            Person.last_name,
            Person.license_type,
            Person.mobile_phone,
            Person.home_phone,
        )
        .join(Product, Product.id == Asset.product_id)
        .join(Person, Person.id == Asset.person_id)
        .where(
            Asset.course_location == site,
            Asset.course_datetime >= first,
            Asset.course_datetime <= last,
        )
        .order_by(
            Asset.course_datetime, Product.name, Product.id, Person.last_name, Person.first_name
        )
    )
    groups: dict[tuple[str, str], Group] = {}
    rows: Sequence[Any] = session.execute(query).all()
    for row in rows:
        starts: str = row.course_datetime  # within the day's range: never empty
        start = starts[11:16]
        group = groups.get((start, row.product_id))
        if group is None:
            ends: str = row.course_date_end or ""
            end = ends[11:16] if ends[:10] == starts[:10] else ends
            group = Group(start, end, row.product_id, row.product_name, row.product_code)
            groups[(start, row.product_id)] = group
        group.riders.append(
            Rider(
                asset_id=row.asset_id,
                person_id=row.person_id,
                first_name=row.first_name or "",
                last_name=row.last_name,
                license_type=row.license_type or "",
                mobile_phone=row.mobile_phone or "",
                home_phone=row.home_phone or "",
                booking_number=row.booking_number or "",
                course_status=row.course_status,
                course_feedback=row.course_feedback or "",
                rider_instructor_1=row.rider_instructor_1 or "",
                rider_instructor_2=row.rider_instructor_2 or "",
            )
        )
    return DaySheet(site=site, day=day, groups=list(groups.values()))


@dataclass(frozen=True)
class Entry:
    """One row of a submission: a course and the status (and feedback) it gets."""

    asset_id: str
    course_status: str
    course_feedback: str = ""


@dataclass
class RowResult:
    asset_id: str
    saved: bool
    message: str  # the receipt of a saved row; the error of a broken one


@dataclass
class Submission:
    site: str
    day: dt.date
    audit_id: str
    entries: list[Entry]
    results: list[RowResult]

    def summary(self) -> dict[str, Any]:
        """What the audit record keeps as the submission's response: every row's outcome."""
        return {
            "site": self.site,
            "date": self.day.isoformat(),
            "saved": self.saved,
            "failed": len(self.results) - self.saved,
            "rows": [
                {
                    "asset_id": result.asset_id,
                    "course_status": entry.course_status,
                    "course_feedback": entry.course_feedback,
                    "saved": result.saved,
                    "message": result.message,
                }
                for entry, result in zip(self.entries, self.results, strict=True)
            ],
        }

    @property
    def saved(self) -> int:
        return sum(1 for result in self.results if result.saved)

    @property
    def errors(self) -> dict[str, str]:
        return {r.asset_id: r.message for r in self.results if not r.saved}


_STATUS = enumeration(RESULT_STATUSES)
_FEEDBACK = enumeration(COURSE_FEEDBACK)


def entry_of(asset_id: str, status: str, feedback: str = "") -> Entry:
    """A row as a form sends it; an unknown status or feedback is left for the row's error.

    Known values are put in their stored spelling; anything else is passed on as given,
    so the row fails with operation 1's own message rather than vanishing.
    """
    with contextlib.suppress(ValueError):
        status = _STATUS(status) or status
    with contextlib.suppress(ValueError):
        feedback = _FEEDBACK(feedback) or ""
    return Entry(asset_id=asset_id.strip(), course_status=status, course_feedback=feedback)


def record_results(
    session: Session,
    *,
    site: str,
    day: dt.date,
    entries: Sequence[Entry],
    audit_id: str,
) -> Submission:
    """Apply each row alone; a broken row is reported, the others kept.

    A row must name a course on this site's sheet for this day, once; the rest of its
    rules are operation 1's. ``audit_id`` names the submission's one audit record (its
    caller writes it, with :meth:`Submission.summary` as its response), to which every
    status change of the submission points.
    """
    if len(entries) > MAX_ROWS:
        raise SheetError(f"rows: at most {MAX_ROWS} in one submission")
    # Held for the whole submission: the session's identity map keeps rows only weakly.
    held = _sheet_courses(session, site=site, day=day, entries=entries)
    on_sheet = {asset.id for asset in held if isinstance(asset, Asset)}
    results: list[RowResult | None] = []
    items: list[dict[str, str]] = []
    seen: set[str] = set()
    for entry in entries:
        asset_id = canonical_id(entry.asset_id, RecordKind.ASSET) or entry.asset_id
        if asset_id not in on_sheet:
            message = f"asset_id: course {entry.asset_id} is not on the {site} sheet of {day}"
            results.append(RowResult(entry.asset_id, saved=False, message=message))
        elif asset_id in seen:
            message = f"asset_id: course {asset_id} appears twice in this submission"
            results.append(RowResult(asset_id, saved=False, message=message))
        else:
            seen.add(asset_id)
            results.append(None)
            items.append(
                {
                    "asset_id": asset_id,
                    "course_status": entry.course_status,
                    "course_feedback": entry.course_feedback,
                }
            )
    # Operation 1's own rules and writes, every row checked alone, written in one flush.
    applied = iter(service.change_statuses(session, items=items, audit_id=audit_id))
    rows = [result if result is not None else _row(next(applied)) for result in results]
    return Submission(site=site, day=day, audit_id=audit_id, entries=list(entries), results=rows)


def _row(result: service.ItemResult) -> RowResult:
    message = result.receipt if result.delivery else result.receipt.removesuffix(".")
    return RowResult(result.asset_id, saved=result.delivery, message=message)


def _sheet_courses(
    session: Session, *, site: str, day: dt.date, entries: Sequence[Entry]
) -> list[Any]:
    """The named courses that are on the sheet, with their riders, in two queries."""
    ids = {canonical_id(e.asset_id, RecordKind.ASSET) for e in entries} - {None}
    if not ids:
        return []
    first, last = _day_bounds(day)
    query = select(Asset).where(
        Asset.id.in_(ids),
        Asset.course_location == site,
        Asset.course_datetime >= first,
        Asset.course_datetime <= last,
    )
    assets: list[Any] = list(session.scalars(query))
    person_ids = {asset.person_id for asset in assets}
    if person_ids:
        assets.extend(session.scalars(select(Person).where(Person.id.in_(person_ids))))
    return assets
