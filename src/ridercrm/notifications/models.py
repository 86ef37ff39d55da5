"""The messages outbox, the edited templates and the people who stopped reminders."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from sqlalchemy import ColumnElement, ForeignKey, Index, Integer, String, Text, literal_column
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, JSONType, UTCDateTime, utcnow

EMAIL = "email"
SMS = "sms"
CHANNELS = (EMAIL, SMS)

CONFIRMATION = "confirmation"
MOVED = "moved"
CANCELLED = "cancelled"
REMINDER = "reminder"
RESULT = "result"
WAITLIST_OFFER = "waitlist_offer"
DIGEST = "digest"
KINDS = (CONFIRMATION, MOVED, CANCELLED, REMINDER, RESULT, WAITLIST_OFFER, DIGEST)

PENDING = "pending"  # waiting for due_at (a retry too)
SENDING = "sending"  # claimed by a deliverer until lease_until; then due again
SENT = "sent"
FAILED = "failed"  # refused for good (bad address, gateway refusing) or retries used up
SKIPPED = "skipped"  # not to be sent: its moment passed, reminders stopped, quiet hours
# Replaced before it went by a later change of its course (a cancellation, a move, a new
# booking, a result): never sent stale (docs/decisions.md, "Notifications (issue 27)").
SUPERSEDED = "superseded"
UNSENT = "unsent"  # cannot be sent here: no SMTP server or SMS gateway configured, no address
STATUSES = (PENDING, SENDING, SENT, FAILED, SKIPPED, SUPERSEDED, UNSENT)
OPEN_STATUSES = (PENDING, SENDING)
_OPEN_SQL = "status IN ('pending', 'sending')"


def is_open(status: Any) -> ColumnElement[bool]:
    """``status IN ('pending', 'sending')`` with its constants written out, so the open
    messages' partial index can serve it (SQLite needs the very same term)."""
    return cast(
        ColumnElement[bool],
        status.in_([literal_column(f"'{value}'") for value in OPEN_STATUSES]),
    )


class Message(Base):
    """One message to one person on one channel, written in the transaction of the change
    it announces and sent by the deliverer (the messages outbox)."""

    __tablename__ = "messages"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # Stable per row: the Message-ID's local part, so a resend after a crash is recognisable.
    key: Mapped[str] = mapped_column(String(40), unique=True)
    # None for a staff digest (sent to a site's staff address, kept in ``recipient``).
    person_id: Mapped[str | None] = mapped_column(String(18), ForeignKey("people.id"))
    channel: Mapped[str] = mapped_column(String(10))
    kind: Mapped[str] = mapped_column(String(20))
    # The course it is about, as it was when the message was written (no foreign key:
    # a message outlives nothing it names, and the courses layer sits above this one).
    asset_id: Mapped[str | None] = mapped_column(String(18))
    product_id: Mapped[str | None] = mapped_column(String(18))
    location: Mapped[str | None] = mapped_column(String(40))
    course_datetime: Mapped[str | None] = mapped_column(String(19))
    course_date_end: Mapped[str | None] = mapped_column(String(19))
    booking_number: Mapped[str | None] = mapped_column(String(80))
    # The calendar invitation's SEQUENCE (bumped by each move of the course).
    sequence: Mapped[int] = mapped_column(Integer, default=0)
    # A reminder's offset ("48h"); a seat offer's deadline (UTC ISO text).
    detail: Mapped[str | None] = mapped_column(String(40))
    # A staff digest's listing (the site, the day, its sessions or courses), rendered at send.
    data: Mapped[Any] = mapped_column(JSONType, nullable=True)
    due_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    status: Mapped[str] = mapped_column(String(10), default=PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    lease_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    reason: Mapped[str | None] = mapped_column(String(500))
    recipient: Mapped[str | None] = mapped_column(String(254))
    subject: Mapped[str | None] = mapped_column(String(500))
    body_text: Mapped[str | None] = mapped_column(Text)
    body_html: Mapped[str | None] = mapped_column(Text)
    segments: Mapped[int | None] = mapped_column(Integer)
    provider_id: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    sent_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        # A person's messages (sorted newest first from it: tens), and their queued ones
        # (stopping reminders): the status beside the person lets SQLite prefer it
        # (migration 0027).
        Index("ix_messages_person_status", person_id, status, id),
        # A course's messages, and its queued ones (superseded by its next change): with
        # the status beside the course, SQLite reads the course's own rather than every
        # pending message (migration 0026).
        Index("ix_messages_asset_status", asset_id, status),
        # The deliverer's claim reads the open messages alone, by due time.
        Index(
            "ix_messages_open_due",
            due_at,
            sqlite_where=literal_column(_OPEN_SQL),
            postgresql_where=literal_column(_OPEN_SQL),
        ),
        # The open messages by due time (SQLite's sender poll: it never chose the partial
        # index above), and the messages of one status (migration 0027).
        Index("ix_messages_status_due", status, due_at),
    )


class MessageTemplate(Base):
    """A template an admin edited; kinds and channels without a row use the defaults."""

    __tablename__ = "message_templates"

    kind: Mapped[str] = mapped_column(String(20), primary_key=True)
    channel: Mapped[str] = mapped_column(String(10), primary_key=True)
    subject: Mapped[str] = mapped_column(String(500), default="")
    body_text: Mapped[str] = mapped_column(Text)
    body_html: Mapped[str] = mapped_column(Text, default="")
    updated_by: Mapped[str] = mapped_column(String(120))
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)


class ReminderStop(Base):
    """A person who gets no reminders (a signed link, or staff on the person page)."""

    __tablename__ = "reminder_stops"

    person_id: Mapped[str] = mapped_column(String(18), ForeignKey("people.id"), primary_key=True)
    stopped_by: Mapped[str] = mapped_column(String(120))
    stopped_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class NotificationSecret(Base):
    """The server secret that signs stop-reminder links, made once per database when
    RIDERCRM_NOTIFY_SECRET is not set (so every process and restart signs alike)."""

    __tablename__ = "notification_secrets"

    name: Mapped[str] = mapped_column(String(40), primary_key=True)
    value: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
