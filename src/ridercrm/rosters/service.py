"""Sessions and their courses together: create (counting the courses already booked),
cancel (cancelling the bookings), move riders, backfill (docs/decisions.md, "Course sessions").

This sits above ``courses``: every course change goes through operation 1's service, so
it keeps the status machine, the history, the events and the seat checks.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import ValidationError
from sqlalchemy import case, func, select
from sqlalchemy.orm import Session

from ridercrm.courses import service as courses
from ridercrm.courses.models import Asset
from ridercrm.errors import CONFLICT
from ridercrm.people import service as people
from ridercrm.sessions import seats, waitlist
from ridercrm.sessions import service as sessions
from ridercrm.sessions.models import CANCELLED, CourseSession
from ridercrm.sessions.schemas import SessionCreate, SessionRead, WaitlistRead

SEAT_STATUSES = sorted(seats.SEAT_STATUSES)


def _courses_at(row: CourseSession):  # type: ignore[no-untyped-def]
    return (
        Asset.product_id == row.product_id,
        Asset.course_location == row.location,
        Asset.course_datetime == row.course_datetime,
    )


def booked_count(session: Session, *, product_id: str, location: str, course_datetime: str) -> int:
    """The courses booked or completed at this product, site and start."""
    return int(
        session.scalar(
            select(func.count()).where(
                Asset.product_id == product_id,
                Asset.course_location == location,
                Asset.course_datetime == course_datetime,
                Asset.course_status.in_(SEAT_STATUSES),
            )
        )
        or 0
    )


def create_session(session: Session, *, data: SessionCreate) -> CourseSession:
    """Store a new session holding the seats of the courses already booked into it."""
    product = sessions.product_of(session, data.product_id)
    booked = booked_count(
        session,
        product_id=product.id,
        location=data.location,
        course_datetime=data.course_datetime,
    )
    return sessions.create_session(session, data=data, booked=booked)


def roster(session: Session, row: CourseSession) -> Sequence[Asset]:
    """The session's courses (any status), by booking time."""
    return session.scalars(
        select(Asset).where(*_courses_at(row)).order_by(Asset.created_at, Asset.id)
    ).all()


def join_waitlist(session: Session, row: CourseSession, *, raw_person_id: str) -> WaitlistRead:
    """Put a person on a full session's line (``waitlist.join``), unless a course of
    theirs already holds a seat in it: an offer would hold them a second seat.

    The session's row is locked first, as a booking's seat takes it: a booking of theirs
    still being written is then committed and seen (PostgreSQL: read before the lock, it
    was not, and the person waited in line beside their own seat)."""
    seats.lock_sessions(session, [row.id])
    person = people.resolve(session, raw_person_id)
    if person is not None:
        seated = session.scalar(
            select(Asset.id)
            .where(
                *_courses_at(row),
                Asset.person_id == person.id,
                Asset.course_status.in_(seats.SEAT_STATUSES),
            )
            .limit(1)
        )
        if seated is not None:
            raise sessions.SessionProblem(
                CONFLICT,
                f"person_id: {person.id} already has a seat in session {row.id} (course {seated})",
            )
    return waitlist.join(session, row, raw_person_id=raw_person_id)


def cancel_session(session: Session, row: CourseSession, *, audit_id: str) -> list[str]:
    """Cancel a session and its bookings (history and events, as operation 1 writes them);
    return the courses cancelled. Move riders first to keep them."""
    if row.status == CANCELLED:
        return []
    sessions.mark_cancelled(session, row)
    booked = [a.id for a in roster(session, row) if a.course_status == "booked"]
    items = [{"asset_id": asset_id, "course_status": "cancelled"} for asset_id in booked]
    results = courses.change_statuses(session, items=items, audit_id=audit_id) if items else []
    refused = [r for r in results if not r.delivery]
    if refused:  # the status machine allows booked -> cancelled: this cannot happen
        raise AssertionError(f"cancelling session {row.id}: {refused[0].receipt}")
    session.refresh(row)
    return booked


@dataclass
class Moved:
    """The outcome of a move: the courses moved, or why none was."""

    moved: list[str]
    refusal: str | None = None


def move_riders(
    session: Session,
    *,
    asset_ids: Sequence[str],
    source: CourseSession,
    target: CourseSession,
    audit_id: str,
) -> Moved:
    """Move booked courses of ``source`` to another session of the same product in one
    step: all of them or none (the seats there are checked, as operation 1 checks them).
    A course not booked in ``source`` (another session's, or one cancelled or completed
    since the page was read) is refused by name, as is ``source`` itself as the target."""
    if target.id == source.id:
        return Moved([], f"session {target.id} is the session they are booked in: choose another")
    if target.status == CANCELLED:
        return Moved([], f"session {target.id} is cancelled")
    booked_here = {a.id: a for a in roster(session, source) if a.course_status == "booked"}
    items = []
    for asset_id in asset_ids:
        asset = booked_here.get(asset_id)
        if asset is None:
            return Moved([], f"course {asset_id} is not booked in session {source.id}")
        if asset.product_id != target.product_id:
            return Moved([], f"course {asset.id} is of another product than session {target.id}")
        items.append(
            {
                "asset_id": asset.id,
                "course_location": target.location,
                "course_datetime": target.course_datetime,
                "course_date_end": target.course_date_end or "",
            }
        )
    savepoint = session.begin_nested()
    results = courses.book_courses(session, items=items, audit_id=audit_id)
    refused = [r for r in results if not r.delivery]
    if refused:
        savepoint.rollback()
        return Moved([], f"course {refused[0].asset_id}: {refused[0].receipt}")
    savepoint.commit()
    session.refresh(target)
    return Moved([r.asset_id for r in results])


def backfill(session: Session) -> list[CourseSession]:
    """Make a session, without capacity, for each product, site and start of the stored
    courses that has none (holding the seats of its booked and completed courses); return them."""
    holding = func.sum(case((Asset.course_status.in_(SEAT_STATUSES), 1), else_=0))
    groups = session.execute(
        select(
            Asset.product_id,
            Asset.course_location,
            Asset.course_datetime,
            func.max(Asset.course_date_end),
            holding,
        )
        .where(Asset.course_location.is_not(None), Asset.course_datetime.is_not(None))
        .group_by(Asset.product_id, Asset.course_location, Asset.course_datetime)
        .order_by(Asset.course_datetime)
    ).all()
    existing = {
        (row.product_id, row.location, row.course_datetime)
        for row in session.execute(
            select(CourseSession.product_id, CourseSession.location, CourseSession.course_datetime)
        )
    }
    made = []
    for product_id, location, start, end, booked in groups:
        if len(start) != 19 or (product_id, location, start) in existing:
            continue  # a date alone names no session
        if not (end and len(end) == 19 and end > start):
            end = None  # a stored end not after its start says nothing of the session's
        try:
            data = SessionCreate(
                product_id=product_id, location=location, course_datetime=start, course_date_end=end
            )
        except ValidationError:
            continue  # a stored start no session can have (no calendar day, year 0001)
        made.append(
            sessions.create_session(session, data=data, booked=int(booked or 0), known_new=True)
        )
    session.flush()
    return made


@dataclass(frozen=True)
class Flagged:
    """A session the console warns about, and why."""

    session: SessionRead
    short_of_cover: bool
    under_minimum: bool


def short_of_cover(row: SessionRead) -> bool:
    """Its instructors cannot take as many trainees as its capacity."""
    if row.capacity is None or row.trainees_per_instructor is None:
        return False
    return (row.instructors or 0) * row.trainees_per_instructor < row.capacity


def flag(row: SessionRead) -> Flagged:
    return Flagged(
        session=row,
        short_of_cover=short_of_cover(row),
        under_minimum=row.booked < row.minimum,
    )


def flagged(session: Session, *, today: dt.date, days: int) -> list[Flagged]:
    """Sessions from today to ``days`` ahead, not cancelled, short of instructor cover or
    under their minimum."""
    window = sessions.Window(
        start=f"{today} 00:00:00",
        end=f"{today + dt.timedelta(days=days + 1)} 00:00:00",
        include_cancelled=False,
    )
    found = [flag(row) for row in sessions.list_sessions(session, window)]
    return [f for f in found if f.short_of_cover or f.under_minimum]
