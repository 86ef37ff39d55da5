"""Operations 1 and 2 work on a request's items as a set (issue 23): what the items name
is read in a number of statements that does not grow with the items, and an item that
cannot be applied is refused before it writes, never failing the request at the end."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import new_booking, person_body

from ridercrm.courses import service
from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.people import modify
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.schemas import PersonCreate
from tests.courses.builders import product


@contextmanager
def reads(session: Session) -> Iterator[list[str]]:
    """The SELECT statements the session runs in the block."""
    seen: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    engine = session.get_bind()
    event.listen(engine, "before_cursor_execute", note)
    try:
        yield seen
    finally:
        event.remove(engine, "before_cursor_execute", note)


def _people(sessions: sessionmaker[Session], count: int, tag: str) -> list[str]:
    with session_scope(sessions, write=True) as session:
        return [
            people.create_person(
                session,
                kind=LEAD if n % 2 else CONTACT,
                data=PersonCreate.model_validate(
                    person_body(first_name=f"Rider{tag}{n}", email=f"r{tag}{n}@example.com")
                ),
            ).id
            for n in range(count)
        ]


def _booking_reads(sessions: sessionmaker[Session], product_id: str, count: int) -> int:
    ids = _people(sessions, count, f"b{count}")
    items = [
        new_booking(person_id, product_id, booking_number=f"SET-{count}-{n}")
        for n, person_id in enumerate(ids)
    ]
    with session_scope(sessions, write=True) as session, reads(session) as seen:
        results = service.book_courses(session, items=items, audit_id=new_id(RecordKind.AUDIT))
    assert all(result.delivery for result in results), [r.receipt for r in results]
    again = [
        {"booking_number": item["booking_number"], "course_status": "cancelled"} for item in items
    ]
    with session_scope(sessions, write=True) as session, reads(session) as seen_again:
        results = service.book_courses(session, items=again, audit_id=new_id(RecordKind.AUDIT))
    assert all(result.delivery for result in results), [r.receipt for r in results]
    return len(seen) + len(seen_again)


def test_a_booking_reads_as_many_statements_for_forty_items_as_for_four(
    sessions: sessionmaker[Session],
) -> None:
    with session_scope(sessions, write=True) as session:
        product_id = product(session)
    assert _booking_reads(sessions, product_id, 40) == _booking_reads(sessions, product_id, 4)


def _modify_reads(sessions: sessionmaker[Session], count: int) -> int:
    ids = _people(sessions, count, f"m{count}")
    items = [{"ID": person_id, "city": "Geelong", "street": "1 New Rd"} for person_id in ids]
    with session_scope(sessions, write=True) as session, reads(session) as seen:
        results = modify.modify_each(session, items)
    assert all(result.status for result in results)
    return len(seen)


def test_a_modify_reads_as_many_statements_for_forty_items_as_for_four(
    sessions: sessionmaker[Session],
) -> None:
    assert _modify_reads(sessions, 40) == _modify_reads(sessions, 4)


def test_giving_a_course_the_booking_number_of_another_refuses_that_item_alone(
    sessions: sessionmaker[Session],
) -> None:
    (owner,) = _people(sessions, 1, "owner")
    with session_scope(sessions, write=True) as session:
        product_id = product(session)
        # A course stored without a booking number (the demo's, an old import's).
        unnumbered = Asset(
            id=new_id(RecordKind.ASSET),
            person_id=owner,
            product_id=product_id,
            course_status="booked",
        )
        session.add(unnumbered)
    with session_scope(sessions, write=True) as session:
        results = service.book_courses(
            session,
            items=[
                new_booking(owner, product_id, booking_number="TAKEN-1"),
                {"asset_id": unnumbered.id, "booking_number": "TAKEN-1"},
                {"asset_id": unnumbered.id, "course_location": "kilsyth"},
            ],
            audit_id=new_id(RecordKind.AUDIT),
        )
    taken = results[0].asset_id
    assert [r.delivery for r in results] == [True, False, True]
    assert results[1].receipt == (
        f"booking_number: TAKEN-1 is the booking number of course {taken}."
    )
    with session_scope(sessions) as session:
        stored = session.get(Asset, unnumbered.id)
        assert stored is not None
        assert (stored.booking_number, stored.course_location) == (None, "kilsyth")
