"""Queries on the people table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session

from ridercrm.people.models import Person


def get(session: Session, person_id: str) -> Person | None:
    return session.get(Person, person_id)


def _prefix(column: Any, prefix: str) -> ColumnElement[bool]:
    # A range rather than LIKE, so the lower() expression index serves both backends.
    expression = func.lower(column)
    upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
    return and_(expression >= prefix, expression < upper)


def search(session: Session, *, query: str, limit: int) -> Sequence[Person]:
    """People whose name starts with the words given, or whose e-mail or phone is the query."""
    text = " ".join(query.split()).lower()
    if not text:
        return []
    conditions: list[ColumnElement[bool]] = []
    if "@" in text:
        conditions.append(func.lower(Person.email) == text)
    digits = "".join(ch for ch in text if ch.isdigit())
    if digits and len(digits) >= 6 and not any(ch.isalpha() for ch in text):
        forms = {query.strip(), digits}
        conditions.append(Person.mobile_phone.in_(forms))
        conditions.append(Person.home_phone.in_(forms))
    words = text.split(" ")
    if len(words) >= 2:
        first, last = words[0], " ".join(words[1:])
        conditions.append(and_(_prefix(Person.first_name, first), _prefix(Person.last_name, last)))
        conditions.append(
            and_(
                _prefix(Person.last_name, words[-1]),
                _prefix(Person.first_name, " ".join(words[:-1])),
            )
        )
        conditions.append(_prefix(Person.last_name, text))
    elif "@" not in text:
        conditions.append(_prefix(Person.last_name, text))
        conditions.append(_prefix(Person.first_name, text))
    statement = (
        select(Person)
        .where(or_(*conditions))
        .order_by(Person.last_name, Person.first_name, Person.id)
        .limit(limit)
    )
    return session.scalars(statement).all()
