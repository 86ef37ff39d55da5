"""Migration 0018 indexes the records stored before it by the people and booking numbers
of the courses they name (a day sheet's record names only courses)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Engine, text
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from ridercrm.migrate import downgrade, upgrade
from ridercrm.staff.audit_search import Filters, search
from tests.courses import builders

RECORD = "a0A000000000018AAA"


def test_the_migration_indexes_stored_records_by_their_courses_people_and_bookings(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session)
        person = builders.person(session)
        course = builders.course(session, person, lap, booking_number="HB-18")
        stored = session.get(Asset, course)
        assert stored is not None
    downgrade(engine, "0015")
    now = dt.datetime(2026, 11, 1, tzinfo=dt.UTC)
    with session_scope(sessions, write=True) as session:
        # As the day sheet stored it before: its form names the course alone.
        session.execute(
            text(
                "INSERT INTO audit_records (id, created_at, operation, method, path,"
                " request_body, response_status, duration_ms) VALUES (:id, :now,"
                " 'console.daysheet', 'POST', '/console/daysheet', :body, 200, 1)"
            ),
            {"id": RECORD, "now": now, "body": f'{{"result-{course}": "pass A"}}'},
        )
        session.execute(
            text(
                "INSERT INTO audit_subjects (subject, created_at, audit_id) VALUES (:s, :now, :id)"
            ),
            {"s": "course:" + course[:15], "now": now, "id": RECORD},
        )
    upgrade(engine)
    with session_scope(sessions) as session:
        for filters in (Filters(person=person), Filters(booking="HB-18")):
            records, _following = search(session, filters)
            assert [record.id for record in records] == [RECORD]
        assert search(session, Filters(person=builders.person(session)))[0] == []
