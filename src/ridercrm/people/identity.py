"""A person's identity: the one declaration of the fields matching reads, and the one
constructor that normalises them.

``IDENTITY_FIELDS`` says, for each value of an :class:`Identity`, which of the person's
fields (the interface's names, the same as the people table's columns) it is read from
and how it is normalised. Everything else is derived from it: ``IDENTITY_COLUMNS`` (what
the matcher reads of a candidate, ``matching.repository.CANDIDATE_COLUMNS``), the
identity of a stored person, of a match query, of an imported row, of a staff search. A
new matching field is one line here, its comparison (``matching/compare.py``,
``matching/score.py``) and its column (``people/models.py`` and a migration).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter
from typing import Any

from ridercrm.people import normalize


def _kept(value: Any) -> Any:
    """Kept as given (normalised when compared, or not normalised at all)."""
    return value


def _phones(*numbers: str | None) -> frozenset[str]:
    return frozenset(filter(None, map(normalize.phone, numbers)))


# (the Identity's value, the person's fields it is read from, how they are normalised),
# in the order of Identity's values (tests/people/test_identity.py holds them to it).
IDENTITY_FIELDS: tuple[tuple[str, tuple[str, ...], Callable[..., Any]], ...] = (
    ("first", ("first_name",), normalize.name_tokens),
    ("last", ("last_name",), normalize.name_tokens),
    ("date_of_birth", ("date_of_birth",), _kept),
    ("email", ("email",), normalize.email),
    ("phones", ("mobile_phone", "home_phone"), _phones),
    ("licence", ("drivers_license",), normalize.licence),
    ("raw_street", ("street",), _kept),
    ("postcode", ("postcode",), normalize.postcode),
    ("raw_city", ("city",), _kept),
)
# The person's fields an identity is made of, in the declaration's order.
IDENTITY_COLUMNS: tuple[str, ...] = tuple(
    column for _, columns, _ in IDENTITY_FIELDS for column in columns
)


@dataclass(frozen=True)
class Identity:
    """The normalised identifying values of a person or a query."""

    first: tuple[str, ...]
    last: tuple[str, ...]
    date_of_birth: dt.date | None
    email: str | None
    phones: frozenset[str]
    licence: str | None
    raw_street: str | None = field(repr=False)
    postcode: str | None
    raw_city: str | None = field(default=None, repr=False)

    @cached_property
    def street(self) -> str | None:
        """Normalised only when compared: the blocking keys do not use it."""
        return normalize.street(self.raw_street)

    @cached_property
    def city(self) -> str | None:
        """The suburb or town, compared with the postcode (not used by the keys)."""
        return normalize.city(self.raw_city)

    @classmethod
    def of(cls, source: Any = None, /, **fields: Any) -> Identity:
        """The identity of anything with the person's fields: a mapping of them (an
        imported row), an object with them as attributes (a stored person, a candidate
        row, a match query's details), or the fields as keywords. A field it lacks is
        empty (a query has no ``home_phone``). As keywords, ``phones`` may name a
        person's numbers without saying which is which (tests and benchmarks do)."""
        if source is None:
            if "phones" in fields:
                numbers = [*fields.pop("phones"), None, None]
                if len(numbers) > 4:
                    raise ValueError("phones: a person has at most two numbers")
                fields["mobile_phone"], fields["home_phone"] = numbers[:2]
            source = fields
        if isinstance(source, Mapping):
            values = tuple(map(source.get, IDENTITY_COLUMNS))
        else:
            try:
                values = _ATTRIBUTES(source)  # one C call: this runs per imported person
            except AttributeError:
                values = tuple(getattr(source, name, None) for name in IDENTITY_COLUMNS)
        return cls.of_values(values)

    @classmethod
    def of_values(cls, values: tuple[Any, ...]) -> Identity:
        """The identity of a person's IDENTITY_COLUMNS values, in that order."""
        return cls(*[normalise(*values[start:end]) for start, end, normalise in _SLICES])


_ATTRIBUTES = attrgetter(*IDENTITY_COLUMNS)
# Where each value's fields are in IDENTITY_COLUMNS, and how they are normalised.
_SLICES: list[tuple[int, int, Callable[..., Any]]] = []
for _value, _columns, _normalise in IDENTITY_FIELDS:
    _start = sum(end - start for start, end, _ in _SLICES)
    _SLICES.append((_start, _start + len(_columns), _normalise))
