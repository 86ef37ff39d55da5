"""A message still queued when a later change of its course replaces it (a cancellation, a
move, a new booking, a result) is superseded in that change's transaction, never sent stale."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker
from testkit.plans import sqlite_engine, sqlite_plan
from testkit.smtp import Mailbox

from ridercrm.config import Settings
from ridercrm.courses import service as courses
from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.notifications.models import PENDING, SENT, SUPERSEDED, Message
from ridercrm.notifications.sender import MessageSender
from ridercrm.notifications.service import supersede
from ridercrm.products.models import Product
from tests.courses import builders
from tests.notifications.helpers import book, change, messages, wall_time

DAYS = dt.timedelta(days=1)


def _defer(sessions: sessionmaker[Session], asset_id: str, kind: str) -> None:
    """Hold a course's queued messages of a kind back an hour (as quiet hours or a retry do)."""
    later = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    with session_scope(sessions, write=True) as session:
        session.execute(
            update(Message)
            .where(Message.asset_id == asset_id, Message.kind == kind)
            .values(due_at=later)
        )


def test_a_queued_confirmation_is_superseded_by_the_cancellation(
    sessions: sessionmaker[Session],
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS)
    _defer(sessions, asset_id, "confirmation")
    change(sessions, asset_id, course_status="cancelled")
    confirmations = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert len(confirmations) == 2  # e-mail and SMS
    assert {m.status for m in confirmations} == {SUPERSEDED}
    assert {m.reason for m in confirmations} == {"the course was cancelled before it went"}
    reminders = messages(sessions, asset_id=asset_id, kind="reminder")
    assert {m.status for m in reminders} == {SUPERSEDED}
    assert [m.status for m in messages(sessions, asset_id=asset_id, kind="cancelled")] == [
        PENDING,
        PENDING,
    ]


def test_a_queued_confirmation_is_superseded_by_a_move(sessions: sessionmaker[Session]) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _defer(sessions, asset_id, "confirmation")
    change(sessions, asset_id, course_datetime=wall_time(9 * DAYS))
    [confirmation] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert confirmation.status == SUPERSEDED
    assert confirmation.reason == "the course moved before it went"
    [moved] = messages(sessions, asset_id=asset_id, kind="moved")
    assert moved.status == PENDING
    # A second move supersedes the first move's message too, if it has not gone yet.
    _defer(sessions, asset_id, "moved")
    change(sessions, asset_id, course_datetime=wall_time(10 * DAYS))
    moves = messages(sessions, asset_id=asset_id, kind="moved")
    assert [m.status for m in moves] == [SUPERSEDED, PENDING]


def test_only_the_latest_state_reaches_the_rider(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    """Booked then cancelled before the deliverer ran: the SMTP server gets the
    cancellation alone, never the stale confirmation."""
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    change(sessions, asset_id, course_status="cancelled")
    values = {**settings.model_dump(), "smtp_url": mailbox.url, "sms_quiet_hours": "off"}
    sender = MessageSender(Settings(**values), sessions)
    sender.run_until_idle()
    received = mailbox.wait_for(1)
    assert len(received) == 1
    assert "cancel" in str(received[0]["Subject"]).lower()
    sent = [m for m in messages(sessions, asset_id=asset_id) if m.status == SENT]
    assert [m.kind for m in sent] == ["cancelled"]


def test_superseding_reads_the_course_s_own_messages_not_every_pending_one(
    sessions: sessionmaker[Session],
) -> None:
    """A change supersedes its course's queued messages by the course: SQLite (no
    statistics) once read them through the status index, every pending message of the
    store for each changed course. PostgreSQL plans by its statistics."""
    engine = sqlite_engine(sessions)
    _person, asset_id = book(sessions, starts_in=5 * DAYS)

    def change_it() -> None:
        with session_scope(sessions, write=True) as session:
            supersede(session, asset_id, "a test")

    plan = sqlite_plan(engine, change_it, "UPDATE messages")
    assert "ix_messages_asset_status (asset_id=? AND status=?)" in plan, plan
    assert {m.status for m in messages(sessions, asset_id=asset_id, kind="confirmation")} == {
        SUPERSEDED
    }


def test_two_moves_in_one_batch_leave_the_second_move_s_messages_queued(
    sessions: sessionmaker[Session],
) -> None:
    """The stored queued messages are superseded when the batch commits, before its own
    new messages are inserted: the first move's new messages are superseded by the
    second, the second's stay queued, and the stored ones keep the first move's reason."""
    person_id, asset_id = book(sessions, starts_in=5 * DAYS)
    booked = {m.id for m in messages(sessions, asset_id=asset_id)}
    with session_scope(sessions, write=True) as session:
        # Another course booked first in the transaction: its messages are the first
        # effect recorded, and still the stored ones must be superseded before any insert.
        other = builders.course(
            session,
            person_id,
            session.scalar(select(Product.id).where(Product.code == "LAP-SOM"))
            or builders.product(session),
            course_datetime=wall_time(9 * DAYS),
            course_date_end=wall_time(9 * DAYS + dt.timedelta(hours=8)),
            course_location="somerton",
            mobile_phone="0412 345 678",
        )
        results = courses.book_courses(
            session,
            items=[
                {"asset_id": asset_id, "course_datetime": wall_time(6 * DAYS)},
                {"asset_id": asset_id, "course_datetime": wall_time(7 * DAYS)},
            ],
            audit_id=new_id(RecordKind.AUDIT),
        )
        assert [r.delivery for r in results] == [True, True], [r.receipt for r in results]
    stored = messages(sessions, asset_id=asset_id)
    before = [m for m in stored if m.id in booked]
    first_move = [m for m in stored if m.id not in booked and m.sequence == 1]
    second_move = [m for m in stored if m.id not in booked and m.sequence == 2]
    assert before
    assert first_move
    assert second_move
    assert {(m.status, m.reason) for m in before if m.kind != "result"} == {
        (SUPERSEDED, "the course moved before it went")
    }
    assert {m.status for m in first_move if m.kind == "moved"} == {SUPERSEDED}
    assert {m.status for m in second_move if m.kind == "moved"} == {PENDING}
    queued = [m for m in stored if m.status == PENDING]
    assert queued
    assert all(m.id not in booked for m in queued)
    assert {m.status for m in messages(sessions, asset_id=other)} == {PENDING}


def test_a_move_rolled_back_in_its_savepoint_supersedes_nothing(
    sessions: sessionmaker[Session],
) -> None:
    """A course booked and then moved in a savepoint that rolls back (the console's move
    of riders, refused as a whole): the booking's own messages, not inserted yet when the
    move superseded them, are inserted queued, as if the move had never been made."""
    with session_scope(sessions, write=True) as session:
        product = session.scalar(select(Product.id).where(Product.code == "LAP-SOM"))
        person_id = builders.person(session)
        asset_id = builders.course(
            session,
            person_id,
            product or builders.product(session),
            course_datetime=wall_time(5 * DAYS),
            course_date_end=wall_time(5 * DAYS + dt.timedelta(hours=8)),
            course_location="somerton",
            mobile_phone="0412 345 678",
        )
        savepoint = session.begin_nested()
        results = courses.book_courses(
            session,
            items=[{"asset_id": asset_id, "course_datetime": wall_time(6 * DAYS)}],
            audit_id=new_id(RecordKind.AUDIT),
        )
        assert [r.delivery for r in results] == [True], [r.receipt for r in results]
        savepoint.rollback()
    stored = messages(sessions, asset_id=asset_id)
    assert {m.kind for m in stored} >= {"confirmation", "reminder"}
    assert {(m.status, m.reason) for m in stored} == {(PENDING, None)}
    assert {m.sequence for m in stored if m.kind == "confirmation"} == {0}
