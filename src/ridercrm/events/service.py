"""Write events into the outbox, in the transaction of the change they describe.

The services that change people and courses call these functions where they change
the rows, so an event is stored exactly when its change commits. Each is recorded with
the session's unit of work (``EVENTS``, ridercrm.unit_of_work) and inserted in bulk just
before the transaction commits, still under the rows' locks; an item savepoint that
rolls back discards the events recorded in it, and a transaction that rolls back writes
none. Each event gets one delivery row per enabled
endpoint that wants its type, in the same transaction.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from typing import Any, cast

from sqlalchemy import Column, MetaData, Table, Text, select, update
from sqlalchemy.orm import Session
from uuid_utils import uuid7

from ridercrm.db import bulk_insert, utcnow
from ridercrm.events.models import PENDING, Delivery, Event, WebhookEndpoint, is_open
from ridercrm.fields import PERSON_FIELDS
from ridercrm.unit_of_work import Effect, installed, memo

PERSON_CREATED = "person.created"
PERSON_UPDATED = "person.updated"
LEAD_CONVERTED = "lead.converted"
COURSE_BOOKED = "course.booked"
COURSE_UPDATED = "course.updated"
COURSE_STATUS_CHANGED = "course.status_changed"
PERSON_MERGED = "person.merged"
PERSON_UNMERGED = "person.unmerged"
SESSION_CREATED = "session.created"
SESSION_UPDATED = "session.updated"
SESSION_CANCELLED = "session.cancelled"
SESSION_SEAT_OFFERED = "session.seat_offered"
WAITLIST_JOINED = "waitlist.joined"
WAITLIST_LAPSED = "waitlist.lapsed"
# Notifications (recorded by ridercrm.notifications.sender when a message's outcome is stored).
MESSAGE_SENT = "message.sent"
MESSAGE_FAILED = "message.failed"
EVENT_TYPES = (
    PERSON_CREATED,
    PERSON_UPDATED,
    LEAD_CONVERTED,
    COURSE_BOOKED,
    COURSE_UPDATED,
    COURSE_STATUS_CHANGED,
    PERSON_MERGED,
    PERSON_UNMERGED,
    SESSION_CREATED,
    SESSION_UPDATED,
    SESSION_CANCELLED,
    SESSION_SEAT_OFFERED,
    WAITLIST_JOINED,
    WAITLIST_LAPSED,
    MESSAGE_SENT,
    MESSAGE_FAILED,
)
KNOWN_TYPES = EVENT_TYPES

_SUBSCRIBERS = "events.endpoints"
EVENT_COLUMNS = ("id", "type", "subject", "payload", "created_at")
DELIVERY_COLUMNS = (
    "event_id",
    "endpoint_id",
    "subject",
    "status",
    "attempts",
    "next_attempt_at",
    "created_at",
)
EVENTS_TABLE = cast(Table, Event.__table__)
DELIVERIES_TABLE = cast(Table, Delivery.__table__)
# The events table as the outbox inserts it: the payload is JSON text already (record
# serialises it at once, so a transaction holds one string per event, not a tree of
# dicts for the garbage collector to walk: a 200-item booking holds about 700).
EVENT_ROWS = Table(
    "events",
    MetaData(),
    *(
        Column(name, Text() if name == "payload" else EVENTS_TABLE.c[name].type)
        for name in EVENT_COLUMNS
    ),
)


def new_event_id() -> str:
    """A fresh Standard Webhooks message id: ``msg_`` and a UUIDv7 (RFC 9562) in hex.

    A UUIDv7 starts with its time, so the ids of new events sort after the ones before and
    their inserts append to the events' primary key and the deliveries' ``event_id``
    index. Random ids put each event on its own page of both, more pages as the table
    grows: a commit of 700 events wrote 3.4 MB of SQLite's log with 500,000 events stored,
    against 0.16 MB with time-ordered ids (a one-off script:
    `git show 7ef7860:bench/event_ids_bench.py`).
    """
    return "msg_" + uuid7().hex


def json_value(value: Any) -> Any:
    """A stored value as an event carries it (dates as ISO 8601, decimals as text)."""
    if isinstance(value, dt.datetime | dt.date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return f"{value:.2f}"
    return value


def person_state(values: Mapping[str, Any]) -> dict[str, Any]:
    """A person's id, kind and stored fields, as JSON values."""
    state = {"id": values["id"], "kind": values["kind"]}
    state.update({name: json_value(values.get(name)) for name in PERSON_FIELDS})
    return state


def _envelope(event_type: str, data: dict[str, Any], now: dt.datetime) -> str:
    """The event's payload as stored and sent: JSON text."""
    envelope = {"type": event_type, "timestamp": now.isoformat(), "data": data}
    return json.dumps(envelope, separators=(",", ":"), ensure_ascii=False)


def _endpoints(session: Session) -> list[tuple[str, frozenset[str], bool]]:
    """Every endpoint's id, types and whether it is enabled (read once per transaction)."""
    kept = memo(session)
    cached = kept.get(_SUBSCRIBERS)
    if cached is None:
        rows = session.execute(
            select(WebhookEndpoint.id, WebhookEndpoint.event_types, WebhookEndpoint.enabled)
        ).all()
        cached = [(row.id, frozenset(row.event_types), bool(row.enabled)) for row in rows]
        kept[_SUBSCRIBERS] = cached
    return cached


def subscribers(session: Session, event_type: str) -> list[str]:
    """Ids of the enabled endpoints that want this event type (read once per transaction)."""
    return [
        endpoint_id
        for endpoint_id, types, enabled in _endpoints(session)
        if enabled and event_type in types
    ]


def wanted(session: Session, event_type: str) -> bool:
    """Whether any endpoint, enabled or disabled, wants this event type.

    Only such events are stored (docs/decisions.md, "Events (webhooks)"): an event of a type no endpoint lists could reach no one, since an
    endpoint created later receives what is made from its creation on, and a disabled
    one can be enabled and replay ``--since`` its ``disabled_at``, so its types still
    count.
    """
    return any(event_type in types for _id, types, _enabled in _endpoints(session))


def forget_subscribers(session: Session) -> None:
    """Read the endpoints again at the next event (after endpoints changed)."""
    if installed(session):
        memo(session).pop(_SUBSCRIBERS, None)


def record(session: Session, *, event_type: str, subject: str, data: dict[str, Any]) -> str:
    """Record one event in the session's transaction; return its id.

    Events are inserted together, with their deliveries, when the transaction commits
    (two multi-row inserts instead of two per event: a 200-item booking records about
    700); an event recorded in a savepoint that rolls back is discarded with it. Its
    payload is made then too, only if it is stored (:func:`wanted`): ``data`` is made
    of values (every caller builds it afresh), not of rows that may change meanwhile.
    """
    now = utcnow()
    event_id = new_event_id()
    EVENTS.add(session, (event_id, event_type, subject, data, now))
    return event_id


def _write_recorded(session: Session, rows: Sequence[tuple[Any, ...]]) -> None:
    """Write the recorded events (id, type, subject, data, created_at) of types an
    endpoint wants, each with its payload (:func:`_envelope`)."""
    write_events(
        session,
        [
            (event_id, event_type, subject, _envelope(event_type, data, now), now)
            for event_id, event_type, subject, data, now in rows
            if wanted(session, event_type)
        ],
    )


def write_events(session: Session, rows: Sequence[tuple[Any, ...]]) -> None:
    """Insert events (id, type, subject, payload as JSON text, created_at) and their
    deliveries now; events of a type no endpoint wants are left out (:func:`wanted`)."""
    rows = [row for row in rows if wanted(session, row[1])]
    deliveries: list[tuple[Any, ...]] = []
    for event_id, event_type, subject, _payload, created_at in rows:
        deliveries.extend(
            (event_id, endpoint_id, subject, PENDING, 0, created_at, created_at)
            for endpoint_id in subscribers(session, event_type)
        )
    _insert(session, EVENT_ROWS, EVENT_COLUMNS, rows)
    _insert(session, DELIVERIES_TABLE, DELIVERY_COLUMNS, deliveries)


EVENTS: Effect[tuple[Any, ...]] = Effect("events", _write_recorded)
"""Recorded events, written when the transaction commits (ridercrm.unit_of_work)."""


def _insert(
    session: Session, table: Table, columns: Sequence[str], rows: Sequence[tuple[Any, ...]]
) -> None:
    """Insert the outbox's rows in the transaction, the cheapest way the backend has.

    On PostgreSQL (psycopg) one COPY per table: a 200-item booking writes about 1,400
    rows, which psycopg's executemany sends as one INSERT each; COPY took 40 % less
    time and 60 % less CPU for them (bench/README.md, Events). The values are those a
    Core insert binds: the payload as JSON text (``EVENT_ROWS``), timestamps aware (UTC).
    Elsewhere db.bulk_insert (SQLite's executemany).
    """
    if not rows:
        return
    connection = session.connection()
    if connection.dialect.name != "postgresql" or connection.dialect.driver != "psycopg":
        bulk_insert(session, table, columns, rows)
        return
    from psycopg import sql

    statement = sql.SQL("COPY {} ({}) FROM STDIN").format(
        sql.Identifier(table.name), sql.SQL(", ").join(map(sql.Identifier, columns))
    )
    driver = connection.connection.driver_connection
    assert driver is not None
    with driver.cursor() as cursor, cursor.copy(statement) as copy:
        for row in rows:
            copy.write_row(row)


def subject_of(person_id: str) -> str:
    """The subject a person's events are delivered in order under, their courses' events
    included: one person's events reach each endpoint in order (docs/events.md)."""
    return f"person:{person_id}"


def person_created(session: Session, person: Any) -> None:
    """A contact or lead was stored."""
    values = {name: getattr(person, name) for name in (*PERSON_FIELDS, "id", "kind")}
    record(
        session,
        event_type=PERSON_CREATED,
        subject=subject_of(person.id),
        data={"person": person_state(values)},
    )


def person_updated(session: Session, person: Any, fields: Iterable[str]) -> None:
    """Fields of a person changed: their names only, never their values."""
    record(
        session,
        event_type=PERSON_UPDATED,
        subject=subject_of(person.id),
        data={"person_id": person.id, "kind": person.kind, "fields": sorted(fields)},
    )


def lead_converted(session: Session, lead: Any, contact: Any) -> None:
    """A lead became a contact."""
    record(
        session,
        event_type=LEAD_CONVERTED,
        subject=subject_of(lead.id),
        data={"lead_id": lead.id, "contact_id": contact.id},
    )


def course_booked(session: Session, asset: Any, course: Mapping[str, Any]) -> None:
    """A new course was booked; ``course``: its state (courses.schemas.course_state)."""
    record(
        session,
        event_type=COURSE_BOOKED,
        subject=subject_of(asset.person_id),
        data={"course": course},
    )


def course_updated(
    session: Session,
    asset: Any,
    course: Mapping[str, Any],
    fields: Iterable[str],
    *,
    publisher: str | None = None,
) -> None:
    """Fields of a course other than its status changed; ``course``: its state
    (courses.schemas.course_state); ``publisher``: published with that person's events
    instead of its own person's (a merge's or undo's move)."""
    record(
        session,
        event_type=COURSE_UPDATED,
        subject=subject_of(publisher or asset.person_id),
        data={"course": course, "fields": sorted(fields)},
    )


def course_status_changed(session: Session, asset: Any, *, from_status: str, audit_id: str) -> None:
    """A course's status changed: from, to, feedback and the audit record of the request."""
    record(
        session,
        event_type=COURSE_STATUS_CHANGED,
        subject=subject_of(asset.person_id),
        data={
            "course_id": asset.id,
            "person_id": asset.person_id,
            "from": from_status,
            "to": asset.course_status,
            "feedback": asset.course_feedback,
            "audit_id": audit_id,
        },
    )


def person_merged(
    session: Session,
    *,
    survivor: Any,
    merged_ids: Sequence[str],
    merge_id: int,
    moved_courses: Sequence[str],
    audit_id: str | None,
) -> None:
    """People were merged into a survivor (their courses' own course.updated follow)."""
    record(
        session,
        event_type=PERSON_MERGED,
        subject=subject_of(survivor.id),
        data={
            "survivor_id": survivor.id,
            "kind": survivor.kind,
            "merged_ids": list(merged_ids),
            "merge_id": merge_id,
            "moved_courses": sorted(moved_courses),
            "audit_id": audit_id,
        },
    )


def follow_survivor(session: Session, *, survivor_id: str, merged_ids: Sequence[str]) -> None:
    """The merged people's undelivered events join the survivor's queue, where their
    delivery ids (older than the merge's events) keep them first: a receiver gets each
    merged person's last news before the merge, and the courses' earlier events before
    their move (docs/decisions.md, "Events (webhooks)")."""
    # By endpoint and subject: the deliveries' (endpoint_id, subject, id) index finds
    # them without reading the whole delivery log.
    endpoints = session.scalars(select(WebhookEndpoint.id)).all()
    if not endpoints:
        return
    session.execute(
        update(Delivery)
        .where(Delivery.endpoint_id.in_(endpoints))
        .where(Delivery.subject.in_([subject_of(merged) for merged in merged_ids]))
        .where(is_open(Delivery.status))
        .values(subject=subject_of(survivor_id)),
        execution_options={"synchronize_session": False},
    )


def alias_kept(session: Session, *, person_id: str, kind: str, alias_id: str) -> None:
    """An import kept a matched row's own id as an alias of the person it matched: that
    id now stands for the person, as a merged one does (person.merged, no merge to undo).
    The caller holds the person's row lock, as for every event of a person."""
    record(
        session,
        event_type=PERSON_MERGED,
        subject=subject_of(person_id),
        data={
            "survivor_id": person_id,
            "kind": kind,
            "merged_ids": [alias_id],
            "merge_id": None,
            "moved_courses": [],
            "audit_id": None,
        },
    )


def person_unmerged(
    session: Session,
    *,
    survivor: Any,
    restored_ids: Sequence[str],
    merge_id: int,
    moved_courses: Sequence[str],
    audit_id: str | None,
) -> None:
    """A merge was undone: the merged people are live again with their own values."""
    record(
        session,
        event_type=PERSON_UNMERGED,
        subject=subject_of(survivor.id),
        data={
            "survivor_id": survivor.id,
            "kind": survivor.kind,
            "restored_ids": list(restored_ids),
            "merge_id": merge_id,
            "moved_courses": sorted(moved_courses),
            "audit_id": audit_id,
        },
    )


def people_imported(
    session: Session, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """person.created for each imported row (its values in the order of ``columns``),
    written in bulk beside the rows, when an endpoint wants person.created; else nothing
    at all (not even the payloads)."""
    if not wanted(session, PERSON_CREATED):
        return
    now = utcnow()
    write_events(
        session,
        [
            (
                new_event_id(),
                PERSON_CREATED,
                subject_of(values["id"]),
                _envelope(PERSON_CREATED, {"person": person_state(values)}, now),
                now,
            )
            for values in (dict(zip(columns, row, strict=True)) for row in rows)
        ],
    )
