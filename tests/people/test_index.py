"""The person_keys index is kept by the unit of work of the session factories that have
it (db.session_factory installs it), not by listeners on every Session of the process."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm import unit_of_work
from ridercrm.db import session_factory, session_scope
from ridercrm.people import service
from ridercrm.people.blocking import stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import CONTACT, PersonKey
from ridercrm.people.schemas import PersonCreate


def _keys(sessions: sessionmaker[Session], person_id: str) -> set[int]:
    with session_scope(sessions) as session:
        query = select(PersonKey.key).where(PersonKey.person_id == person_id)
        return set(session.scalars(query))


def test_a_keeping_factory_stores_and_follows_the_keys(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions, write=True) as session:
        person = service.create_person(
            session, kind=CONTACT, data=PersonCreate.model_validate(person_body())
        )
        person_id, before = person.id, stored_keys(identity_of(person))
    assert _keys(sessions, person_id) == before
    with session_scope(sessions, write=True) as session:
        stored = service.find_person(session, person_id)
        assert stored is not None
        service.apply_changes(session, stored, {"email": "someone.else@example.com"})
        after = stored_keys(identity_of(stored))
    assert after != before
    assert _keys(sessions, person_id) == after


def test_a_factory_without_the_unit_of_work_refuses_to_write_people(engine: Engine) -> None:
    plain = sessionmaker(bind=engine)  # no unit of work: the index would go stale
    with (
        pytest.raises(RuntimeError, match="has no unit of work"),
        session_scope(plain, write=True) as session,
    ):
        service.create_person(
            session, kind=CONTACT, data=PersonCreate.model_validate(person_body())
        )


def test_install_registers_its_listeners_once(engine: Engine) -> None:
    factory = unit_of_work.install(unit_of_work.install(session_factory(engine)))
    with session_scope(factory, write=True) as session:
        person = service.create_person(
            session, kind=CONTACT, data=PersonCreate.model_validate(person_body())
        )
        person_id, expected = person.id, stored_keys(identity_of(person))
    assert _keys(factory, person_id) == expected  # twice registered would insert twice and fail


def test_every_new_factory_stores_keys(engine: Engine) -> None:
    """A process may make factories one after another (the tests' apps, a command's
    sessions): each keeps the keys, whatever became of the earlier ones. Asking
    ``event.contains`` whether one was installed answered yes for a new factory whose
    class reused a collected one's id (the flaky match and duplicates-scan tests)."""
    import gc

    # What the test process holds already is frozen out of the collections below (a full
    # pass over a long run's objects takes a second or more); the factories made here are
    # not, so each is still collected and its class's id free to be reused.
    gc.collect()
    gc.freeze()
    missing = 0
    try:
        for _ in range(40):
            factory = session_factory(engine)
            with session_scope(factory, write=True) as session:
                person = service.create_person(
                    session, kind=CONTACT, data=PersonCreate.model_validate(person_body())
                )
                person_id = person.id
            if not _keys(factory, person_id):
                missing += 1
            del factory, session, person
            gc.collect()
    finally:
        gc.unfreeze()
    assert missing == 0
