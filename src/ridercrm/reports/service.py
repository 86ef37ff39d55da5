"""The dashboard's statistics over a chosen period, as plain data.

Every figure counts courses by their course date (the local day the course runs, as
the client wrote it), so a week's bookings are the courses that week holds, whenever
they were booked; see docs/decisions.md (Dashboard).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from ridercrm.courses import rules
from ridercrm.errors import DomainError
from ridercrm.fields import (
    BOOKING_SOURCES,
    COURSE_FIRST_YEAR,
    COURSE_LAST_YEAR,
    COURSE_LOCATIONS,
)
from ridercrm.reports import repository
from ridercrm.reports.models import INSTRUCTOR, PRODUCT, SITE, SOURCE

DEFAULT_WEEKS = 12
MAX_WEEKS = 53
NOT_GIVEN = "not given"


class PeriodError(DomainError, ValueError):
    """The chosen period cannot be reported on; the message says why."""


@dataclass(frozen=True)
class Period:
    """Whole weeks, Monday to Sunday."""

    first: dt.date  # a Monday
    last: dt.date  # a Sunday

    @property
    def weeks(self) -> list[dt.date]:
        count = (self.last - self.first).days // 7 + 1
        return [self.first + dt.timedelta(weeks=i) for i in range(count)]


def monday(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def period_of(start: dt.date | None, end: dt.date | None, *, today: dt.date) -> Period:
    """The whole weeks from ``start``'s to ``end``'s; by default the 12 up to this week."""
    for name, day in (("from", start), ("to", end)):
        if day is not None and not COURSE_FIRST_YEAR <= day.year <= COURSE_LAST_YEAR:
            raise PeriodError(
                f"{name}: must be in the years {COURSE_FIRST_YEAR} to {COURSE_LAST_YEAR}"
            )
    last = monday(end or today) + dt.timedelta(days=6)
    first = monday(start) if start else last - dt.timedelta(days=7 * DEFAULT_WEEKS - 1)
    if first > last:
        raise PeriodError("from: the period must start before it ends")
    if (last - first).days + 1 > 7 * MAX_WEEKS:
        raise PeriodError(f"to: a period is at most {MAX_WEEKS} weeks")
    return Period(first, last)


@dataclass
class WeeklySeries:
    """Counts per week for each label, labels in a fixed order."""

    weeks: list[dt.date]
    series: dict[str, list[int]]

    @property
    def totals(self) -> list[int]:
        return [sum(column) for column in zip(*self.series.values(), strict=True)] or [
            0 for _ in self.weeks
        ]

    @property
    def total(self) -> int:
        return sum(self.totals)


@dataclass(frozen=True)
class PassRate:
    label: str
    passed: int
    failed: int

    @property
    def completed(self) -> int:
        return self.passed + self.failed

    @property
    def rate(self) -> float:
        return self.passed / self.completed if self.completed else 0.0


@dataclass
class Dashboard:
    period: Period
    bookings_by_location: WeeklySeries
    bookings_by_source: WeeklySeries
    cancellations_by_location: WeeklySeries
    pass_by_location: list[PassRate]
    pass_by_instructor: list[PassRate]
    pass_by_product: list[PassRate]
    overall: PassRate = field(default_factory=lambda: PassRate("all", 0, 0))


def _ordered(known: tuple[str, ...], found: set[str]) -> list[str]:
    """Known labels first in their own order, then any others alphabetically."""
    return [label for label in known if label in found] + sorted(found - set(known))


def _weekly(
    weeks: list[dt.date], counts: dict[tuple[dt.date, str], int], known: tuple[str, ...]
) -> WeeklySeries:
    index = {week: i for i, week in enumerate(weeks)}
    labels = _ordered(known, {label for _week, label in counts})
    series = {label: [0] * len(weeks) for label in labels}
    for (week, label), count in counts.items():
        series[label][index[week]] += count
    return WeeklySeries(weeks=weeks, series=series)


def _rates(tally: dict[str, list[int]]) -> list[PassRate]:
    rates = [PassRate(label, passed, failed) for label, (passed, failed) in tally.items()]
    return sorted(rates, key=lambda r: (-r.completed, r.label))


def dashboard(session: Session, *, period: Period) -> Dashboard:
    """Bookings, cancellations and pass rates of the courses dated in ``period``."""
    first, last = period.first, period.last
    booked: dict[tuple[dt.date, str], int] = defaultdict(int)
    cancelled: dict[tuple[dt.date, str], int] = defaultdict(int)
    locations: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for week, location, status, count in repository.weekly(
        session, dimension=SITE, first=first, last=last
    ):
        key = (dt.date.fromisoformat(week), location or NOT_GIVEN)
        booked[key] += count
        if status == rules.CANCELLED:
            cancelled[key] += count
        elif status in COMPLETED:
            locations[location or NOT_GIVEN][COMPLETED.index(status)] += count
    by_source: dict[tuple[dt.date, str], int] = defaultdict(int)
    for week, source, _status, count in repository.weekly(
        session, dimension=SOURCE, first=first, last=last
    ):
        by_source[(dt.date.fromisoformat(week), source or NOT_GIVEN)] += count
    instructors = _completed(session, INSTRUCTOR, period)
    products = _completed(session, PRODUCT, period)
    names = repository.product_names(session, products)
    weeks = period.weeks
    by_location = _rates(locations)
    return Dashboard(
        period=period,
        bookings_by_location=_weekly(weeks, booked, COURSE_LOCATIONS),
        bookings_by_source=_weekly(weeks, by_source, BOOKING_SOURCES),
        cancellations_by_location=_weekly(weeks, cancelled, COURSE_LOCATIONS),
        pass_by_location=by_location,
        pass_by_instructor=_rates(instructors),
        pass_by_product=_rates({names.get(pid, pid): tally for pid, tally in products.items()}),
        overall=PassRate(
            "all", sum(r.passed for r in by_location), sum(r.failed for r in by_location)
        ),
    )


COMPLETED = (rules.PASSED, rules.FAILED)  # a tally is [passed, failed]


def _completed(session: Session, dimension: str, period: Period) -> dict[str, list[int]]:
    """[passed, failed] per label of ``dimension`` over the period."""
    tally: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for label, status, count in repository.totals(
        session, dimension=dimension, first=period.first, last=period.last, statuses=COMPLETED
    ):
        tally[label or NOT_GIVEN][COMPLETED.index(status)] += count
    return tally
