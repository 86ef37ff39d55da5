"""The values a session's fields take (their parsing and JSON Schema)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ridercrm import fields

# ASCII digits only, as operation 1's course_datetime (fields._DATETIME).
_START = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$", re.ASCII)
# A session's times: real dates with room around them (a day before or after is still a
# date), as the day sheet and the reports take them.
FIRST_YEAR, LAST_YEAR = fields.COURSE_FIRST_YEAR, fields.COURSE_LAST_YEAR
START_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$"


def parse_start(value: Any) -> str | None:
    """A session's start or end: YYYY-MM-DD HH:MM:SS, the site's local wall time."""
    if value is None or value == "":
        return None
    form = "must be a real date-time written YYYY-MM-DD HH:MM:SS (the site's local time)"
    if not isinstance(value, str) or not _START.match(value.strip()):
        raise ValueError(f"{form} (received {fields.received(value)})")
    try:
        moment = dt.datetime.strptime(value.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise ValueError(f"{form} (received {fields.received(value)})") from None
    fields.check_course_year(moment.year)
    return value.strip()


def check_order(start: str | None, end: str | None) -> None:
    """Refuse an end that is not after the start (both YYYY-MM-DD HH:MM:SS, one site's time)."""
    if start and end and end <= start:
        raise ValueError(
            f"course_date_end: must be after course_datetime (received {end}, which is not"
            f" after {start})"
        )


_LOCAL = [{"type": "string", "pattern": START_PATTERN}]
_LOCAL_TEXT = "YYYY-MM-DD HH:MM:SS, the site's local wall time (as operation 1 writes it)."
Start = fields.rule(parse_start, str, _LOCAL, _LOCAL_TEXT, optional=False)
End = fields.rule(parse_start, str | None, _LOCAL, _LOCAL_TEXT)
Location = fields.rule(
    fields.enumeration(fields.COURSE_LOCATIONS),
    str,
    [{"type": "string", "enum": list(fields.COURSE_LOCATIONS)}],
    "One of the interface's sites, in any case (ipswich is an alias of ipswitch).",
    optional=False,
)
