"""What an audit record is about: the people, courses and booking numbers it names.

Worked out once, from the record as stored (its path and bodies, after any redaction),
and kept as ``audit_subjects`` rows beside it, so "the records of this person" or "of
this booking" is an index range rather than a text search of every body. A person or
course is named by its 15-character id (an 18-character id starts with it); a booking
number by a ``booking_number`` value in a JSON body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

from ridercrm.ids import RecordKind

PERSON, COURSE, BOOKING = "person:", "course:", "booking:"
_PREFIXES = {
    RecordKind.CONTACT.prefix: PERSON,
    RecordKind.LEAD.prefix: PERSON,
    RecordKind.ASSET.prefix: COURSE,
}
_ID = re.compile(
    r"(?<![0-9A-Za-z])("
    + "|".join(_PREFIXES)
    + r")([0-9A-Za-z]{12})(?:[0-9A-Za-z]{3})?(?![0-9A-Za-z])"
)
MAX_SUBJECTS = 1000  # a 200-item batch names a few hundred; beyond that, the first ones


def person(person_id: str) -> str:
    return PERSON + person_id[:15]


def course(asset_id: str) -> str:
    return COURSE + asset_id[:15]


def booking(number: str) -> str:
    return BOOKING + number[:80]


def subjects_of(*texts: str | None) -> set[str]:
    """The subjects named in these texts (a path, a request body, a response body)."""
    found: set[str] = set()
    for text in texts:
        if not text:
            continue
        # Most reads name no record (a product list): a substring test is a tenth of the
        # pattern's scan.
        if not any(prefix in text for prefix in _PREFIXES) and '"booking_number"' not in text:
            continue
        for match in _ID.finditer(text):
            found.add(_PREFIXES[match.group(1)] + match.group(1) + match.group(2))
        if '"booking_number"' in text:
            found.update(booking(number) for number in _booking_numbers(text))
        if len(found) >= MAX_SUBJECTS:
            break
    return set(sorted(found)[:MAX_SUBJECTS])


def _booking_numbers(text: str) -> Iterator[str]:
    try:
        document = json.loads(text)
    except ValueError:
        return
    yield from _values(document, 0)


def _values(node: Any, depth: int) -> Iterator[str]:
    if depth > 20:
        return
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "booking_number" and isinstance(value, str) and _storable(value):
                yield value.strip()
            elif isinstance(value, dict | list):
                yield from _values(value, depth + 1)
    elif isinstance(node, list):
        for value in node:
            yield from _values(value, depth + 1)


def _storable(value: str) -> bool:
    """A booking number worth indexing: not blank, and text a database can store (a JSON
    body may carry a lone surrogate such as ``"\\ud800"``, which no UTF-8 column takes, or
    a NUL, which PostgreSQL's text refuses)."""
    if not value.strip() or "\x00" in value:
        return False
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
