"""Storing and finding blocking keys."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from ridercrm.matching.keys import Identity, stored_keys
from ridercrm.matching.models import PersonKey

MAX_CANDIDATES = 200


def identity_of(person: Any) -> Identity:
    """The identifying values of a stored person (an ORM row or anything with its fields)."""
    return Identity.of(
        first_name=person.first_name,
        last_name=person.last_name,
        date_of_birth=person.date_of_birth,
        email=person.email,
        phones=(person.mobile_phone, person.home_phone),
        drivers_license=person.drivers_license,
        street=person.street,
        postcode=person.postcode,
    )


def key_rows(person_id: str, identity: Identity) -> list[dict[str, Any]]:
    """Rows of the person_keys table for one person, for bulk inserts (import)."""
    return [{"key": key, "person_id": person_id} for key in stored_keys(identity)]


def add_keys(session: Session, person: Any) -> None:
    """Store the keys of a person who has none yet (a new contact or lead)."""
    session.flush()
    rows = key_rows(person.id, identity_of(person))
    if rows:
        session.execute(insert(PersonKey), rows)


def update_keys(session: Session, person_id: str, *, before: Identity, after: Identity) -> None:
    """Write only the keys that change: unchanged keys are not touched, so not locked."""
    old, new = stored_keys(before), stored_keys(after)
    gone, added = old - new, new - old
    if gone:
        session.execute(
            delete(PersonKey).where(PersonKey.person_id == person_id, PersonKey.key.in_(gone))
        )
    if added:
        session.execute(insert(PersonKey), [{"key": key, "person_id": person_id} for key in added])


def candidate_ids(session: Session, keys: Collection[int]) -> Sequence[str]:
    """Ids of the people stored under any of the keys (an index look-up, never a scan)."""
    if not keys:
        return []
    query = select(PersonKey.person_id).where(PersonKey.key.in_(list(keys))).distinct()
    return session.scalars(query.limit(MAX_CANDIDATES)).all()
