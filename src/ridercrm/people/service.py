"""People rules: creating contacts and leads, reading and finding them."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from ridercrm.ids import RecordKind, canonical_id, new_id
from ridercrm.people import repository
from ridercrm.people.models import CONTACT, LEAD, Person
from ridercrm.people.schemas import PersonCreate


def create_person(session: Session, *, kind: str, data: PersonCreate) -> Person:
    """Store a new contact or lead and return it."""
    record_kind = RecordKind.CONTACT if kind == CONTACT else RecordKind.LEAD
    assert kind in (CONTACT, LEAD)
    person = Person(id=new_id(record_kind), kind=kind, **data.model_dump())
    session.add(person)
    session.flush()
    return person


def find_person(session: Session, raw_id: str) -> Person | None:
    """The person with this id (15 or 18 characters), or None."""
    person_id = canonical_id(raw_id)
    return repository.get(session, person_id) if person_id else None


def search_people(session: Session, *, query: str, limit: int) -> Sequence[Person]:
    """People by name, e-mail or phone."""
    return repository.search(session, query=query, limit=limit)
