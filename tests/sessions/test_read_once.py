"""A booking batch finds its items' sessions in one read (sessions.seats.sessions_read_once):
the sessions of its products at its start times, no other (read by start time, the
products kept in Python: docs/decisions.md, "A course's messages indexed with their status (migration 0026), superseded at the commit")."""

from __future__ import annotations

from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.sessions import seats
from ridercrm.sessions.schemas import SessionCreate
from ridercrm.sessions.service import create_session
from tests.courses import builders

START, OTHER_START = "2027-03-01 08:30:00", "2027-03-08 08:30:00"


def _sessions(sessions: sessionmaker[Session]) -> tuple[str, str, dict[str, str]]:
    with session_scope(sessions, write=True) as session:
        learner = builders.product(session)
        other = builders.product(session, code="ADV-SOM", name="Advanced")
        made = {}
        for name, product, location, start in [
            ("learner", learner, "somerton", START),
            ("learner elsewhere", learner, "kilsyth", START),
            ("learner later", learner, "somerton", OTHER_START),
            ("other product", other, "somerton", START),
        ]:
            data = SessionCreate(product_id=product, location=location, course_datetime=start)
            made[name] = create_session(session, data=data).id
    return learner, other, made


def test_the_batch_knows_the_sessions_of_its_products_at_its_start_times(
    sessions: sessionmaker[Session],
) -> None:
    learner, _other, made = _sessions(sessions)
    with session_scope(sessions) as session, seats.sessions_read_once(session, [learner], [START]):
        _products, _starts, known = session.info[seats._KNOWN]
    assert {ident for ident, _status in known.values()} == {
        made["learner"],
        made["learner elsewhere"],
    }
