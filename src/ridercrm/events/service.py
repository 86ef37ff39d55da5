"""Write events into the outbox, in the transaction of the change they describe.

The services that change people and courses call these functions where they change
the rows, so an event is stored exactly when its change commits: a rolled-back
transaction or item savepoint takes its events (flushed ORM rows) with it. Each event
gets one delivery row per enabled endpoint that wants its type, in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import secrets
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import Table, select
from sqlalchemy.orm import Session

from ridercrm.db import bulk_insert, utcnow
from ridercrm.events.models import PENDING, Delivery, Event, WebhookEndpoint
from ridercrm.people.models import PERSON_FIELDS

PERSON_CREATED = "person.created"
PERSON_UPDATED = "person.updated"
LEAD_CONVERTED = "lead.converted"
COURSE_BOOKED = "course.booked"
COURSE_UPDATED = "course.updated"
COURSE_STATUS_CHANGED = "course.status_changed"
EVENT_TYPES = (
    PERSON_CREATED,
    PERSON_UPDATED,
    LEAD_CONVERTED,
    COURSE_BOOKED,
    COURSE_UPDATED,
    COURSE_STATUS_CHANGED,
)
# Documented and accepted in subscriptions, not yet emitted: it waits for the merge
# of duplicates (DESIGN §14).
PERSON_MERGED = "person.merged"
KNOWN_TYPES = (*EVENT_TYPES, PERSON_MERGED)

COURSE_STATE_FIELDS = (
    "booking_number",
    "course_status",
    "course_feedback",
    "course_datetime",
    "course_date_end",
    "course_location",
    "rider_instructor_1",
    "rider_instructor_2",
    "dealer_code",
    "course_price",
    "booking_source",
)

_SUBSCRIBERS = "ridercrm.webhook_subscribers"
EVENTS_TABLE = cast(Table, Event.__table__)
DELIVERIES_TABLE = cast(Table, Delivery.__table__)


def new_event_id() -> str:
    """A fresh Standard Webhooks message id."""
    return "msg_" + secrets.token_urlsafe(18)


def _json_value(value: Any) -> Any:
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return f"{value:.2f}"
    return value


def person_state(values: Mapping[str, Any]) -> dict[str, Any]:
    """A person's id, kind and stored fields, as JSON values."""
    state = {"id": values["id"], "kind": values["kind"]}
    state.update({name: _json_value(values.get(name)) for name in PERSON_FIELDS})
    return state


def course_state(asset: Any) -> dict[str, Any]:
    """A course's ids and stored fields (no personal field), as JSON values."""
    state = {"id": asset.id, "person_id": asset.person_id, "product_id": asset.product_id}
    state.update({name: _json_value(getattr(asset, name)) for name in COURSE_STATE_FIELDS})
    return state


def _envelope(event_type: str, data: dict[str, Any], now: dt.datetime) -> dict[str, Any]:
    return {"type": event_type, "timestamp": now.isoformat(), "data": data}


def subscribers(session: Session, event_type: str) -> list[str]:
    """Ids of the enabled endpoints that want this event type (read once per transaction)."""
    cached = session.info.get(_SUBSCRIBERS)
    if cached is None:
        rows = session.execute(
            select(WebhookEndpoint.id, WebhookEndpoint.event_types).where(
                WebhookEndpoint.enabled.is_(True)
            )
        ).all()
        cached = [(row.id, frozenset(row.event_types)) for row in rows]
        session.info[_SUBSCRIBERS] = cached
    return [endpoint_id for endpoint_id, types in cached if event_type in types]


def forget_subscribers(session: Session) -> None:
    """Read the endpoints again at the next event (after endpoints changed)."""
    session.info.pop(_SUBSCRIBERS, None)


def record(session: Session, *, event_type: str, subject: str, data: dict[str, Any]) -> Event:
    """Store one event and its deliveries in the session's transaction."""
    now = utcnow()
    event = Event(
        id=new_event_id(),
        type=event_type,
        subject=subject,
        payload=_envelope(event_type, data, now),
        created_at=now,
    )
    session.add(event)
    session.add_all(
        Delivery(event=event, endpoint_id=endpoint_id, subject=subject, next_attempt_at=now)
        for endpoint_id in subscribers(session, event_type)
    )
    return event


def person_created(session: Session, person: Any) -> None:
    """A contact or lead was stored."""
    values = {name: getattr(person, name) for name in (*PERSON_FIELDS, "id", "kind")}
    record(
        session,
        event_type=PERSON_CREATED,
        subject=f"person:{person.id}",
        data={"person": person_state(values)},
    )


def person_updated(session: Session, person: Any, fields: Iterable[str]) -> None:
    """Fields of a person changed: their names only, never their values."""
    record(
        session,
        event_type=PERSON_UPDATED,
        subject=f"person:{person.id}",
        data={"person_id": person.id, "kind": person.kind, "fields": sorted(fields)},
    )


def lead_converted(session: Session, lead: Any, contact: Any) -> None:
    """A lead became a contact."""
    record(
        session,
        event_type=LEAD_CONVERTED,
        subject=f"person:{lead.id}",
        data={"lead_id": lead.id, "contact_id": contact.id},
    )


def course_booked(session: Session, asset: Any) -> None:
    """A new course was booked."""
    record(
        session,
        event_type=COURSE_BOOKED,
        subject=f"course:{asset.id}",
        data={"course": course_state(asset)},
    )


def course_updated(session: Session, asset: Any, fields: Iterable[str]) -> None:
    """Fields of a course other than its status changed."""
    record(
        session,
        event_type=COURSE_UPDATED,
        subject=f"course:{asset.id}",
        data={"course": course_state(asset), "fields": sorted(fields)},
    )


def course_status_changed(session: Session, asset: Any, *, from_status: str, audit_id: str) -> None:
    """A course's status changed: from, to, feedback and the audit record of the request."""
    record(
        session,
        event_type=COURSE_STATUS_CHANGED,
        subject=f"course:{asset.id}",
        data={
            "course_id": asset.id,
            "person_id": asset.person_id,
            "from": from_status,
            "to": asset.course_status,
            "feedback": asset.course_feedback,
            "audit_id": audit_id,
        },
    )


def people_imported(session: Session, rows: Sequence[Mapping[str, Any]]) -> None:
    """person.created for each imported row, written in bulk beside the rows."""
    if not rows:
        return
    now = utcnow()
    endpoints = subscribers(session, PERSON_CREATED)
    events: list[tuple[Any, ...]] = []
    deliveries: list[tuple[Any, ...]] = []
    for values in rows:
        event_id = new_event_id()
        subject = f"person:{values['id']}"
        data = {"person": person_state(values)}
        events.append(
            (event_id, PERSON_CREATED, subject, _envelope(PERSON_CREATED, data, now), now)
        )
        deliveries.extend((event_id, e, subject, PENDING, 0, now, now) for e in endpoints)
    bulk_insert(session, EVENTS_TABLE, ("id", "type", "subject", "payload", "created_at"), events)
    bulk_insert(
        session,
        DELIVERIES_TABLE,
        (
            "event_id",
            "endpoint_id",
            "subject",
            "status",
            "attempts",
            "next_attempt_at",
            "created_at",
        ),
        deliveries,
    )
