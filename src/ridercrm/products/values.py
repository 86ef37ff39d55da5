"""Values of a product's fields beyond the shared ones in ``ridercrm.fields``."""

from __future__ import annotations

from typing import Any

from ridercrm import fields


def parse_per_instructor(value: Any) -> int | None:
    """Trainees per instructor: a whole number from 1 to 100; empty or null: no limit."""
    if value is None or value == "":
        return None
    form = f"must be a whole number from 1 to 100 (received {fields.received(value)})"
    if isinstance(value, bool):
        raise ValueError(form)
    if isinstance(value, str) and value.strip().isdecimal():  # "²" is a digit int() refuses
        value = int(value.strip())
    if not isinstance(value, int) or not 1 <= value <= 100:
        raise ValueError(form)
    return value


TraineesPerInstructor = fields.rule(
    parse_per_instructor,
    int | None,
    [{"type": "integer", "minimum": 1, "maximum": 100}],
    "Most trainees per instructor; a session's seats on sale are at most its instructors"
    " times this (absent: no limit).",
)
