"""A merge re-points the merged people's messages to the survivor, so the survivor's page
lists them; an undo points them back (and a course's later messages go with the course)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.duplicates.merge import merge_people, undo_merge
from ridercrm.notifications import service
from ridercrm.notifications.models import PENDING, SKIPPED
from tests.notifications.helpers import book, change, messages

DAYS = dt.timedelta(days=1)


def _listed(client: TestClient, person_id: str) -> set[int]:
    page = client.get(f"/console/people/{person_id}")
    assert page.status_code == 200
    return {int(found) for found in re.findall(r"/messages/(\d+)\"", page.text)}


def test_a_merge_moves_the_messages_and_an_undo_moves_them_back(
    sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    ann, _ann_course = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    other = {"first_name": "Bo", "email": "bo@example.com", "mobile_phone": None}
    bob, bob_course = book(sessions, starts_in=6 * DAYS, person=other)
    with session_scope(sessions, write=True) as session:
        offer = service.queue_seat_offer(
            session,
            person_id=bob,
            product_id="01tDEMO",
            location="somerton",
            course_datetime="2027-01-04 08:30:00",
            offered_until=dt.datetime.now(dt.UTC) + DAYS,
        )
        session.flush()
        offer_ids = {m.id for m in offer}
    bobs = {m.id for m in messages(sessions, person_id=bob)}
    anns = {m.id for m in messages(sessions, person_id=ann)}
    assert offer_ids < bobs
    client = console_as("staff")
    assert _listed(client, ann) == anns

    with session_scope(sessions, write=True) as session:
        _plan, record = merge_people(session, people_ids=[ann, bob], survivor_id=ann)
        assert record is not None
        merge_id = record.id
    assert messages(sessions, person_id=bob) == []
    assert {m.id for m in messages(sessions, person_id=ann)} == anns | bobs
    assert _listed(client, ann) == anns | bobs

    # Bob's course, now the survivor's, is cancelled: its message is written for Ann.
    change(sessions, bob_course, course_status="cancelled")
    [cancelled] = messages(sessions, asset_id=bob_course, kind="cancelled")
    assert cancelled.person_id == ann

    with session_scope(sessions, write=True) as session:
        undo_merge(session, merge_id)
    assert {m.id for m in messages(sessions, person_id=ann)} == anns
    # Bob's own messages come back, with the one his course got while merged.
    assert {m.id for m in messages(sessions, person_id=bob)} == bobs | {cancelled.id}
    assert _listed(client, bob) == bobs | {cancelled.id}


def test_a_merge_carries_a_members_reminder_stop_to_the_survivor_and_an_undo_takes_it_back(
    sessions: sessionmaker[Session],
) -> None:
    """A rider who stopped reminders, stored twice, is not reminded again through the
    record that survives a merge (it now holds their courses and address)."""
    ann, _ann_course = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    other = {"first_name": "Bo", "email": "bo@example.com", "mobile_phone": None}
    bob, _bob_course = book(sessions, starts_in=6 * DAYS, person=other)
    with session_scope(sessions, write=True) as session:
        assert service.stop_reminders(session, person_id=bob, stopped_by="stop link")
    assert {m.status for m in messages(sessions, person_id=ann, kind="reminder")} == {PENDING}

    with session_scope(sessions, write=True) as session:
        _plan, record = merge_people(session, people_ids=[ann, bob], survivor_id=ann)
        assert record is not None
        merge_id = record.id
    with session_scope(sessions) as session:
        stop = service.reminders_stopped(session, ann)
        assert stop is not None
        assert "stop link" in stop.stopped_by
    assert {m.status for m in messages(sessions, person_id=ann, kind="reminder")} == {SKIPPED}

    with session_scope(sessions, write=True) as session:
        undo_merge(session, merge_id)
    with session_scope(sessions) as session:
        assert service.reminders_stopped(session, ann) is None
        assert service.reminders_stopped(session, bob) is not None
