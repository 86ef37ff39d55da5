"""The dashboard's statistics over a period (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.reports import service
from ridercrm.reports.service import PassRate, Period, PeriodError, period_of
from tests.courses import builders

TODAY = dt.date(2026, 11, 25)  # a Wednesday


def test_a_period_is_whole_weeks_and_bounded() -> None:
    default = period_of(None, None, today=TODAY)
    assert default.last == dt.date(2026, 11, 29)  # the Sunday of this week
    assert default.first == dt.date(2026, 9, 7)  # a Monday, 12 weeks before
    assert len(default.weeks) == service.DEFAULT_WEEKS
    chosen = period_of(dt.date(2026, 11, 4), dt.date(2026, 11, 4), today=TODAY)
    assert (chosen.first, chosen.last) == (dt.date(2026, 11, 2), dt.date(2026, 11, 8))
    with pytest.raises(PeriodError, match="from:"):
        period_of(dt.date(2026, 12, 1), dt.date(2026, 11, 1), today=TODAY)
    with pytest.raises(PeriodError, match="at most 53 weeks"):
        period_of(dt.date(2025, 1, 1), dt.date(2026, 11, 1), today=TODAY)
    assert len(period_of(dt.date(2025, 11, 1), dt.date(2026, 11, 1), today=TODAY).weeks) == 53
    for edge in (dt.date.min, dt.date.max):
        with pytest.raises(PeriodError, match="years 1900 to 9998"):
            period_of(edge, edge, today=TODAY)


def test_pass_rate_of_nothing_is_zero() -> None:
    assert PassRate("x", 0, 0).rate == 0.0
    assert PassRate("x", 3, 1).rate == 0.75


def test_the_dashboard_counts_bookings_cancellations_and_pass_rates(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner Approved")
        ride = builders.product(session, "RIDE-KIL", "Ride Ready")
        rider = builders.person(session)

        def book(when: str, **fields: str) -> None:
            builders.course(
                session, rider, fields.pop("product", lap), course_datetime=when, **fields
            )

        # Week of Mon 2 Nov.
        book("2026-11-02 08:30:00", course_status="completed - pass", course_feedback="pass A")
        book("2026-11-03 08:30:00", course_status="completed - fail", course_feedback="fail 1")
        book("2026-11-08 23:00:00", course_status="cancelled", booking_source="Phone")
        book(
            "2026-11-04 09:00:00",
            product=ride,
            course_location="kilsyth",
            course_status="completed - pass",
            course_feedback="pass B",
            rider_instructor_1="Jo Park",
            booking_source="In Person",
        )
        # Week of Mon 9 Nov.
        book("2026-11-09 00:00:00", booking_source="Phone")
        book(
            "2026-11-10 08:30:00",
            rider_instructor_1="",
            course_status="completed - pass",
            course_feedback="pass C",
        )
        # Outside the period.
        book("2026-11-01 23:59:59", course_status="completed - fail", course_feedback="fail 2")
        book("2026-11-16 00:00:00")
    period = Period(dt.date(2026, 11, 2), dt.date(2026, 11, 15))
    with session_scope(sessions) as session:
        board = service.dashboard(session, period=period)
    weeks = [dt.date(2026, 11, 2), dt.date(2026, 11, 9)]
    assert board.bookings_by_location.weeks == weeks
    assert board.bookings_by_location.series == {"somerton": [3, 2], "kilsyth": [1, 0]}
    assert board.bookings_by_location.totals == [4, 2]
    assert board.bookings_by_location.total == 6
    assert board.bookings_by_source.series == {
        "Website": [2, 1],
        "Phone": [1, 1],
        "In Person": [1, 0],
    }
    assert board.cancellations_by_location.series == {"somerton": [1, 0]}
    assert board.pass_by_location == [PassRate("somerton", 2, 1), PassRate("kilsyth", 1, 0)]
    assert board.pass_by_instructor == [
        PassRate("Sam Lee", 1, 1),
        PassRate("Jo Park", 1, 0),
        PassRate(service.NOT_GIVEN, 1, 0),
    ]
    assert board.pass_by_product == [
        PassRate("Learner Approved (LAP-SOM)", 2, 1),
        PassRate("Ride Ready (RIDE-KIL)", 1, 0),
    ]
    assert (board.overall.passed, board.overall.failed) == (3, 1)


def test_an_empty_period(sessions: sessionmaker[Session]) -> None:
    period = period_of(None, None, today=TODAY)
    with session_scope(sessions) as session:
        board = service.dashboard(session, period=period)
    assert board.bookings_by_location.series == {}
    assert board.bookings_by_location.totals == [0] * 12
    assert board.pass_by_product == []
    assert board.overall.rate == 0.0
