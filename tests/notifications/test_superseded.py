"""A message still queued when a later change of its course replaces it (a cancellation, a
move, a new booking, a result) is superseded in that change's transaction, never sent stale."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from sqlalchemy import event, update
from sqlalchemy.orm import Session, sessionmaker
from testkit.smtp import Mailbox

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.notifications.models import PENDING, SENT, SUPERSEDED, Message
from ridercrm.notifications.sender import MessageSender
from ridercrm.notifications.service import supersede
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
    engine = sessions.kw["bind"]
    if engine.dialect.name != "sqlite":
        pytest.skip("SQLite's query planner: PostgreSQL chooses by its statistics")
    _person, asset_id = book(sessions, starts_in=5 * DAYS)
    statements: list[tuple[str, Any]] = []

    def seen(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        if statement.lstrip().upper().startswith("UPDATE MESSAGES"):
            statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", seen)
    try:
        with session_scope(sessions, write=True) as session:
            supersede(session, asset_id, "a test")
    finally:
        event.remove(engine, "before_cursor_execute", seen)
    assert len(statements) == 1
    statement, parameters = statements[0]
    with engine.connect() as connection:
        plan = " ".join(
            row[-1]
            for row in connection.exec_driver_sql("EXPLAIN QUERY PLAN " + statement, parameters)
        )
    assert "ix_messages_asset_status (asset_id=? AND status=?)" in plan, plan
    assert len(messages(sessions, asset_id=asset_id, kind="confirmation")) == 2
