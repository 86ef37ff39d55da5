"""Messages are written with the course change they announce: booking, move, cancellation,
result; reminders at their moments, skipped when passed, rescheduled, dropped."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Engine, event
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import new_booking

from ridercrm.courses import service as courses
from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.notifications.models import PENDING, SKIPPED, SUPERSEDED
from ridercrm.notifications.timing import course_start
from tests.courses import builders
from tests.notifications.helpers import book, change, messages, wall_time

DAYS = dt.timedelta(days=1)


def test_booking_writes_confirmation_and_reminders(sessions: sessionmaker[Session]) -> None:
    person_id, asset_id = book(sessions, starts_in=5 * DAYS)
    rows = messages(sessions, asset_id=asset_id)
    kinds = sorted((m.kind, m.channel, m.detail or "") for m in rows)
    assert kinds == [
        ("confirmation", "email", ""),
        ("confirmation", "sms", ""),
        ("reminder", "email", "2h"),
        ("reminder", "email", "48h"),
        ("reminder", "sms", "2h"),
        ("reminder", "sms", "48h"),
    ]
    assert all(m.status == PENDING and m.person_id == person_id for m in rows)
    start = course_start(rows[0].course_datetime, "somerton")
    assert start is not None
    reminder = next(m for m in rows if m.detail == "2h")
    assert reminder.due_at == start.astimezone(dt.UTC) - dt.timedelta(hours=2)
    # Each row has its own stable key (the Message-ID's local part).
    assert len({m.key for m in rows}) == len(rows)


def test_a_reminder_whose_moment_passed_is_skipped_not_sent_late(
    sessions: sessionmaker[Session],
) -> None:
    _person, asset_id = book(sessions, starts_in=dt.timedelta(hours=5))
    reminders = {m.detail: m for m in messages(sessions, asset_id=asset_id, kind="reminder")}
    assert {m.status for m in reminders.values() if m.detail == "48h"} == {SKIPPED}
    assert "passed" in (reminders["48h"].reason or "")
    assert reminders["2h"].status == PENDING


def test_no_sms_without_a_mobile(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    assert {m.channel for m in messages(sessions, asset_id=asset_id)} == {"email"}


def test_a_move_reschedules_the_reminders(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    new_start = wall_time(9 * DAYS)
    change(sessions, asset_id, course_datetime=new_start)
    rows = messages(sessions, asset_id=asset_id)
    moved = [m for m in rows if m.kind == "moved"]
    assert len(moved) == 1
    assert moved[0].course_datetime == new_start
    assert moved[0].sequence == 1  # the invitation's SEQUENCE goes up
    pending = [m for m in rows if m.kind == "reminder" and m.status == PENDING]
    superseded = [m for m in rows if m.kind == "reminder" and m.status == SUPERSEDED]
    assert {m.course_datetime for m in pending} == {new_start}
    assert len(pending) == 2
    assert len(superseded) == 2
    assert {m.reason for m in superseded} == {"the course moved before it went"}
    # A change that is not a move (an instructor) announces nothing.
    change(sessions, asset_id, rider_instructor_1="Jo Park")
    assert len(messages(sessions, asset_id=asset_id)) == len(rows)


def test_a_cancellation_drops_the_reminders(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    change(sessions, asset_id, course_status="cancelled")
    rows = messages(sessions, asset_id=asset_id)
    cancelled = [m for m in rows if m.kind == "cancelled"]
    assert len(cancelled) == 1
    assert cancelled[0].status == PENDING
    assert cancelled[0].sequence == 1
    reminders = [m for m in rows if m.kind == "reminder"]
    assert reminders
    assert all(m.status == SUPERSEDED for m in reminders)
    # Booked again: a new confirmation and new reminders.
    last = max(m.id for m in rows)
    change(sessions, asset_id, course_status="booked")
    again = [m for m in messages(sessions, asset_id=asset_id) if m.id > last]
    assert sorted(m.kind for m in again) == ["confirmation", "reminder", "reminder"]
    assert all(m.status == PENDING for m in again)
    assert max(m.sequence for m in again) == 2


def test_a_result_is_announced(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    change(sessions, asset_id, course_status="completed - pass", course_feedback="pass A")
    results = messages(sessions, asset_id=asset_id, kind="result")
    assert [(m.detail, m.status) for m in results] == [("completed - pass", PENDING)]
    reminders = messages(sessions, asset_id=asset_id, kind="reminder")
    assert all(m.status == SUPERSEDED for m in reminders)
    # Corrected to a fail before the pass went: the pass is superseded as corrected, not
    # as "completed before it went" (the course had been completed all along).
    change(sessions, asset_id, course_status="completed - fail", course_feedback="fail 2")
    results = messages(sessions, asset_id=asset_id, kind="result")
    assert [(m.detail, m.status, m.reason) for m in results] == [
        ("completed - pass", SUPERSEDED, "a corrected result replaced it"),
        ("completed - fail", PENDING, None),
    ]


def test_a_refused_item_writes_no_message(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    before = len(messages(sessions))
    with session_scope(sessions, write=True) as session:
        results = courses.book_courses(
            session,
            # booked → booked is allowed, but a feedback on a booked course is refused.
            items=[
                {"asset_id": asset_id, "course_status": "cancelled", "course_feedback": "pass A"}
            ],
            audit_id=new_id(RecordKind.AUDIT),
        )
        assert not results[0].delivery
    assert len(messages(sessions)) == before


def test_a_transaction_that_rolls_back_writes_no_message(sessions: sessionmaker[Session]) -> None:
    class Boom(Exception):
        pass

    try:
        with session_scope(sessions, write=True) as session:
            product = builders.product(session)
            person_id = builders.person(session)
            builders.course(session, person_id, product, course_datetime=wall_time(5 * DAYS))
            raise Boom
    except Boom:
        pass
    assert messages(sessions) == []


def test_console_status_changes_announce_too(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    with session_scope(sessions, write=True) as session:
        results = courses.change_statuses(
            session,
            items=[{"asset_id": asset_id, "course_status": "cancelled"}],
            audit_id=new_id(RecordKind.AUDIT),
        )
        assert results[0].delivery
    assert [m.kind for m in messages(sessions, asset_id=asset_id, kind="cancelled")] == [
        "cancelled"
    ]


def test_a_savepoint_that_rolls_back_takes_its_messages(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions, write=True) as session:
        product = builders.product(session)
        kept, gone = builders.person(session), builders.person(session)
        builders.course(session, kept, product, course_datetime=wall_time(5 * DAYS))
        savepoint = session.begin_nested()
        builders.course(session, gone, product, course_datetime=wall_time(5 * DAYS))
        savepoint.rollback()
    assert {m.person_id for m in messages(sessions)} == {kept}
    assert len(messages(sessions)) == 6


def test_a_booking_writes_its_messages_in_one_statement(
    engine: Engine, sessions: sessionmaker[Session]
) -> None:
    """A 200-item booking writes 1,200 messages; as ORM rows that was 200 statements or
    more and as long as the booking itself (bench/README.md, Messages)."""
    with session_scope(sessions, write=True) as session:
        product = builders.product(session)
        people = [builders.person(session, email=f"rider{n}@example.com") for n in range(200)]
    inserts: list[str] = []

    def count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement.lstrip().upper().startswith("INSERT INTO MESSAGES"):
            inserts.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        with session_scope(sessions, write=True) as session:
            items = [
                new_booking(
                    person_id,
                    product,
                    booking_number=f"BULK-{n}",
                    course_datetime=wall_time(5 * DAYS),
                    course_date_end=wall_time(5 * DAYS + dt.timedelta(hours=8)),
                )
                for n, person_id in enumerate(people)
            ]
            results = courses.book_courses(session, items=items, audit_id=new_id(RecordKind.AUDIT))
            assert all(result.delivery for result in results)
    finally:
        event.remove(engine, "before_cursor_execute", count)
    assert len(messages(sessions)) == 1200
    assert len(inserts) == 1
