"""The person_keys index: each person's blocking keys, kept in step with their row.

The people service notes who it adds or changes (``note_new_person``,
``note_person_change``) with the session's unit of work (``PERSON_KEYS``,
ridercrm.unit_of_work); when the transaction commits, :func:`write_keys` brings those
people's keys in step, once each. A note made in a savepoint that rolls back is dropped
with it: its changes are undone (a person whose insert rolled back gets no keys). A
session whose factory has no unit of work refuses the note: the index would go stale.
"""

from __future__ import annotations

from typing import Any, cast

from sqlalchemy import Table, bindparam, select
from sqlalchemy.orm import Session
from sqlalchemy.orm.util import identity_key

from ridercrm.db import bulk_insert, chunks
from ridercrm.people.blocking import Identity, stored_keys
from ridercrm.people.models import Person, PersonKey
from ridercrm.unit_of_work import Effect, memo

KEYS_TABLE = cast(Table, PersonKey.__table__)


def identity_of(person: Any) -> Identity:
    """The identifying values of a stored person (an ORM row or anything with its fields)."""
    return Identity.of(person)


def key_rows(person_id: str, identity: Identity) -> list[dict[str, Any]]:
    """Rows of the person_keys table for one person, for bulk inserts (import)."""
    return [{"key": key, "person_id": person_id} for key in stored_keys(identity)]


def note_new_person(session: Session, person: Any) -> None:
    """Remember to store the keys of a person added in this transaction."""
    PERSON_KEYS.note(session, person.id, None)
    _hold(session, person)


def note_person_change(session: Session, person: Any) -> None:
    """Remember a person's identity before this transaction first changes it.

    A note made in a savepoint that rolls back is dropped with it: its changes are
    undone and, on PostgreSQL, the row locks taken in it are released, so another
    transaction may change the person before this one changes them again (an operation 1
    item retried after a concurrent request stored the same booking number). The
    identity noted then is no longer the stored one; a key difference computed from it
    would leave stale keys behind or insert keys that already exist.
    """
    if person.id not in PERSON_KEYS.pending(session):
        PERSON_KEYS.note(session, person.id, identity_of(person))
        _hold(session, person)


_HELD = "people.index.held"


def _hold(session: Session, person: Any) -> None:
    """Keep a noted person in memory until the transaction ends: the session holds its
    rows weakly, and a row flushed and no longer referred to (a booking's people, once
    the booking has returned) was gone by the commit, read again by :func:`write_keys`
    (a SELECT of 300 people at a 200-item booking's commit)."""
    memo(session).setdefault(_HELD, []).append(person)


def write_keys(session: Session, pending: dict[str, Identity | None]) -> None:
    """Bring the keys of every person noted in this transaction in step, once.

    Runs just before the outermost commit, so a batch of 200 items writes its keys in
    one executemany (before the unit of work, at every item savepoint's release). A person whose changes were rolled back with their item's
    savepoint has reverted to the stored values, so nothing is written for them; a
    person whose insert was rolled back no longer exists and is skipped.
    """
    people = _people(session, list(pending))
    dropped: list[dict[str, Any]] = []
    added: list[tuple[int, str]] = []
    for person_id, before in pending.items():
        person = people.get(person_id)
        if person is None:
            continue
        new = stored_keys(identity_of(person))
        old = stored_keys(before) if before is not None else set()
        dropped.extend({"k": key, "p": person_id} for key in old - new)
        added.extend((key, person_id) for key in new - old)
    if dropped:
        session.connection().execute(
            KEYS_TABLE.delete().where(
                KEYS_TABLE.c.key == bindparam("k"), KEYS_TABLE.c.person_id == bindparam("p")
            ),
            dropped,
        )
    bulk_insert(session, KEYS_TABLE, ("key", "person_id"), added, copy=True)


def _people(session: Session, ids: list[str]) -> dict[str, Person]:
    """The people of ``ids`` that exist, by id: those the session holds as they are, the
    others read in a few statements (not one ``session.get`` each)."""
    found: dict[str, Person] = {}
    missing: list[str] = []
    for person_id in ids:
        held = session.identity_map.get(identity_key(Person, person_id))
        if held is not None:
            found[person_id] = held
        else:
            missing.append(person_id)
    for chunk in chunks(missing, _CHUNK):
        found.update((p.id, p) for p in session.scalars(select(Person).where(Person.id.in_(chunk))))
    return found


_CHUNK = 500


PERSON_KEYS: Effect[Identity | None] = Effect("person_keys", write_keys, keyed=True)
"""Who this transaction added or changed (id: identity before the change, None if new),
their keys written when it commits (ridercrm.unit_of_work)."""
