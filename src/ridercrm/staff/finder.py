"""Find a person for the console: by name, e-mail, phone, licence or date of birth.

The query is read with the matcher's normalisation (``0412 345 678`` is
``+61412345678``; ``Jon Smyth`` sounds like ``John Smith``) and looked up through the
matcher's blocking keys in ``person_keys`` (one indexed query), plus name prefixes and
the date of birth through their own indexes: no scan of the people table, so the time
stays flat as the store grows. The candidates are ranked by how well they agree.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz import fuzz
from sqlalchemy import ColumnElement, Select, and_, func, or_, select
from sqlalchemy.orm import Session

from ridercrm.people import normalize
from ridercrm.people.blocking import Identity, query_keys
from ridercrm.people.models import Person, PersonKey
from ridercrm.people.repository import starts_with

CANDIDATE_LIMIT = 300
CLOSE_NAME = 75  # rapidfuzz token-sort ratio of a misspelt name still shown
FEW = 5  # fewer found by sound and prefix: look for misspellings by the names' stems
LAST_STEM = 3
FIRST_STEM = 2
_DATE_PATTERNS = (
    (re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})$"), (1, 2, 3)),
    (re.compile(r"^(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})$"), (3, 2, 1)),  # day first (AU)
)


@dataclass(frozen=True)
class Query:
    """What a search text was read as."""

    names: tuple[str, ...]
    email: str | None
    phone: str | None
    licence: str | None
    date_of_birth: dt.date | None


def _date(word: str) -> dt.date | None:
    for pattern, (y, m, d) in _DATE_PATTERNS:
        found = pattern.match(word)
        if found:
            try:
                return dt.date(int(found.group(y)), int(found.group(m)), int(found.group(d)))
            except ValueError:
                return None
    return None


def read_query(text: str) -> Query:
    """Split a search text into a name, an e-mail, a phone or licence, a date of birth."""
    words = text.split()
    email = next((word for word in words if "@" in word), None)
    date_of_birth = None
    rest: list[str] = []
    for word in words:
        if word == email:
            continue
        when = _date(word)
        if when is not None and date_of_birth is None:
            date_of_birth = when
            continue
        rest.append(word)
    names = tuple(
        word for word in rest if any(ch.isalpha() for ch in word) and not _has_digit(word)
    )
    other = " ".join(word for word in rest if word not in names)
    phone = normalize.phone(other) if other and sum(ch.isdigit() for ch in other) >= 8 else None
    licence = normalize.licence(other) if other else None
    return Query(
        names=names,
        email=normalize.email(email) if email else None,
        phone=phone,
        licence=licence,
        date_of_birth=date_of_birth,
    )


def _has_digit(word: str) -> bool:
    return any(ch.isdigit() for ch in word)


def _identity(query: Query, *, first: str | None, last: str | None) -> Identity:
    return Identity.of(
        {
            "first_name": first,
            "last_name": last,
            "date_of_birth": query.date_of_birth,
            "email": query.email,
            "mobile_phone": query.phone,
            "drivers_license": query.licence,
        }
    )


def _keys(query: Query) -> set[int]:
    keys: set[int] = set()
    names = query.names
    splits: list[tuple[str | None, str | None]] = (
        [(names[0], " ".join(names[1:]))] if len(names) >= 2 else [(None, None)]
    )
    if len(names) >= 2:
        splits.append((" ".join(names[:-1]), names[-1]))
    for first, last in splits:
        keys |= query_keys(_identity(query, first=first, last=last))
    if len(names) == 1:
        # One name: with a date of birth, as a given or a family name.
        for first, last in ((names[0], None), (None, names[0])):
            keys |= query_keys(_identity(query, first=first, last=last))
    return keys


def find_people(session: Session, *, text: str, limit: int = 50) -> list[Person]:
    """The people the text may mean, best first; at most ``limit``."""
    text = " ".join(text.split())[:200]
    if not text:
        return []
    query = read_query(text)
    found: dict[str, Person] = {}
    keys = _keys(query)
    if keys:
        owners = (
            select(PersonKey.person_id)
            .where(PersonKey.key.in_(sorted(keys)))
            .limit(CANDIDATE_LIMIT)
        )
        for person in session.scalars(select(Person).where(Person.id.in_(owners))):
            found[person.id] = person
    # The words as the names' stored search forms read them: Greek letters in Latin
    # ones, case and accents gone ("Papad" and "Παπαδ" both find Παπαδόπουλος).
    searched = tuple(normalize.search_words(" ".join(query.names)))
    if searched and not (query.email or query.phone or query.date_of_birth):
        # Name prefixes ("Smi", "ann ngu") through the name indexes.
        for person in session.scalars(_name_prefixes(searched)):
            found.setdefault(person.id, person)
        if len(searched) >= 2 and len(found) < FEW:
            # A misspelt name whose sound differs too ("Anne Nguyn"): the names' first
            # letters, through the name index; kept when the whole name is close.
            wanted = normalize.name(" ".join(query.names))
            for person in session.scalars(_one_name_misspelt(searched)):
                have = normalize.name(f"{person.first_name or ''} {person.last_name}")
                if fuzz.token_sort_ratio(wanted, have) >= CLOSE_NAME:
                    found.setdefault(person.id, person)
    if query.date_of_birth is not None and not query.names:
        statement = (
            select(Person)
            .where(Person.date_of_birth == query.date_of_birth)
            .order_by(Person.last_name, Person.id)
            .limit(CANDIDATE_LIMIT)
        )
        for person in session.scalars(statement):
            found.setdefault(person.id, person)
    ranked = sorted(found.values(), key=lambda person: _rank(query, person))
    return ranked[:limit]


def _rank(query: Query, person: Person) -> tuple[float, str, str, str]:
    score = 0.0
    if query.names:
        wanted = normalize.name(" ".join(query.names))
        have = normalize.name(f"{person.first_name or ''} {person.last_name}")
        score += fuzz.token_sort_ratio(wanted, have)
    if query.email and normalize.email(person.email) == query.email:
        score += 200
    if query.phone and query.phone in {
        normalize.phone(person.mobile_phone),
        normalize.phone(person.home_phone),
    }:
        score += 200
    if query.licence and normalize.licence(person.drivers_license) == query.licence:
        score += 200
    if query.date_of_birth and person.date_of_birth == query.date_of_birth:
        score += 100
    if person.merged_into:
        score -= 50  # merged records stand for their survivor: shown after it
    return (-score, person.last_name.lower(), (person.first_name or "").lower(), person.id)


def people_of(session: Session, ids: Sequence[str]) -> list[Person]:
    return list(session.scalars(select(Person).where(Person.id.in_(ids))))


def _one_name_misspelt(names: tuple[str, ...]) -> Select[Any]:
    """People whose names start as the query's do: a range of the family-name index,
    cut at CANDIDATE_LIMIT (no sort)."""
    first, last = names[0], " ".join(names[1:])
    return (
        select(Person)
        .where(
            starts_with(Person.last_name_search, last[:LAST_STEM]),
            _given_starts(first[:FIRST_STEM]),
        )
        .limit(CANDIDATE_LIMIT)
    )


def _given_starts(stem: str) -> ColumnElement[bool]:
    # Not through the given-name index: the family name's range is far more selective
    # (SQLite has no statistics to know it), and this is read from the same rows.
    return func.substr(Person.first_name_search, 1, len(stem)) == stem


def _name_prefixes(names: tuple[str, ...]) -> Select[Any]:
    """People whose names start with the words typed ("Smi", "ann ngu"), either order."""
    words = list(names)
    if len(words) == 1:
        condition = or_(
            starts_with(Person.last_name_search, words[0]),
            starts_with(Person.first_name_search, words[0]),
        )
    else:
        first, last = words[0], " ".join(words[1:])
        condition = or_(
            and_(starts_with(Person.last_name_search, last), _given_starts(first)),
            and_(
                starts_with(Person.last_name_search, words[-1]),
                _given_starts(" ".join(words[:-1])),
            ),
            starts_with(Person.last_name_search, " ".join(words)),
        )
    return select(Person).where(condition).limit(CANDIDATE_LIMIT)
