"""Course sessions: availability, the waiting list, and the admin API (docs/decisions.md, "Course sessions")."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from ridercrm import fields
from ridercrm.errors import ApiError
from ridercrm.ids import RecordKind, canonical_id
from ridercrm.rosters import service as rosters
from ridercrm.sessions import seats, waitlist
from ridercrm.sessions import service as sessions
from ridercrm.sessions.models import CANCELLED, CourseSession
from ridercrm.sessions.schemas import (
    SESSION_EXAMPLE,
    SessionCreate,
    SessionRead,
    SessionUpdate,
    WaitlistJoin,
    WaitlistRead,
)
from ridercrm.web import openapi
from ridercrm.web.operations import Operations, Requested
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import parse_model

router = APIRouter(tags=["sessions"])
crm = Operations(router, "crm", scope="courses")
admin = Operations(router, "admin", scope="admin", tags=["admin"])


def policy_of(request: Requested) -> seats.SeatPolicy:
    """The seat rules the settings set."""
    settings = request.settings
    return seats.SeatPolicy(
        required=settings.sessions_required, hold_hours=settings.waitlist_hold_hours
    )


def _found(session: Session, session_id: str, *, lock: bool = False) -> CourseSession:
    row = sessions.find_session(session, session_id, lock=lock)
    if row is None:
        raise ApiError(404, f"no course session with id {session_id}")
    return row


def _read(session: Session, row: CourseSession) -> dict[str, Any]:
    found = sessions.read_session(session, row.id)
    assert found is not None
    return found.model_dump(mode="json")


# --- Availability ---------------------------------------------------------------------


def _bound(name: str, value: str | None, *, end: bool) -> str | None:
    """A from/to bound as a course_datetime to compare with (``to``: the first excluded)."""
    if value is None or value == "":
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            moment = dt.datetime.combine(dt.date.fromisoformat(text), dt.time())
        else:
            moment = dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        reason = f"{name}: must be a date YYYY-MM-DD or a date-time YYYY-MM-DD HH:MM:SS (the site's local time)"
        raise ApiError(400, reason, errors=[reason]) from None
    if not fields.COURSE_FIRST_YEAR <= moment.year <= fields.COURSE_LAST_YEAR:
        reason = (
            f"{name}: must be in the years {fields.COURSE_FIRST_YEAR} to {fields.COURSE_LAST_YEAR}"
        )
        raise ApiError(400, reason, errors=[reason])
    if len(text) == 10:
        return f"{moment.date() + dt.timedelta(days=1) if end else moment.date()} 00:00:00"
    if end:
        moment += dt.timedelta(seconds=1)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def sessions_asked(
    product_id: str | None = Query(None, max_length=18, description="Only this product's."),
    location: str | None = Query(None, max_length=40, description="Only this site's."),
    from_: str | None = Query(
        None,
        alias="from",
        max_length=19,
        description="First day (YYYY-MM-DD) or start (YYYY-MM-DD HH:MM:SS), local time.",
    ),
    to: str | None = Query(
        None,
        max_length=19,
        description="Last day (YYYY-MM-DD, included) or start (included), local time.",
    ),
    limit: int = Query(1000, ge=1, le=5000, description="Most sessions answered."),
) -> sessions.Window:
    """The filters; an unknown site or a malformed id is refused, an unknown product is
    simply one without sessions."""
    problems = []
    product = None
    if product_id:
        product = canonical_id(product_id, RecordKind.PRODUCT)
        if product is None:
            problems.append(f"product_id: {product_id} is not a valid product id")
    site = None
    if location:
        try:
            site = fields.enumeration(fields.COURSE_LOCATIONS)(location)
        except ValueError as exc:
            problems.append(f"location: {exc}")
    if problems:
        raise ApiError(400, "; ".join(problems), errors=problems)
    start, end = _bound("from", from_, end=False), _bound("to", to, end=True)
    return sessions.Window(product_id=product, location=site, start=start, end=end, limit=limit)


def list_sessions(session: Session, window: sessions.Window) -> list[SessionRead]:
    """List sessions with their seats left and waiting list, by start time (local)."""
    return sessions.list_sessions(session, window)


crm.get(
    "/crm/sessions",
    list_sessions,
    ask=sessions_asked,
    name="crm.sessions",
    scope="products|courses",
    ok="The sessions, earliest first.",
    summary="Course sessions and their seats left (scope products or courses)",
)

# --- Waiting list -----------------------------------------------------------------------


@dataclass(frozen=True)
class WaitlistAsk:
    session_id: str
    person_id: str
    policy: seats.SeatPolicy


def join_of(body: Any, request: Requested) -> WaitlistAsk:
    """The person who joins, and the session from the path."""
    data = parse_model(WaitlistJoin, body)
    return WaitlistAsk(request.path["session_id"], data.person_id, policy_of(request))


def join_waitlist(session: Session, ask: WaitlistAsk) -> Reply:
    """Put a person on a full session's waiting list; answer their position."""
    seats.use_policy(session, ask.policy)
    row = _found(session, ask.session_id)
    entry = rosters.join_waitlist(session, row, raw_person_id=ask.person_id)
    return Reply(entry.model_dump(mode="json"), status=201)


crm.post(
    "/crm/sessions/{session_id}/waitlist",
    join_waitlist,
    decode=join_of,
    example={"person_id": "003Ab000000Xyz1AAA"},
    body=WaitlistJoin,
    status_code=201,
    ok="On the list.",
    answer=WaitlistRead,
    notes={
        409: "Or the session has seats left (the reason names seats_left), or the"
        " person is already on its list, or already has a seat in it."
    },
    summary="Join a full session's waiting list (scope courses)",
)


def read_waitlist(session: Session, session_id: str) -> list[WaitlistRead]:
    """List a session's waiting list: the line in order, then those who left it."""
    row = _found(session, session_id)
    return waitlist.entries(session, row.id)


crm.get(
    "/crm/sessions/{session_id}/waitlist",
    read_waitlist,
    ok="The entries.",
    summary="A session's waiting list (scope courses)",
)


def leave_of(_body: Any, request: Requested) -> WaitlistAsk:
    """The session and person from the path."""
    return WaitlistAsk(request.path["session_id"], request.path["person_id"], policy_of(request))


def leave_waitlist(session: Session, ask: WaitlistAsk) -> Reply:
    """Take a person off a session's waiting list; a seat held for them passes on."""
    seats.use_policy(session, ask.policy)
    row = _found(session, ask.session_id)
    entry = waitlist.remove(session, row, raw_person_id=ask.person_id)
    return Reply(entry.model_dump(mode="json"))


crm.post(
    "/crm/sessions/{session_id}/waitlist/{person_id}",
    leave_waitlist,
    decode=leave_of,
    method="DELETE",
    empty_body_is_object=True,
    ok="Off the list.",
    answer=WaitlistRead,
    refused=openapi.RECORD_REFUSALS,
    summary="Leave a session's waiting list (scope courses)",
)

# --- Admin ----------------------------------------------------------------------------


def create_session(session: Session, data: SessionCreate) -> Reply:
    """Create a session: product, site, start and end (local time), capacity, minimum, instructors."""
    row = rosters.create_session(session, data=data)
    return Reply(_read(session, row), status=201)


admin.post(
    "/admin/sessions",
    create_session,
    example=SESSION_EXAMPLE,
    status_code=201,
    ok="Created.",
    answer=SessionRead,
    notes={409: "Or the product already has a session at that site and start."},
    summary="Create a course session",
)


def admin_sessions_asked(
    product_id: str | None = Query(None, max_length=18, description="Only this product's."),
    location: str | None = Query(None, max_length=40, description="Only this site's."),
    from_: str | None = Query(None, alias="from", max_length=19, description="First day or start."),
    to: str | None = Query(None, max_length=19, description="Last day or start (included)."),
    limit: int = Query(1000, ge=1, le=5000, description="Most sessions answered."),
) -> sessions.Window:
    """The same filters as availability."""
    return sessions_asked(product_id, location, from_, to, limit)


def admin_list_sessions(session: Session, window: sessions.Window) -> list[SessionRead]:
    """List sessions (cancelled ones included) with their seats, by start time."""
    return sessions.list_sessions(session, window)


admin.get(
    "/admin/sessions",
    admin_list_sessions,
    ask=admin_sessions_asked,
    name="admin.list_sessions",
    ok="The sessions, earliest first.",
    summary="List course sessions",
)


def admin_read_session(session: Session, session_id: str) -> SessionRead | None:
    """Return one session with its seats and waiting list."""
    return sessions.read_session(session, session_id)


admin.get(
    "/admin/sessions/{session_id}",
    admin_read_session,
    name="admin.read_session",
    missing="course session",
    ok="The session.",
    summary="Read a course session",
)


@dataclass(frozen=True)
class SessionChange:
    session_id: str
    data: SessionUpdate
    audit_id: str
    policy: seats.SeatPolicy


def change_of(body: Any, request: Requested) -> SessionChange:
    """The fields to change, and the session from the path."""
    data = parse_model(SessionUpdate, body)
    return SessionChange(request.path["session_id"], data, request.audit_id, policy_of(request))


def update_session(session: Session, change: SessionChange) -> Reply:
    """Change a session's capacity, minimum, instructors, end or status; status cancelled
    cancels its bookings, more seats are offered to the waiting list at once."""
    seats.use_policy(session, change.policy)
    row = _found(session, change.session_id, lock=True)
    data = change.data
    if data.status == CANCELLED:
        rest = data.model_copy(update={"status": None})
        sent = data.model_fields_set - {"status"}
        if sent:
            sessions.update_session(
                session, row, data=SessionUpdate.model_validate(rest.model_dump(include=sent))
            )
        rosters.cancel_session(session, row, audit_id=change.audit_id)
    else:
        sessions.update_session(session, row, data=data)
    return Reply(_read(session, row))


admin.post(
    "/admin/sessions/{session_id}",
    update_session,
    decode=change_of,
    method="PATCH",
    example={"capacity": 14},
    body=SessionUpdate,
    ok="The session as changed.",
    answer=SessionRead,
    refused=(400, 401, 403, 404, 409, 413, 415, 429),  # no Idempotency-Key: no 422
    notes={409: "Or fewer seats than are booked, or the session is cancelled."},
    summary="Change a course session",
)
