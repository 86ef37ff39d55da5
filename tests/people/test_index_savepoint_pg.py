"""person_keys stay in step when an item's savepoint rolls back on PostgreSQL.

A rolled-back savepoint also releases the row locks taken in it, so another
transaction may change the person before this one changes them again (operation 1
does exactly that when a concurrent request stored the same booking number first and
the item is retried). The identity noted before the rolled-back change is then no
longer the stored one and must not be used to compute the key difference.
Found by bench/concurrency_pg.py (duplicate-key 500s and stale keys).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.db import WRITE, build_engine, session_factory, session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.people import service
from ridercrm.people.blocking import stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import CONTACT, Person, PersonKey
from ridercrm.people.schemas import PersonCreate
from ridercrm.products.models import Product
from tests.conftest import truncate_all

pytestmark = pytest.mark.postgresql


class FailedAttempt(Exception):
    """Stands for the IntegrityError that makes operation 1 retry an item."""


@pytest.fixture
def pg_sessions(postgres_ready: str) -> Iterator[sessionmaker[Session]]:
    truncate_all(postgres_ready)
    engine = build_engine(Settings(database_url=postgres_ready))
    yield session_factory(engine)
    engine.dispose()


def _keys_in_step(sessions: sessionmaker[Session], person_id: str) -> tuple[set[int], set[int]]:
    with session_scope(sessions) as session:
        person = session.get(Person, person_id)
        assert person is not None
        expected = stored_keys(identity_of(person))
        stored = set(session.scalars(select(PersonKey.key).where(PersonKey.person_id == person_id)))
    return stored, expected


def _course(person_id: str, product_id: str, number: str) -> Asset:
    return Asset(
        id=new_id(RecordKind.ASSET),
        person_id=person_id,
        product_id=product_id,
        booking_number=number,
        course_status="booked",
    )


def _failed_attempt(session: Session, person_id: str, product_id: str, failure: str) -> None:
    with session.begin_nested():
        person = service.lock_person(session, person_id)
        assert person is not None
        service.apply_changes(session, person, {"email": "one@example.com"})
        if failure == "flush":
            session.add(_course(person_id, product_id, "HB-1"))
        session.flush()
        raise FailedAttempt


@pytest.mark.parametrize("failure", ["exception", "flush"])
def test_keys_follow_a_change_made_by_another_transaction_between_two_attempts(
    pg_sessions: sessionmaker[Session], failure: str
) -> None:
    with session_scope(pg_sessions, write=True) as session:
        product = Product(id=new_id(RecordKind.PRODUCT), name="Course", code="C", price="249.00")
        session.add(product)
        person_id = service.create_person(
            session,
            kind=CONTACT,
            data=PersonCreate(
                first_name="Ann",
                last_name="Lee",
                date_of_birth="1999-04-12",
                email="ann@example.com",
                mobile_phone="0412 345 678",
                postcode="3064",
            ),
        ).id
        session.add(_course(person_id, product.id, "HB-1"))
        product_id = product.id

    first = pg_sessions()
    try:
        first.connection(execution_options=WRITE)
        # Attempt 1 changes the person in a savepoint, then fails: rolled back. As in
        # operation 1, the failure may be the flush of a course whose booking number a
        # concurrent request stored first (SQLAlchemy then reports the rollback of the
        # flush's own subtransaction, not of the savepoint).
        with pytest.raises((FailedAttempt, IntegrityError)):
            _failed_attempt(first, person_id, product_id, failure)

        # Meanwhile another request changes e-mail and mobile, and commits.
        with session_scope(pg_sessions, write=True) as other:
            # The rolled-back savepoint released its row lock: no wait here.
            other.connection().exec_driver_sql("SET LOCAL lock_timeout = '5s'")
            person = service.lock_person(other, person_id)
            assert person is not None
            service.apply_changes(
                other, person, {"email": "two@example.com", "mobile_phone": "0499 000 111"}
            )

        # Attempt 2 changes the e-mail again; its keys must start from the stored ones.
        with first.begin_nested():
            person = service.lock_person(first, person_id)
            assert person is not None
            service.apply_changes(first, person, {"email": "three@example.com"})
            first.flush()
        first.commit()
    finally:
        first.close()

    stored, expected = _keys_in_step(pg_sessions, person_id)
    assert stored == expected, (
        f"{len(stored - expected)} stale and {len(expected - stored)} missing key(s)"
    )
