"""Sessions and waiting-list entries in and out (docs/decisions.md, "Course sessions")."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ridercrm import fields
from ridercrm.sessions import values
from ridercrm.sessions.models import SESSION_STATUSES, WAITLIST_STATES

Count = int | None
SessionStatus = Literal["scheduled", "confirmed", "cancelled"]
assert set(SessionStatus.__args__) == set(SESSION_STATUSES)  # type: ignore[attr-defined]


class SessionCreate(BaseModel):
    """A new session. Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    product_id: fields.RequiredShortText = Field(description="The product (01t...).")
    location: values.Location
    course_datetime: values.Start
    course_date_end: values.End = None
    # strict: a JSON number, not true (1) or "12"
    capacity: Count = Field(
        default=None, ge=0, le=10_000, strict=True, description="Seats; absent or null: no limit."
    )
    minimum: int = Field(
        default=0,
        ge=0,
        le=10_000,
        strict=True,
        description="Fewest riders to run it (at most the capacity).",
    )
    instructors: Count = Field(
        default=None,
        ge=0,
        strict=True,
        le=1_000,
        description="Instructors rostered; with the product's trainees per instructor they"
        " limit the seats on sale.",
    )
    status: Literal["scheduled", "confirmed"] = "scheduled"


class SessionUpdate(BaseModel):
    """Changes to a session: only the fields sent change. Unknown fields are refused.

    Setting status ``cancelled`` cancels the session's bookings (move riders first)."""

    model_config = ConfigDict(extra="forbid")

    course_date_end: values.End = None
    capacity: Count = Field(default=None, ge=0, le=10_000, strict=True)
    minimum: int | None = Field(default=None, ge=0, le=10_000, strict=True)
    instructors: Count = Field(default=None, ge=0, le=1_000, strict=True)
    status: SessionStatus | None = None


SESSION_EXAMPLE: dict[str, Any] = {
    "product_id": "01tAb000000Xyz1AAA",
    "location": "somerton",
    "course_datetime": "2026-12-05 08:30:00",
    "course_date_end": "2026-12-05 16:30:00",
    "capacity": 12,
    "minimum": 4,
    "instructors": 3,
}


class SessionRead(BaseModel):
    """A session with its seats: what the booking website's calendar shows."""

    model_config = ConfigDict(from_attributes=True)

    id: str = Field(description="18 characters, prefix a0S.")
    product_id: str
    location: str
    course_datetime: str = Field(description="Start, the site's local wall time.")
    course_date_end: str | None
    capacity: int | None = Field(description="Seats; null: no limit.")
    minimum: int
    instructors: int | None
    trainees_per_instructor: int | None = Field(description="The product's; null: no limit.")
    seats: int | None = Field(
        description="Seats on sale: the capacity, or fewer when the instructors cannot cover it."
    )
    booked: int = Field(description="Courses booked or completed in it.")
    held: int = Field(description="Seats held for waiting-list offers.")
    seats_left: int | None = Field(description="Seats still for sale; null: no limit.")
    waitlist: int = Field(description="People waiting or holding an offer.")
    status: SessionStatus


class WaitlistJoin(BaseModel):
    """Who joins the waiting list."""

    model_config = ConfigDict(extra="forbid")

    person_id: fields.RequiredShortText = Field(description="A contact or lead id.")


class WaitlistRead(BaseModel):
    """An entry of a session's waiting list."""

    session_id: str
    person_id: str
    position: int | None = Field(description="Place in line (1 first); null once out of it.")
    state: Literal["waiting", "offered", "booked", "lapsed", "removed"]
    offered_until: str | None = Field(description="Until when the held seat is theirs (UTC).")


assert set(WaitlistRead.model_fields["state"].annotation.__args__) == set(WAITLIST_STATES)  # type: ignore[union-attr]
