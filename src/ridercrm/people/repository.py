"""Queries on the people table."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, or_, select
from sqlalchemy.orm import Session

from ridercrm.people import normalize
from ridercrm.people.blocking import email_key, phone_key
from ridercrm.people.models import Person, PersonKey


def get(session: Session, person_id: str) -> Person | None:
    return session.get(Person, person_id)


def starts_with(column: Any, prefix: str) -> ColumnElement[bool]:
    """A name's search form (``Person.*_name_search``) starts with ``prefix``, a word
    read as :func:`normalize.search_words` reads one: the admin search's and the
    console finder's."""
    # A range rather than LIKE, so the column's index serves both backends.
    # The least text above every text that starts with the prefix: its last character
    # that is not U+10FFFF, plus one, skipping the surrogates (no text holds them).
    stem = prefix.rstrip("\U0010ffff")
    if not stem:
        return column >= prefix
    following = ord(stem[-1]) + 1
    if 0xD800 <= following <= 0xDFFF:
        following = 0xE000
    return and_(column >= prefix, column < stem[:-1] + chr(following))


def listing(
    session: Session,
    *,
    kind: str | None,
    created_since: dt.datetime | None,
    updated_since: dt.datetime | None,
    limit: int,
    before: Person | None,
) -> tuple[Sequence[Person], str | None]:
    """One page of people, newest first, and the id to page on from (None: the last page).

    Keyset paging on (created_at, id), as the audit search pages: people created
    meanwhile do not shift the pages.
    """
    statement = _filtered(select(Person), kind, created_since, updated_since)
    if before is not None:
        statement = statement.where(
            or_(
                Person.created_at < before.created_at,
                and_(Person.created_at == before.created_at, Person.id < before.id),
            )
        )
    statement = statement.order_by(Person.created_at.desc(), Person.id.desc())
    # One more than the limit tells whether another page exists.
    people = session.scalars(statement.limit(limit + 1)).all()
    if len(people) > limit:
        return people[:limit], people[limit - 1].id
    return people, None


def _filtered(
    statement: Select[Person],
    kind: str | None,
    created_since: dt.datetime | None,
    updated_since: dt.datetime | None,
) -> Select[Person]:
    """``statement`` narrowed to people of ``kind`` created or updated since the times."""
    if kind is not None:
        statement = statement.where(Person.kind == kind)
    if created_since is not None:
        statement = statement.where(Person.created_at >= created_since)
    if updated_since is not None:
        statement = statement.where(Person.updated_at >= updated_since)
    return statement


def search(
    session: Session,
    *,
    query: str,
    limit: int,
    kind: str | None = None,
    created_since: dt.datetime | None = None,
    updated_since: dt.datetime | None = None,
) -> Sequence[Person]:
    """People whose name starts with the words given, or whose e-mail or phone is the query,
    of ``kind`` and created or updated since the times given (the filters apply before the
    limit: ten leads named Smith, not the ten first Smiths' leads).

    E-mail and phone are looked up normalised, through the matching keys, so
    "0412 345 678" finds "+61412345678" and "ANN@Example.com" finds "ann@example.com".
    """
    text = " ".join(query.split()).lower()
    if not text:
        return []
    conditions: list[ColumnElement[bool]] = []
    has_letters = any(ch.isalpha() for ch in text)
    identifier = email_key(text) if "@" in text else None if has_letters else phone_key(text)
    if identifier is not None:
        owners = select(PersonKey.person_id).where(PersonKey.key == identifier)
        conditions.append(Person.id.in_(owners))
    # The words as the names' stored search forms read them: Greek letters in Latin
    # ones, case and accents gone ("Papad" and "Παπαδ" both find Παπαδόπουλος).
    words = normalize.search_words(text) if has_letters else []
    if "@" not in text and words:
        if len(words) >= 2:
            first, last = words[0], " ".join(words[1:])
            conditions.append(
                and_(
                    starts_with(Person.first_name_search, first),
                    starts_with(Person.last_name_search, last),
                )
            )
            conditions.append(
                and_(
                    starts_with(Person.last_name_search, words[-1]),
                    starts_with(Person.first_name_search, " ".join(words[:-1])),
                )
            )
            conditions.append(starts_with(Person.last_name_search, " ".join(words)))
        else:
            conditions.append(starts_with(Person.last_name_search, " ".join(words)))
            conditions.append(starts_with(Person.first_name_search, words[0]))
    if not conditions:
        return []
    statement = select(Person).where(or_(*conditions))
    statement = _filtered(statement, kind, created_since, updated_since)
    statement = statement.order_by(Person.last_name, Person.first_name, Person.id).limit(limit)
    return session.scalars(statement).all()
