"""Admin API for courses (assets) with their status history."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fastapi import APIRouter
from sqlalchemy.orm import Session

from ridercrm.courses import service
from ridercrm.courses.models import Asset
from ridercrm.courses.schemas import (
    RIDER_COURSES_EXAMPLE,
    BookedCourse,
    RiderCoursesRequest,
    RiderCoursesResponse,
)
from ridercrm.errors import ApiError
from ridercrm.sessions.seats import SeatPolicy, use_policy
from ridercrm.web import openapi
from ridercrm.web.operations import Operations, Requested
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import items_of

router = APIRouter(tags=["courses"])

FAILURE_TEXT = "Status update failed."


def failure_shape(_error: ApiError, _audit_id: str) -> str:
    """Operation 1 fails as a whole with this exact text; the reason goes in X-Failure-Reason."""
    return FAILURE_TEXT


crm = Operations(
    router,
    "crm",
    scope="courses",
    shape=failure_shape,
    refusal=openapi.text_content(FAILURE_TEXT),
)
admin = Operations(router, "admin", scope="admin", tags=["admin"])


@dataclass(frozen=True)
class Booking:
    """Operation 1's payload: the items, and the audit id their status changes cite."""

    items: list[Any]
    audit_id: str
    seats: SeatPolicy = field(default_factory=SeatPolicy)


def booking_of(body: Any, request: Requested) -> Booking:
    """The body's ``people_product`` items (at most RIDERCRM_MAX_ITEMS)."""
    limit = request.settings.max_items
    policy = SeatPolicy(
        required=request.settings.sessions_required,
        hold_hours=request.settings.waitlist_hold_hours,
    )
    return Booking(items_of(body, "people_product", limit=limit), request.audit_id, policy)


def rider_courses(session: Session, booking: Booking) -> Reply:
    """Book contacts or leads onto courses, or change the status of booked courses."""
    use_policy(session, booking.seats)
    results = service.book_courses(session, items=booking.items, audit_id=booking.audit_id)
    answer = {"details": results, "audit_id": booking.audit_id}
    return Reply(
        RiderCoursesResponse.model_validate(answer).model_dump(mode="json"),
        audit=[
            {"index": index, "delivery": r.delivery, "receipt": r.receipt, "asset_id": r.asset_id}
            for index, r in enumerate(results)
        ],
    )


crm.post(
    "/crm/people/rider_courses",
    rider_courses,
    decode=booking_of,
    example=RIDER_COURSES_EXAMPLE,
    body=RiderCoursesRequest,
    brackets=r"^people_product\[[0-9]+\]\[[A-Za-z0-9_]+\]$",
    ok="Every item was processed; each says in its own entry whether it was applied.",
    answer=RiderCoursesResponse,
    notes={
        400: "The body is always the plain text `Status update failed.`; the reason"
        " is in X-Failure-Reason and in the audit record."
    },
    summary="Book people onto courses, or change a course's status (operation 1; scope courses)",
)


def read_asset(session: Session, asset_id: str) -> Asset | None:
    """Return a booked course with its status history, oldest change first."""
    return service.get_asset(session, asset_id)


admin.get(
    "/admin/assets/{asset_id}",
    read_asset,
    response=BookedCourse,
    missing="asset",
    ok="The course.",
    summary="Read a booked course with its status history",
)
