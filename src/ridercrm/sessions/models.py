"""Course sessions and their waiting lists (docs/decisions.md, "Course sessions")."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import ForeignKey, Index, Integer, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, UTCDateTime, utcnow

SCHEDULED = "scheduled"
CONFIRMED = "confirmed"
CANCELLED = "cancelled"
SESSION_STATUSES = (SCHEDULED, CONFIRMED, CANCELLED)

WAITING = "waiting"
OFFERED = "offered"
BOOKED = "booked"
LAPSED = "lapsed"
REMOVED = "removed"
WAITLIST_STATES = (WAITING, OFFERED, BOOKED, LAPSED, REMOVED)
IN_LINE = (WAITING, OFFERED)


class CourseSession(Base):
    """One scheduled run of a product at a site.

    ``booked`` counts the courses that hold a seat (booked or completed) and ``held``
    the seats held for waiting-list offers; ``seats`` is what is on sale (the capacity,
    or fewer when the instructors cannot cover it; null: no limit). Each booking changes
    only its own session's row, with a conditional update (``seats.take``).
    """

    __tablename__ = "course_sessions"

    id: Mapped[str] = mapped_column(String(18), primary_key=True)
    product_id: Mapped[str] = mapped_column(String(18), ForeignKey("products.id"))
    location: Mapped[str] = mapped_column(String(40))
    # Local wall time of the site, written as the interface writes course_datetime.
    course_datetime: Mapped[str] = mapped_column(String(19))
    course_date_end: Mapped[str | None] = mapped_column(String(19))
    capacity: Mapped[int | None] = mapped_column(Integer)
    minimum: Mapped[int] = mapped_column(Integer, default=0)
    instructors: Mapped[int | None] = mapped_column(Integer)
    seats: Mapped[int | None] = mapped_column(Integer)
    booked: Mapped[int] = mapped_column(Integer, default=0)
    held: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(12), default=SCHEDULED)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        # What an operation-1 item names: product, site and start.
        UniqueConstraint(product_id, location, course_datetime),
        # Availability: a site's sessions over a period.
        Index("ix_course_sessions_location_start", location, course_datetime),
        Index("ix_course_sessions_start", course_datetime),
    )


class WaitlistEntry(Base):
    """A person on a session's waiting list; ``rank`` orders the line."""

    __tablename__ = "session_waitlist"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    session_id: Mapped[str] = mapped_column(String(18), ForeignKey("course_sessions.id"))
    person_id: Mapped[str] = mapped_column(String(18), ForeignKey("people.id"))
    rank: Mapped[int] = mapped_column(Integer)
    state: Mapped[str] = mapped_column(String(10), default=WAITING)
    offered_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, onupdate=utcnow)

    __table_args__ = (
        UniqueConstraint(session_id, person_id),
        Index("ix_session_waitlist_line", session_id, state, rank),
        # The lapse timer: offers past their time.
        Index("ix_session_waitlist_offers", state, offered_until),
    )
