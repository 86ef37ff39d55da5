"""The person_keys index: each person's blocking keys, kept in step with their row.

The people service notes who it adds or changes (``note_new_person``,
``note_person_change``); just before the transaction commits, ``write_pending_keys``
brings those people's keys in step, once each. The two listeners are registered on a
session factory with :func:`keep_keys` (the app's, the CLI's, the tests'), not on every
``Session`` of the process: a session that writes people without them would leave the
index stale, so noting a person in such a session is an error.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import delete, event, insert
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

from ridercrm.people.blocking import Identity, stored_keys
from ridercrm.people.models import Person, PersonKey

_KEEPS_KEYS = "ridercrm.keeps_person_keys"


def keep_keys(factory: sessionmaker[Session]) -> sessionmaker[Session]:
    """Keep the person_keys index of every session ``factory`` makes in step; return it."""
    if not event.contains(factory, "before_commit", write_pending_keys):
        event.listen(factory, "after_soft_rollback", forget_rolled_back_notes)
        event.listen(factory, "before_commit", write_pending_keys)
    info = dict(factory.kw.get("info") or {})
    info[_KEEPS_KEYS] = True
    factory.configure(info=info)
    return factory


def identity_of(person: Any) -> Identity:
    """The identifying values of a stored person (an ORM row or anything with its fields)."""
    return Identity.of(person)


def key_rows(person_id: str, identity: Identity) -> list[dict[str, Any]]:
    """Rows of the person_keys table for one person, for bulk inserts (import)."""
    return [{"key": key, "person_id": person_id} for key in stored_keys(identity)]


_PENDING = "ridercrm.pending_keys"
_NOTED_IN = "ridercrm.pending_keys_noted_in"


def _remember(session: Session, person_id: str, before: Identity | None) -> None:
    if not session.info.get(_KEEPS_KEYS):
        raise RuntimeError(
            "this session's factory does not keep person keys: wrap it in people.index.keep_keys"
        )
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
    added: list[dict[str, Any]] = []
    for person_id, before in pending.items():
        person = session.get(Person, person_id)
        if person is None:
            continue
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
