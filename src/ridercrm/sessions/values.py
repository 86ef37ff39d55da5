"""The values a session's fields take (their parsing and JSON Schema)."""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from ridercrm import fields

_START = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")
START_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}$"


def parse_start(value: Any) -> str | None:
    """A session's start or end: YYYY-MM-DD HH:MM:SS, the site's local wall time."""
    if value is None or value == "":
        return None
    form = "must be a real date-time written YYYY-MM-DD HH:MM:SS (the site's local time)"
    if not isinstance(value, str) or not _START.match(value.strip()):
        raise ValueError(f"{form} (received {fields.received(value)})")
    try:
        dt.datetime.strptime(value.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        raise ValueError(f"{form} (received {fields.received(value)})") from None
    return value.strip()


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
