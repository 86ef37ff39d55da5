"""Storing and finding blocking keys."""

from __future__ import annotations

from collections.abc import Collection
from functools import lru_cache
from typing import Any

from sqlalchemy import TextClause, delete, event, insert, text
from sqlalchemy.orm import Session, SessionTransaction

from ridercrm.matching.keys import Identity, stored_keys
from ridercrm.matching.models import PersonKey

# At most this many people per key: a key shared by more (a common name pair at a
# million people) is a weak one, and the others find the person.
KEY_CAP = 50


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
        city=getattr(person, "city", None),
    )


def key_rows(person_id: str, identity: Identity) -> list[dict[str, Any]]:
    """Rows of the person_keys table for one person, for bulk inserts (import)."""
    return [{"key": key, "person_id": person_id} for key in stored_keys(identity)]


_PENDING = "ridercrm.pending_keys"
_NOTED_IN = "ridercrm.pending_keys_noted_in"


def _remember(session: Session, person_id: str, before: Identity | None) -> None:
    session.info.setdefault(_PENDING, {})[person_id] = before
    # The (sub)transaction it was noted in: if that rolls back, the note goes with it.
    noted_in = session.get_nested_transaction() or session.get_transaction()
    session.info.setdefault(_NOTED_IN, {})[person_id] = noted_in


def note_new_person(session: Session, person_id: str) -> None:
    """Remember to store the keys of a person added in this transaction."""
    _remember(session, person_id, None)


def note_person_change(session: Session, person: Any) -> None:
    """Remember a person's identity before this transaction first changes it."""
    if person.id not in session.info.get(_PENDING, {}):
        _remember(session, person.id, identity_of(person))


@event.listens_for(Session, "after_soft_rollback")
def forget_rolled_back_notes(session: Session, previous_transaction: SessionTransaction) -> None:
    """Forget what a rolled-back savepoint (or transaction) noted.

    Its changes are undone and, on PostgreSQL, the row locks taken in it are released:
    another transaction may change the person before this one changes them again (an
    operation 1 item retried after a concurrent request stored the same booking number).
    The identity noted then is no longer the stored one; a key difference computed from
    it would leave stale keys behind or insert keys that already exist.
    """
    noted: dict[str, SessionTransaction | None] | None = session.info.get(_NOTED_IN)
    if not noted:
        return
    # A failed flush reports its own subtransaction; what the database rolled back is
    # the savepoint (or transaction) around it.
    rolled_back = previous_transaction
    while not rolled_back.nested and rolled_back.parent is not None:
        rolled_back = rolled_back.parent
    pending: dict[str, Identity | None] = session.info.get(_PENDING, {})
    for person_id, transaction in list(noted.items()):
        while transaction is not None and transaction is not rolled_back:
            transaction = transaction.parent
        if transaction is not None:
            del noted[person_id]
            pending.pop(person_id, None)


@event.listens_for(Session, "before_commit")
def write_pending_keys(session: Session) -> None:
    """Bring the keys of every person written in this transaction in step, once.

    Runs just before the commit, so a batch of 200 items writes its keys in two
    statements, not 400. A person whose changes were rolled back with their item's
    savepoint has reverted to the stored values, so nothing is written for them; a
    person whose insert was rolled back no longer exists and is skipped.
    """
    session.info.pop(_NOTED_IN, None)
    pending: dict[str, Identity | None] | None = session.info.pop(_PENDING, None)
    if not pending:
        return
    from ridercrm.duplicates.recheck import mark_touched
    from ridercrm.people.models import Person

    added: list[dict[str, Any]] = []
    touched: list[str] = []
    for person_id, before in pending.items():
        person = session.get(Person, person_id)
        if person is None:
            continue
        touched.append(person_id)
        new = stored_keys(identity_of(person))
        old = stored_keys(before) if before is not None else set()
        if old - new:
            session.execute(
                delete(PersonKey).where(
                    PersonKey.person_id == person_id, PersonKey.key.in_(old - new)
                )
            )
        added.extend({"key": key, "person_id": person_id} for key in new - old)
    if added:
        session.execute(insert(PersonKey), added)
    # The same people are re-checked for duplicates after the commit (once scanned).
    mark_touched(session, touched)


@lru_cache(maxsize=64)
def _lookup(count: int) -> TextClause:
    """One statement for ``count`` keys, each key's people capped (built once per count)."""
    part = "SELECT person_id FROM (SELECT person_id FROM person_keys WHERE key = :k{n} LIMIT :cap) AS p{n}"
    return text(" UNION ALL ".join(part.format(n=n) for n in range(count)))


def candidate_ids(session: Session, keys: Collection[int]) -> set[str]:
    """Ids of the people stored under any of the keys, at most KEY_CAP a key (index look-ups)."""
    if not keys:
        return set()
    params: dict[str, int] = {f"k{n}": key for n, key in enumerate(sorted(keys))}
    params["cap"] = KEY_CAP
    return set(session.scalars(_lookup(len(keys)), params).all())
