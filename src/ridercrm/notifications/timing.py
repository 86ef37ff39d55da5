"""When messages are due: the sites' zones, reminder moments, SMS quiet hours, and SMS
length (GSM-7 or UCS-2 segments). Plain Python, unit-tested without a database."""

from __future__ import annotations

import datetime as dt
import functools
import math
from dataclasses import dataclass
from zoneinfo import ZoneInfo

# Parsed in config, where the settings are validated at start-up; re-exported here.
from ridercrm.config import QuietHours as QuietHours
from ridercrm.config import parse_reminders as parse_reminders
from ridercrm.fields import COURSE_FIRST_YEAR, COURSE_LAST_YEAR, SITE_ZONES

# Course times are the site's local wall time, in the site's zone (fields.SITE_ZONES).
_ZONES = {site.lower(): zone for site, zone in SITE_ZONES.items()}
DEFAULT_ZONE = "Australia/Melbourne"
WALL_TIME = "%Y-%m-%d %H:%M:%S"


def site_zone(location: str | None) -> ZoneInfo:
    """The time zone of a course location (the business's own for an unknown one)."""
    return ZoneInfo(_ZONES.get((location or "").strip().lower(), DEFAULT_ZONE))


@functools.lru_cache(maxsize=4096)
def course_start(course_datetime: str | None, location: str | None) -> dt.datetime | None:
    """A course's start as an aware local time in its site's zone, or None if unknown
    (kept for the next call: a 200-item booking names a few starts many times). A start
    outside the years operation 1 takes (one stored before it checked them) is unknown
    too: year 1 has no moment in UTC to remind at."""
    if not course_datetime:
        return None
    try:
        wall = dt.datetime.strptime(course_datetime, WALL_TIME)
    except ValueError:
        return None
    if not COURSE_FIRST_YEAR <= wall.year <= COURSE_LAST_YEAR:
        return None
    return wall.replace(tzinfo=site_zone(location))


def course_day(course_datetime: str | None) -> dt.date | None:
    """The day of a course written as a date alone ("2026-12-19": operation 1 takes it),
    or None: its time is not known, its day is."""
    if not course_datetime or len(course_datetime) != 10:
        return None
    try:
        day = dt.date.fromisoformat(course_datetime)
    except ValueError:
        return None
    return day if COURSE_FIRST_YEAR <= day.year <= COURSE_LAST_YEAR else None


def to_utc(local: dt.datetime) -> dt.datetime:
    """An aware local time in UTC. A wall time that does not exist (the hour skipped when
    clocks go forward) is read as the zone's rules read it (fold=0: the offset before)."""
    return local.astimezone(dt.UTC)


def reminder_moments(
    start: dt.datetime, offsets: tuple[tuple[str, dt.timedelta], ...]
) -> list[tuple[str, dt.datetime]]:
    """Each reminder's moment in UTC: the elapsed time before the course's real start, so
    "2h" is two hours of the rider's morning even on the day clocks change."""
    begins = to_utc(start)
    return [(label, begins - delta) for label, delta in offsets]


# The GSM 03.38 default alphabet and its extension table (an extension character takes two).
GSM_BASIC = frozenset(
    "@£$¥èéùìòÇ\nØø\rÅåΔ_ΦΓΛΩΠΨΣΘΞÆæßÉ !\"#¤%&'()*+,-./0123456789:;<=>?"
    "¡ABCDEFGHIJKLMNOPQRSTUVWXYZÄÖÑÜ§¿abcdefghijklmnopqrstuvwxyzäöñüà"
)
GSM_EXTENSION = frozenset("^{}\\[~]|€\f")


@dataclass(frozen=True)
class SmsLength:
    encoding: str  # "GSM-7" or "UCS-2"
    units: int  # septets (GSM-7) or UTF-16 code units (UCS-2)
    segments: int


def sms_length(text: str) -> SmsLength:
    """How a text travels as SMS: GSM-7 when every character is in the GSM alphabet
    (160 a message, 153 a part when split), else UCS-2 (70, or 67 a part)."""
    if all(char in GSM_BASIC or char in GSM_EXTENSION for char in text):
        units = sum(2 if char in GSM_EXTENSION else 1 for char in text)
        single, part, encoding = 160, 153, "GSM-7"
    else:
        units = len(text.encode("utf-16-le")) // 2
        single, part, encoding = 70, 67, "UCS-2"
    segments = 1 if units <= single else math.ceil(units / part)
    return SmsLength(encoding, units, segments)


def digest_days(now: dt.datetime, sites: list[str], at: dt.time) -> list[tuple[str, dt.date]]:
    """The staff digests due at ``now`` (aware): for each site whose local wall clock has
    reached ``at`` today, (site, tomorrow's local date). Read on the site's own clock, so
    17:00 is 17:00 at the site on the days clocks change too (a time the change skips is
    reached when the clock jumps past it)."""
    due = []
    for site in sites:
        local = now.astimezone(site_zone(site))
        if local.time().replace(tzinfo=None) >= at:
            due.append((site, local.date() + dt.timedelta(days=1)))
    return due
