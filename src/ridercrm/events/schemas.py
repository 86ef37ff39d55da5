"""Webhook endpoints in and out, and the events' payloads (documented in the OpenAPI document)."""

from __future__ import annotations

import datetime as dt
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ridercrm.fields import control_problem

# --- Endpoints (admin API) ------------------------------------------------------------

MAX_URL = 2000


class WebhookCreate(BaseModel):
    """A new webhook endpoint. Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid")

    url: str = Field(min_length=1, max_length=MAX_URL, description="http:// or https:// URL.")
    event_types: list[str] = Field(
        min_length=1, max_length=20, description="The event types to send, e.g. person.created."
    )
    description: str = Field(default="", max_length=500)

    @field_validator("description")
    @classmethod
    def _no_control(cls, value: str) -> str:
        # PostgreSQL refuses NUL in text (stored, it was a 500); escape sequences would reach
        # the terminal of whoever runs `ridercrm webhooks list`.
        if control_problem(value) is not None:
            raise ValueError("must be text without NUL or other control characters")
        return value


class WebhookAction(BaseModel):
    """Disable or enable an endpoint: no fields; the body may be empty or {}."""

    model_config = ConfigDict(extra="forbid")


class WebhookRotate(BaseModel):
    """Rotate an endpoint's secret. An empty body takes the default grace time."""

    model_config = ConfigDict(extra="forbid")

    grace_hours: float | None = Field(
        default=None,
        ge=0,
        le=24 * 30,
        description="How long the old secret also signs (default RIDERCRM_WEBHOOK_SECRET_GRACE_HOURS).",
    )


class WebhookReplay(BaseModel):
    """Send one event again, or every event of the endpoint's types since a time."""

    model_config = ConfigDict(extra="forbid")

    event_id: str | None = Field(default=None, max_length=40, description="An event (msg_...).")
    since: dt.datetime | None = Field(
        default=None, description="ISO 8601 time; UTC when no zone is given."
    )

    @field_validator("since", mode="before")
    @classmethod
    def _written_as_a_time(cls, value: object) -> object:
        # Pydantic reads a number ("-1", 0) as Unix time: a typo would replay every event
        # since 1970. Only a time written out is taken.
        if isinstance(value, int | float) or (
            isinstance(value, str) and value.strip().lstrip("+-").replace(".", "", 1).isdigit()
        ):
            raise ValueError("must be an ISO 8601 time such as 2026-11-28T09:00:00Z")
        return value


class WebhookSecret(BaseModel):
    """An endpoint's id and signing secret, shown this once."""

    id: str
    secret: str = Field(pattern="^whsec_", description="Verify signatures with it; keep it safe.")


class WebhookHealth(BaseModel):
    """How the endpoint's deliveries are going."""

    last_success: str | None = Field(description="When a delivery last succeeded (UTC).")
    failing_since: str | None = Field(
        description="Created time of the oldest delivery tried and not delivered since the"
        " last success (retrying or given up); null when nothing is failing."
    )
    pending: int = Field(description="Deliveries waiting to be sent (or being sent).")
    last_error: str | None = Field(
        None,
        description="What the newest failing delivery was told (`HTTP 500`, `timed out`,"
        " a connection error); null when nothing is failing.",
    )


class WebhookRead(BaseModel):
    """An endpoint (never its secret)."""

    health: WebhookHealth | None = Field(
        None, description="Listing and reading an endpoint include it; changes do not."
    )

    id: str
    url: str
    description: str
    event_types: list[str]
    allowed_hosts: list[str] = Field(
        description="The RIDERCRM_WEBHOOK_ALLOWED_HOSTS entries (host names, CIDR ranges)"
        " its URL needed when it was registered: every deliverer honours them."
    )
    enabled: bool
    disabled_reason: str | None = Field(
        description="Why it is disabled: by an operator, a 410 answer or a failed retry schedule."
    )
    disabled_at: str | None
    previous_secret_until: str | None = Field(
        description="Until when the secret before the last rotation also signs."
    )
    created_at: str


class WebhookList(BaseModel):
    """Every endpoint."""

    webhooks: list[WebhookRead]


class DeliveryRead(BaseModel):
    """One event to one endpoint: status, attempts, last response; never the payload."""

    id: int
    event_id: str
    event_type: str
    status: Literal["pending", "sending", "delivered", "failed"]
    attempts: int
    response_code: int | None
    latency_ms: int | None
    error: str | None
    next_attempt_at: str | None = Field(description="When a pending delivery is tried next.")
    created_at: str
    finished_at: str | None


class DeliveryList(BaseModel):
    """An endpoint's deliveries, newest first; next_before continues the list."""

    deliveries: list[DeliveryRead]
    next_before: int | None


class Replayed(BaseModel):
    """How many deliveries a replay added."""

    replayed: int


# --- Event payloads (the webhooks themselves) -----------------------------------------


class PersonState(BaseModel):
    """A contact or lead as stored (personal fields: only person.created carries them)."""

    id: str
    kind: Literal["contact", "lead"]
    first_name: str
    last_name: str
    date_of_birth: str | None = Field(description="YYYY-MM-DD")
    email: str | None
    postcode: str | None
    mobile_phone: str | None
    home_phone: str | None
    drivers_license: str | None
    license_type: str | None
    street: str | None
    city: str | None
    state: str | None
    country: str | None
    lead_source: str | None
    opt_in: bool | None


class PersonCreatedData(BaseModel):
    person: PersonState


class PersonUpdatedData(BaseModel):
    person_id: str
    kind: Literal["contact", "lead"]
    fields: list[str] = Field(description="Names of the fields that changed; never their values.")


class LeadConvertedData(BaseModel):
    lead_id: str
    contact_id: str = Field(description="The new contact; the lead's id now stands for it.")


class CourseStatusChangedData(BaseModel):
    course_id: str
    person_id: str
    from_: str = Field(alias="from")
    to: str
    feedback: str | None
    audit_id: str = Field(description="The audit record of the request that changed it.")


class PersonMergedData(BaseModel):
    survivor_id: str = Field(
        description="The record that remains; the merged ids now stand for it."
    )
    kind: Literal["contact", "lead"]
    merged_ids: list[str] = Field(description="The records folded into the survivor.")
    merge_id: int | None = Field(
        description="The merge, for `POST /admin/people/merge/{id}/undo`; null when an import"
        " kept another system's id as an alias of the survivor (nothing to undo)."
    )
    moved_courses: list[str] = Field(
        description="Courses re-pointed to the survivor; each also has its course.updated."
    )
    audit_id: str | None = Field(
        description="The audit record of the request that merged; null for an import."
    )


class PersonUnmergedData(BaseModel):
    survivor_id: str = Field(description="The survivor of the merge that was undone.")
    kind: Literal["contact", "lead"]
    restored_ids: list[str] = Field(description="The records live again, with their own values.")
    merge_id: int
    moved_courses: list[str] = Field(
        description="Courses moved back to their owners; each also has its course.updated."
    )
    audit_id: str | None = Field(description="The audit record of the request that undid it.")


class SessionState(BaseModel):
    """A course session's stored fields (issue 25); times are the site's local wall time."""

    id: str = Field(description="The session (a0S...).")
    product_id: str
    location: str
    course_datetime: str
    course_date_end: str | None
    capacity: int | None = Field(description="Seats; null: no limit.")
    minimum: int
    instructors: int | None
    seats: int | None = Field(description="Seats on sale (capacity, limited by instructor cover).")
    booked: int
    held: int = Field(description="Seats held for waiting-list offers.")
    status: Literal["scheduled", "confirmed", "cancelled"]


class SessionCreatedData(BaseModel):
    session: SessionState


class SessionUpdatedData(BaseModel):
    session: SessionState
    fields: list[str] = Field(description="The names of the fields that changed.")


class SessionCancelledData(BaseModel):
    session: SessionState


class SeatOfferedData(BaseModel):
    session_id: str
    person_id: str = Field(description="The first person waiting, who holds the seat.")
    product_id: str
    location: str
    course_datetime: str = Field(description="Start, the site's local wall time.")
    offered_until: str = Field(description="When the hold lapses (ISO 8601, UTC).")


class WaitlistJoinedData(BaseModel):
    session_id: str
    person_id: str
    position: int = Field(description="Place in line when joining (1 first).")


class WaitlistLapsedData(BaseModel):
    session_id: str
    person_id: str = Field(description="Whose offer lapsed; the seat passes to the next.")


class MessageOutcomeData(BaseModel):
    message_id: int = Field(description="The message's row (the person page lists it).")
    person_id: str
    course_id: str | None = Field(description="The course it is about; null for a seat offer.")
    channel: Literal["email", "sms"]
    kind: Literal[
        "confirmation", "moved", "cancelled", "reminder", "result", "waitlist_offer", "digest"
    ]
    status: Literal["sent", "failed"]
    attempts: int
    reason: str | None = Field(description="Why it failed (the server's or gateway's answer).")
    provider_id: str | None = Field(
        description="The e-mail's Message-ID, or the SMS gateway's message id."
    )


class Envelope(BaseModel):
    # Every event's envelope; a feature that owns its events' payloads declares them on it
    # (the course events: courses/schemas.py).
    timestamp: str = Field(description="When the change was made (ISO 8601, UTC).")


class PersonCreatedEvent(Envelope):
    """A contact or lead was stored: by the admin API, an import, or a lead's conversion."""

    type: Literal["person.created"]
    data: PersonCreatedData


class PersonUpdatedEvent(Envelope):
    """Fields of a contact or lead changed (operations 1 and 2)."""

    type: Literal["person.updated"]
    data: PersonUpdatedData


class LeadConvertedEvent(Envelope):
    """A lead was converted to a contact when a course was booked for it."""

    type: Literal["lead.converted"]
    data: LeadConvertedData


class CourseStatusChangedEvent(Envelope):
    """A course's status changed (operation 1): from, to, feedback and the audit id."""

    type: Literal["course.status_changed"]
    data: CourseStatusChangedData


class PersonMergedEvent(Envelope):
    """Duplicate people were merged into one survivor (admin API or `ridercrm duplicates`)."""

    type: Literal["person.merged"]
    data: PersonMergedData


class PersonUnmergedEvent(Envelope):
    """A merge was undone: each merged record is live again."""

    type: Literal["person.unmerged"]
    data: PersonUnmergedData


class SessionCreatedEvent(Envelope):
    """A course session was created (admin API, CLI, backfill)."""

    type: Literal["session.created"]
    data: SessionCreatedData


class SessionUpdatedEvent(Envelope):
    """A session's capacity, minimum, instructors, end or status changed."""

    type: Literal["session.updated"]
    data: SessionUpdatedData


class SessionCancelledEvent(Envelope):
    """A session was cancelled; its bookings each have a course.status_changed."""

    type: Literal["session.cancelled"]
    data: SessionCancelledData


class SeatOfferedEvent(Envelope):
    """A freed seat is held for the first person waiting until offered_until."""

    type: Literal["session.seat_offered"]
    data: SeatOfferedData


class WaitlistJoinedEvent(Envelope):
    """A person joined a full session's waiting list."""

    type: Literal["waitlist.joined"]
    data: WaitlistJoinedData


class WaitlistLapsedEvent(Envelope):
    """A held seat's offer lapsed unused; the seat passes to the next person waiting."""

    type: Literal["waitlist.lapsed"]
    data: WaitlistLapsedData


class MessageSentEvent(Envelope):
    """A message (e-mail or SMS) was accepted by the SMTP server or the SMS gateway."""

    type: Literal["message.sent"]
    data: MessageOutcomeData


class MessageFailedEvent(Envelope):
    """A message could not be sent: refused, a bad address, or its retries used up."""

    type: Literal["message.failed"]
    data: MessageOutcomeData


# The events this package declares; with each feature's own (courses.schemas.COURSE_EVENT_MODELS)
# the web layer documents every type, in EVENT_TYPES' order (web/routes/events.py, EVENT_MODELS).
EVENT_MODELS: dict[str, type[Envelope]] = {
    "person.created": PersonCreatedEvent,
    "person.updated": PersonUpdatedEvent,
    "lead.converted": LeadConvertedEvent,
    "course.status_changed": CourseStatusChangedEvent,
    "person.merged": PersonMergedEvent,
    "person.unmerged": PersonUnmergedEvent,
    "session.created": SessionCreatedEvent,
    "session.updated": SessionUpdatedEvent,
    "session.cancelled": SessionCancelledEvent,
    "session.seat_offered": SeatOfferedEvent,
    "waitlist.joined": WaitlistJoinedEvent,
    "waitlist.lapsed": WaitlistLapsedEvent,
    "message.sent": MessageSentEvent,
    "message.failed": MessageFailedEvent,
}
