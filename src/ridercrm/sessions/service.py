"""Sessions: create, change, read, and list them for the booking website (docs/decisions.md, "Course sessions").

Which courses sit in a session is the courses' business (``ridercrm.rosters`` counts and
cancels them); this module keeps the session rows and their seat counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, func, select, update
from sqlalchemy.orm import Session

from ridercrm.errors import CONFLICT, INVALID, UNPROCESSABLE, DomainError
from ridercrm.events import service as events
from ridercrm.ids import RecordKind, canonical_id, new_id
from ridercrm.products.models import Product
from ridercrm.sessions import seats, values
from ridercrm.sessions.models import CANCELLED, IN_LINE, OFFERED, CourseSession, WaitlistEntry
from ridercrm.sessions.schemas import SessionCreate, SessionRead, SessionUpdate

STATE_FIELDS = (
    "product_id",
    "location",
    "course_datetime",
    "course_date_end",
    "capacity",
    "minimum",
    "instructors",
    "seats",
    "booked",
    "held",
    "status",
)


class SessionProblem(DomainError, ValueError):
    """A session request that cannot be carried out; ``kind`` says how it is answered."""

    def __init__(self, kind: str, reason: str) -> None:
        super().__init__(reason, kind=kind)


@dataclass(frozen=True)
class Window:
    """Availability's filters: a product, a site, and a period of start times."""

    product_id: str | None = None
    location: str | None = None
    start: str | None = None  # first course_datetime included
    end: str | None = None  # first course_datetime excluded
    include_cancelled: bool = True
    limit: int = 1000


def _check_minimum(minimum: int, capacity: int | None) -> None:
    """A session whose minimum exceeds its capacity could never run."""
    if capacity is not None and minimum > capacity:
        raise SessionProblem(
            INVALID, f"minimum: must not exceed the capacity, {capacity} (received {minimum})"
        )


def _check_order(start: str | None, end: str | None) -> None:
    try:
        values.check_order(start, end)
    except ValueError as exc:
        raise SessionProblem(INVALID, str(exc)) from None


def seats_on_sale(
    capacity: int | None, instructors: int | None, per_instructor: int | None
) -> int | None:
    """The capacity, or fewer where the product sets trainees per instructor."""
    if capacity is None:
        return None
    if per_instructor is None or instructors is None:
        return capacity
    return min(capacity, instructors * per_instructor)


def product_of(session: Session, raw_id: str) -> Product:
    product_id = canonical_id(raw_id, RecordKind.PRODUCT)
    product = session.get(Product, product_id) if product_id else None
    if product is None:
        raise SessionProblem(UNPROCESSABLE, f"product_id: no product with id {raw_id}")
    return product


def find_session(session: Session, raw_id: str, *, lock: bool = False) -> CourseSession | None:
    """The session with this id (15 or 18 characters), or None."""
    session_id = canonical_id(raw_id, RecordKind.SESSION)
    if session_id is None:
        return None
    query = select(CourseSession).where(CourseSession.id == session_id)
    if lock:
        query = query.with_for_update()
    return session.scalar(query.execution_options(populate_existing=True))


def create_session(
    session: Session, *, data: SessionCreate, booked: int = 0, known_new: bool = False
) -> CourseSession:
    """Store a new session; ``booked``: the courses it already holds (stored before it);
    ``known_new``: the caller knows there is none at that product, site and start (a
    backfill), so it is neither looked for nor flushed at once."""
    _check_order(data.course_datetime, data.course_date_end)
    _check_minimum(data.minimum, data.capacity)
    product = product_of(session, data.product_id)
    taken = None
    if not known_new:
        taken = seats.find(session, seats.Place(product.id, data.location, data.course_datetime))
    if taken is not None:
        raise SessionProblem(
            CONFLICT,
            f"course_datetime: product {product.id} already has session {taken.id} at"
            f" {data.location} {data.course_datetime}",
        )
    row = CourseSession(
        id=new_id(RecordKind.SESSION),
        product_id=product.id,
        location=data.location,
        course_datetime=data.course_datetime,
        course_date_end=data.course_date_end,
        capacity=data.capacity,
        minimum=data.minimum,
        instructors=data.instructors,
        seats=seats_on_sale(data.capacity, data.instructors, product.trainees_per_instructor),
        booked=booked,
        held=0,
        status=data.status,
    )
    session.add(row)
    if not known_new:
        session.flush()
    events.record(
        session,
        event_type=events.SESSION_CREATED,
        subject=seats.subject_of(row.id),
        data={"session": state(row)},
    )
    return row


def update_session(session: Session, row: CourseSession, *, data: SessionUpdate) -> list[str]:
    """Apply the fields sent (not a cancellation: ``rosters.cancel_session``); return the
    names that changed. More seats on sale are offered to the people waiting at once."""
    sent = data.model_dump(exclude_unset=True)
    if sent.get("status") == CANCELLED:
        raise ValueError("cancel a session with rosters.cancel_session")
    if row.status == CANCELLED and sent:
        raise SessionProblem(CONFLICT, f"status: session {row.id} is cancelled")
    for name in ("capacity", "minimum", "status"):
        if name in sent and sent[name] is None and name != "capacity":
            raise SessionProblem(INVALID, f"{name}: cannot be null")
    if "capacity" in sent and sent["capacity"] is not None:
        _check_capacity(row, sent["capacity"])
    if sent.get("course_date_end") is not None:
        _check_order(row.course_datetime, sent["course_date_end"])
    if "minimum" in sent or "capacity" in sent:
        _check_minimum(sent.get("minimum", row.minimum), sent.get("capacity", row.capacity))
    before = {name: getattr(row, name) for name in STATE_FIELDS}
    for name, value in sent.items():
        setattr(row, name, value)
    product = session.get(Product, row.product_id)
    assert product is not None
    row.seats = seats_on_sale(row.capacity, row.instructors, product.trainees_per_instructor)
    session.flush()
    changed = [name for name in STATE_FIELDS if getattr(row, name) != before[name]]
    if changed:
        events.record(
            session,
            event_type=events.SESSION_UPDATED,
            subject=seats.subject_of(row.id),
            data={"session": state(row), "fields": changed},
        )
    if "seats" in changed:
        seats.offer_free_seats(session, row.id)
        session.refresh(row)
    return changed


def _check_capacity(row: CourseSession, capacity: int) -> None:
    """SessionProblem (409) when ``capacity`` is below the seats already given: the booked
    courses and the seats held for waiting-list offers (a held seat is promised)."""
    if capacity >= row.booked + row.held:
        return
    if not row.held:
        raise SessionProblem(
            CONFLICT,
            f"capacity: {row.booked} courses are booked in session {row.id}; move or cancel"
            " some first",
        )
    raise SessionProblem(
        CONFLICT,
        f"capacity: {row.booked} courses are booked and {row.held} seats are held for the"
        f" waiting list in session {row.id}; move or cancel some, or take the offers back,"
        " first",
    )


def mark_cancelled(session: Session, row: CourseSession) -> None:
    """Mark a session cancelled (its courses were cancelled by the caller first); the
    people waiting leave the line."""
    row.status = CANCELLED
    row.held = 0
    offered = select(seats.WAITLIST.c.person_id).where(
        seats.WAITLIST.c.session_id == row.id, seats.WAITLIST.c.state == OFFERED
    )
    seats.offers_ended(session, row.id, offered, "the session was cancelled")
    session.execute(
        update(seats.WAITLIST)
        .where(seats.WAITLIST.c.session_id == row.id, seats.WAITLIST.c.state.in_(IN_LINE))
        .values(state="removed", offered_until=None)
    )
    session.flush()
    events.record(
        session,
        event_type=events.SESSION_CANCELLED,
        subject=seats.subject_of(row.id),
        data={"session": state(row)},
    )


def state(row: CourseSession) -> dict[str, Any]:
    """A session's stored fields, as its events carry them."""
    return {"id": row.id, **{name: getattr(row, name) for name in STATE_FIELDS}}


def _read_query() -> Select[Any]:
    line = (
        select(func.count())
        .where(WaitlistEntry.session_id == CourseSession.id, WaitlistEntry.state.in_(IN_LINE))
        .correlate(CourseSession)
        .scalar_subquery()
    )
    return select(CourseSession, Product.trainees_per_instructor, line.label("waitlist")).join(
        Product, Product.id == CourseSession.product_id
    )


def _read(row: CourseSession, per_instructor: int | None, waitlist: int) -> SessionRead:
    return SessionRead(
        id=row.id,
        product_id=row.product_id,
        location=row.location,
        course_datetime=row.course_datetime,
        course_date_end=row.course_date_end,
        capacity=row.capacity,
        minimum=row.minimum,
        instructors=row.instructors,
        trainees_per_instructor=per_instructor,
        seats=row.seats,
        booked=row.booked,
        held=row.held,
        seats_left=seats.seats_left(row),
        waitlist=waitlist,
        status=row.status,
    )


def read_session(session: Session, session_id: str) -> SessionRead | None:
    """One session with its seats and waiting list."""
    canonical = canonical_id(session_id, RecordKind.SESSION)
    if canonical is None:
        return None
    found = session.execute(
        _read_query().where(CourseSession.id == canonical).execution_options(populate_existing=True)
    ).first()
    return _read(*found) if found is not None else None


def list_sessions(session: Session, window: Window) -> list[SessionRead]:
    """Sessions by start time, filtered by product, site and period (availability)."""
    query = _read_query()
    if window.location is not None:
        query = query.where(CourseSession.location == window.location)
    if window.product_id is not None:
        query = query.where(CourseSession.product_id == window.product_id)
    if window.start is not None:
        query = query.where(CourseSession.course_datetime >= window.start)
    if window.end is not None:
        query = query.where(CourseSession.course_datetime < window.end)
    if not window.include_cancelled:
        query = query.where(CourseSession.status != CANCELLED)
    query = query.order_by(CourseSession.course_datetime, CourseSession.location, CourseSession.id)
    rows = session.execute(query.limit(window.limit)).all()
    return [_read(*row) for row in rows]


def sessions_of(session: Session, ids: Iterable[str]) -> Sequence[CourseSession]:
    return session.scalars(select(CourseSession).where(CourseSession.id.in_(list(ids)))).all()
