"""Reminder moments, quiet hours and SMS lengths (no database)."""

from __future__ import annotations

import datetime as dt

import pytest

from ridercrm.notifications.compose import course_context
from ridercrm.notifications.timing import (
    QuietHours,
    course_start,
    parse_reminders,
    reminder_moments,
    site_zone,
    sms_length,
)

UTC = dt.UTC


def _moments(when: str, site: str, reminders: str = "48h,2h") -> dict[str, dt.datetime]:
    start = course_start(when, site)
    assert start is not None
    return dict(reminder_moments(start, parse_reminders(reminders)))


def test_a_start_outside_the_years_a_course_may_fall_in_has_no_moment() -> None:
    # Stored before operation 1 checked the years: year 1 in Melbourne is before UTC's
    # first day, so no reminder could be timed; the course is read as of no known start.
    assert course_start("0001-01-01 10:00:00", "somerton") is None
    assert course_start("9999-12-31 23:00:00", "slacks creek") is None
    earliest = _moments("1900-01-01 00:00:00", "somerton")
    latest = _moments("9998-12-31 23:59:59", "st ives")
    assert earliest["48h"] == dt.datetime(1899, 12, 29, 14, 0, tzinfo=UTC)  # +10:00 then
    assert latest["2h"] == dt.datetime(9998, 12, 31, 10, 59, 59, tzinfo=UTC)  # AEDT


def test_melbourne_course_on_the_morning_clocks_go_forward() -> None:
    # 4 October 2026: Melbourne goes from +10 to +11 at 02:00. A course at 08:30 that
    # morning starts at 21:30 UTC the day before.
    moments = _moments("2026-10-04 08:30:00", "somerton")
    assert moments["2h"] == dt.datetime(2026, 10, 3, 19, 30, tzinfo=UTC)
    assert moments["2h"].astimezone(site_zone("somerton")).strftime("%H:%M %Z") == "06:30 AEDT"
    # 48 hours of real time before, across the change: 07:30 on the Friday (still +10).
    assert moments["48h"] == dt.datetime(2026, 10, 1, 21, 30, tzinfo=UTC)
    assert moments["48h"].astimezone(site_zone("kilsyth")).strftime("%d %H:%M %Z") == (
        "02 07:30 AEST"
    )


def test_melbourne_course_on_the_morning_clocks_go_back() -> None:
    # 5 April 2026: Melbourne goes from +11 to +10 at 03:00.
    moments = _moments("2026-04-05 08:30:00", "tullamarine")
    assert moments["2h"] == dt.datetime(2026, 4, 4, 20, 30, tzinfo=UTC)
    assert moments["48h"] == dt.datetime(2026, 4, 2, 22, 30, tzinfo=UTC)
    assert moments["48h"].astimezone(site_zone("tullamarine")).strftime("%H:%M") == "09:30"


def test_brisbane_has_no_daylight_saving_on_the_same_morning() -> None:
    moments = _moments("2026-10-04 08:30:00", "slacks creek")
    assert moments["2h"] == dt.datetime(2026, 10, 3, 20, 30, tzinfo=UTC)
    assert moments["48h"] == dt.datetime(2026, 10, 1, 22, 30, tzinfo=UTC)
    # The alias-free canonical spellings and mixed case reach the same zone.
    assert site_zone("Toowoomba") == site_zone("ipswitch") == site_zone("slacks creek")


def test_sydney_site() -> None:
    assert _moments("2026-12-05 08:30:00", "st ives", "1h")["1h"] == dt.datetime(
        2026, 12, 4, 20, 30, tzinfo=UTC
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("48h,2h", [("48h", 172800), ("2h", 7200)]),
        ("1d, 90m ,30s", [("1d", 86400), ("90m", 5400), ("30s", 30)]),
        ("", []),
        ("1m", [("1m", 60)]),
    ],
)
def test_parse_reminders(text: str, expected: list[tuple[str, int]]) -> None:
    parsed = [(label, int(delta.total_seconds())) for label, delta in parse_reminders(text)]
    assert parsed == expected


@pytest.mark.parametrize("bad", ["48", "2 hours", "-1h", "h"])
def test_parse_reminders_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match="is not a time before the course"):
        parse_reminders(bad)


@pytest.mark.parametrize("far", ["367d", "999999999d", "1000000000d", "99999999999999999999999s"])
def test_a_reminder_more_than_a_year_ahead_is_refused_by_name(far: str) -> None:
    """999999999d started the service and made every booking a 500 (OverflowError);
    1000000000d stopped it with Python's words, not the setting's."""
    with pytest.raises(ValueError, match="is more than a year before the course"):
        parse_reminders(f"48h,{far}")
    assert parse_reminders("366d")[0][1] == dt.timedelta(days=366)


def test_quiet_hours_overnight() -> None:
    quiet = QuietHours.parse("21:00-08:00")
    assert quiet is not None
    zone = site_zone("somerton")
    evening = dt.datetime(2026, 12, 4, 22, 15, tzinfo=zone)  # 22:15 local
    assert quiet.next_allowed(evening.astimezone(UTC), zone) == dt.datetime(
        2026, 12, 5, 8, 0, tzinfo=zone
    )
    early = dt.datetime(2026, 12, 5, 6, 30, tzinfo=zone)
    assert quiet.next_allowed(early.astimezone(UTC), zone) == dt.datetime(
        2026, 12, 5, 8, 0, tzinfo=zone
    )
    day = dt.datetime(2026, 12, 5, 12, 0, tzinfo=zone).astimezone(UTC)
    assert quiet.next_allowed(day, zone) == day
    assert QuietHours.parse("off") is None


def test_quiet_hours_follow_the_site_zone() -> None:
    quiet = QuietHours.parse("21:00-08:00")
    assert quiet is not None
    # 21:30 UTC on 4 Dec: 08:30 in Melbourne (allowed), 07:30 in Brisbane (quiet).
    moment = dt.datetime(2026, 12, 4, 21, 30, tzinfo=UTC)
    assert quiet.next_allowed(moment, site_zone("somerton")) == moment
    assert quiet.next_allowed(moment, site_zone("ipswitch")) == dt.datetime(
        2026, 12, 4, 22, 0, tzinfo=UTC
    )


@pytest.mark.parametrize("bad", ["21:00", "9pm-8am", "08:00-08:00"])
def test_quiet_hours_refuses(bad: str) -> None:
    with pytest.raises(ValueError, match=r"21:00-08:00|start and end together"):
        QuietHours.parse(bad)


def test_sms_length_gsm7_and_ucs2() -> None:
    assert sms_length("a" * 160).segments == 1
    assert sms_length("a" * 161).segments == 2  # 153 a part
    assert sms_length("a" * 306).segments == 2
    assert sms_length("a" * 307).segments == 3
    # Extension characters count twice.
    assert sms_length("€" * 80).units == 160
    assert sms_length("€" * 81).segments == 2
    # One character outside GSM-7 makes the whole text UCS-2: 70 a message, 67 a part.
    ucs = sms_length("See you Saturday 🏍" + "a" * 50)
    assert ucs.encoding == "UCS-2"
    assert ucs.segments == 1
    assert sms_length("ł" * 71).segments == 2
    assert sms_length("Ça va? Très bien.").encoding == "GSM-7"


def test_a_course_end_before_its_start_is_not_written_in_a_message() -> None:
    """Operation 1 stores the times as sent; a message does not tell a rider the course
    ends a year before it starts (the invitation already lasts eight hours then)."""

    def shown(end: str) -> dict[str, object]:
        return course_context(
            product_name="Learner Approved Pre-Licence",
            location="somerton",
            course_datetime="2027-01-01 08:00:00",
            course_date_end=end,
            booking_number=None,
            status="booked",
        )

    before = shown("2026-01-01 09:00:00")
    assert (before["starts"], before["ends"]) == ("Friday 1 January 2027, 8 am", "")
    assert shown("2027-01-01 16:30:00")["ends"] == "4:30 pm"
