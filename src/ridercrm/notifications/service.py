"""Write messages into the outbox, in the transaction of the change they announce.

The courses service calls :func:`course_booked` and :func:`course_changed` where it
records a course's events, so a message exists exactly when its change commits. A
course's messages are recorded with the session's unit of work (``MESSAGES``,
ridercrm.unit_of_work) and inserted in bulk (one executemany) just before the
transaction commits, with the events and keys: a 200-item booking
writes 1,200 rows, which as ORM rows took as long as the booking itself (bench/README.md,
Messages). An item savepoint that rolls back discards the messages written in it. The
deliverer sends them (``notifications.sender``).
"""

from __future__ import annotations

import datetime as dt
import functools
import os
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Table, func, select, update
from sqlalchemy.orm import Session
from uuid_utils import uuid7

from ridercrm.db import bulk_insert, chunks, utcnow
from ridercrm.notifications import timing
from ridercrm.notifications.models import (
    CANCELLED,
    CONFIRMATION,
    DIGEST,
    EMAIL,
    MOVED,
    OPEN_STATUSES,
    PENDING,
    REMINDER,
    RESULT,
    SKIPPED,
    SMS,
    SUPERSEDED,
    WAITLIST_OFFER,
    Message,
    ReminderStop,
)
from ridercrm.people.models import Person
from ridercrm.unit_of_work import Effect, memo

REMINDERS_INFO = "ridercrm.notify_reminders"
"""A session's reminder offsets (text as RIDERCRM_REMINDERS), set by whoever opens it
with other settings than the environment's (tests, one-off tools)."""

BOOKED = "booked"
CANCELLED_STATUS = "cancelled"
COMPLETED = ("completed - pass", "completed - fail")
MOVE_FIELDS = ("course_datetime", "course_date_end", "course_location")


@functools.lru_cache(maxsize=8)
def _offsets(text: str) -> tuple[tuple[str, dt.timedelta], ...]:
    return timing.parse_reminders(text)


def reminder_offsets(session: Session) -> tuple[tuple[str, dt.timedelta], ...]:
    """The reminders before a course: the session's, else RIDERCRM_REMINDERS (default 48h,2h)."""
    text = session.info.get(REMINDERS_INFO)
    if text is None:
        text = os.environ.get("RIDERCRM_REMINDERS", "48h,2h")
    return _offsets(str(text))


def new_key() -> str:
    """A message's stable key (the Message-ID's local part): a UUIDv7 in hex."""
    return uuid7().hex


def _channels(person: Person | None) -> list[str]:
    """E-mail always (kept as unsent without an address: never dropped); SMS with a mobile."""
    channels = [EMAIL]
    if person is not None and person.mobile_phone:
        channels.append(SMS)
    return channels


def _person(session: Session, person_id: str) -> Person | None:
    return session.get(Person, person_id)


# The people who stopped reminders, read once a transaction (``_stopped``).
_STOPS = "notifications.reminder_stops"
MESSAGES_TABLE: Table = Message.__table__  # type: ignore[assignment]
COLUMNS = (
    "key",
    "person_id",
    "channel",
    "kind",
    "asset_id",
    "product_id",
    "location",
    "course_datetime",
    "course_date_end",
    "booking_number",
    "sequence",
    "detail",
    "due_at",
    "status",
    "attempts",
    "reason",
    "created_at",
    "updated_at",
)


def _message(
    session: Session,
    asset: Any,
    *,
    kind: str,
    channel: str,
    due_at: dt.datetime,
    sequence: int = 0,
    detail: str | None = None,
    status: str = PENDING,
    reason: str | None = None,
) -> None:
    """Write a course's message: kept with the session, inserted when it commits."""
    now = utcnow()
    MESSAGES.add(
        session,
        {
            "key": new_key(),
            "person_id": asset.person_id,
            "channel": channel,
            "kind": kind,
            "asset_id": asset.id,
            "product_id": asset.product_id,
            "location": asset.course_location,
            "course_datetime": asset.course_datetime,
            "course_date_end": asset.course_date_end,
            "booking_number": asset.booking_number,
            "sequence": sequence,
            "detail": detail,
            "due_at": due_at,
            "status": status,
            "attempts": 0,
            "reason": reason,
            "created_at": now,
            "updated_at": now,
        },
    )


@dataclass(frozen=True, slots=True)
class _Superseding:
    """A mark among a transaction's messages: the course's messages recorded before it and
    still queued are superseded, for this reason (:func:`supersede`)."""

    asset_id: str
    reason: str


def _insert_messages(session: Session, pending: list[dict[str, Any] | _Superseding]) -> None:
    """Insert a transaction's messages (one executemany), after the rows they name
    (people: a foreign key) are flushed."""
    rows = _settled(pending)
    if rows:
        session.flush()
        bulk_insert(
            session, MESSAGES_TABLE, COLUMNS, [tuple(row[name] for name in COLUMNS) for row in rows]
        )


def _settled(pending: list[dict[str, Any] | _Superseding]) -> list[dict[str, Any]]:
    """The messages of ``pending``, each queued one that a later mark of its course
    supersedes marked so, with that mark's reason (the first after it)."""
    rows: list[dict[str, Any]] = []
    queued: dict[str, list[dict[str, Any]]] = {}
    for item in pending:
        if isinstance(item, _Superseding):
            for row in queued.pop(item.asset_id, ()):
                row["status"], row["reason"] = SUPERSEDED, item.reason
            continue
        rows.append(item)
        if item["kind"] in REPLACEABLE and item["status"] == PENDING:
            queued.setdefault(item["asset_id"], []).append(item)
    return rows


MESSAGES: Effect[dict[str, Any] | _Superseding] = Effect("messages", _insert_messages)
"""A course's messages (rows as dicts) and the marks that supersede them, in the order
recorded, written when the transaction commits (ridercrm.unit_of_work): a mark recorded
in a savepoint that rolls back is dropped with it, and with it what it superseded."""


def _announce(
    session: Session, asset: Any, kind: str, *, sequence: int = 0, person: Person | None = None
) -> None:
    person = person or _person(session, asset.person_id)
    now = utcnow()
    # A result's message says which: its course status.
    detail = asset.course_status if kind == RESULT else None
    for channel in _channels(person):
        _message(
            session,
            asset,
            kind=kind,
            channel=channel,
            due_at=now,
            sequence=sequence,
            detail=detail,
        )


def _stopped(session: Session, person_id: str) -> bool:
    """Whether a person stopped reminders. The people who did are read once a transaction
    (a few, next to the 200 lookups of a 200-item booking, which cost as much as writing
    its messages); stopping or resuming in the transaction reads them again."""
    kept = memo(session)
    stops = kept.get(_STOPS)
    if stops is None:
        with session.no_autoflush:
            stops = frozenset(session.scalars(select(ReminderStop.person_id)))
        kept[_STOPS] = stops
    return person_id in stops


def _schedule_reminders(session: Session, asset: Any, person: Person | None = None) -> None:
    """A reminder per offset and channel; one whose moment has passed is written as
    skipped (never sent late); none for a person who stopped reminders."""
    start = timing.course_start(asset.course_datetime, asset.course_location)
    if start is None:
        return
    stopped = _stopped(session, asset.person_id)
    person = person or _person(session, asset.person_id)
    now = utcnow()
    for label, moment in timing.reminder_moments(start, reminder_offsets(session)):
        for channel in _channels(person):
            if stopped:
                status, reason = SKIPPED, "the person stopped reminders"
            elif moment <= now:
                status, reason = SKIPPED, "its moment had passed when the course was booked"
            else:
                status, reason = PENDING, None
            _message(
                session,
                asset,
                kind=REMINDER,
                channel=channel,
                due_at=moment,
                detail=label,
                status=status,
                reason=reason,
            )


# What a later change of a course replaces while still queued: its announcements and
# reminders (a seat offer is about a session, not a course: it stays).
REPLACEABLE = (CONFIRMATION, MOVED, CANCELLED, REMINDER, RESULT)


def supersede(session: Session, asset_id: str, reason: str) -> None:
    """Mark a course's messages not sent yet (``pending``: due, deferred by quiet hours or
    waiting for a retry) as superseded, in the transaction of the change that replaces
    them; kept with the reason, never deleted. A message in a sender's hands (``sending``)
    is left to its outcome: it may already be on its way.

    The stored ones are updated when the transaction commits, before its own new messages
    are inserted (``SUPERSEDED_STORED``: a batch of changes is a statement a reason, not one a
    course); the first reason noted for a course is theirs, as when the first change's
    update found them pending and the next ones found none."""
    SUPERSEDED_STORED.note(session, asset_id, reason)
    # This transaction's messages not inserted yet: superseded when they are (_settled).
    MESSAGES.add(session, _Superseding(asset_id, reason))


def _supersede_stored(session: Session, reasons: dict[str, str]) -> None:
    """Supersede the stored queued messages of the courses noted, one UPDATE a reason (a
    few hundred courses a statement)."""
    by_reason: dict[str, list[str]] = {}
    for asset_id, reason in reasons.items():
        by_reason.setdefault(reason, []).append(asset_id)
    now = utcnow()
    for reason, asset_ids in by_reason.items():
        for chunk in chunks(asset_ids, _SUPERSEDE_CHUNK):
            session.execute(
                update(Message)
                .where(
                    Message.asset_id.in_(chunk),
                    Message.kind.in_(REPLACEABLE),
                    Message.status == PENDING,
                )
                .values(status=SUPERSEDED, reason=reason, updated_at=now),
                execution_options={"synchronize_session": False},
            )


_SUPERSEDE_CHUNK = 500

SUPERSEDED_STORED: Effect[str] = Effect(
    "superseded messages", _supersede_stored, keyed=True, first=True
)
"""The courses whose stored queued messages this transaction supersedes (course id: the
reason), updated when it commits, before its new messages are inserted."""


INVITATIONS = (CONFIRMATION, MOVED, CANCELLED)
_SEQUENCES = "ridercrm.invitation_sequences"


@contextmanager
def sequences_read_once(session: Session, asset_ids: Collection[str]) -> Iterator[None]:
    """Within the block, the last stored invitation SEQUENCE of these courses comes from
    one read of them all (a batch of changes: one statement instead of one per course);
    other courses are read as usual. Nothing in the block may insert messages itself
    (they wait in the session until the commit, and are counted as they are now)."""
    rows: Sequence[Any] = []
    if asset_ids:
        rows = session.execute(
            select(Message.asset_id, func.max(Message.sequence))
            .where(Message.asset_id.in_(list(asset_ids)), Message.kind.in_(INVITATIONS))
            .group_by(Message.asset_id)
        ).all()
    stored: dict[str, int | None] = dict.fromkeys(asset_ids)
    stored.update({asset_id: last for asset_id, last in rows})
    session.info[_SEQUENCES] = stored
    try:
        yield
    finally:
        session.info.pop(_SEQUENCES, None)


def _next_sequence(session: Session, asset_id: str) -> int:
    """The calendar SEQUENCE for a course's next invitation: one more than the last
    (stored, or written by this transaction)."""
    invitations = INVITATIONS
    known: dict[str, int | None] = session.info.get(_SEQUENCES, {})
    if asset_id in known:
        last = known[asset_id]
    else:
        last = session.scalar(
            select(func.max(Message.sequence)).where(
                Message.asset_id == asset_id, Message.kind.in_(invitations)
            )
        )
    for row in MESSAGES.pending(session):
        if isinstance(row, dict) and row["asset_id"] == asset_id and row["kind"] in invitations:
            last = row["sequence"] if last is None else max(last, row["sequence"])
    return 0 if last is None else last + 1


def course_booked(session: Session, asset: Any, *, person: Person | None = None) -> None:
    """A new course: its confirmation and reminders (or its result, if booked completed).

    ``person``: the course's person, when the caller holds it (a contact made in this
    transaction and not flushed yet is found no other way)."""
    if asset.course_status == BOOKED:
        _announce(session, asset, CONFIRMATION, person=person)
        _schedule_reminders(session, asset, person)
    elif asset.course_status in COMPLETED:
        _announce(session, asset, RESULT, person=person)


def course_changed(
    session: Session, asset: Any, *, from_status: str, changed: Iterable[str]
) -> None:
    """A course changed (operation 1, the console): announce what the rider must know.

    Whatever of the course's is still queued is superseded first (:func:`supersede`).
    Booked again after a cancellation: a confirmation and new reminders. Cancelled: a
    cancellation (the invitation cancelled). Completed: the
    result. Moved (date, end or site) while booked: a "moved" message with the updated
    invitation, and the reminders rescheduled.
    """
    to_status = asset.course_status
    moved = bool(set(changed) & set(MOVE_FIELDS))
    if to_status != from_status:
        if to_status == BOOKED:
            supersede(session, asset.id, "the course was booked again before it went")
            _announce(session, asset, CONFIRMATION, sequence=_next_sequence(session, asset.id))
            _schedule_reminders(session, asset)
        elif to_status == CANCELLED_STATUS:
            supersede(session, asset.id, "the course was cancelled before it went")
            _announce(session, asset, CANCELLED, sequence=_next_sequence(session, asset.id))
        elif to_status in COMPLETED:
            # From pass to fail (or back) the result was corrected; from booked it ran.
            corrected = from_status in COMPLETED
            supersede(
                session,
                asset.id,
                "a corrected result replaced it"
                if corrected
                else "the course was completed before it went",
            )
            _announce(session, asset, RESULT)
        return
    if moved and to_status == BOOKED:
        supersede(session, asset.id, "the course moved before it went")
        _announce(session, asset, MOVED, sequence=_next_sequence(session, asset.id))
        _schedule_reminders(session, asset)
    elif to_status in COMPLETED and "course_feedback" in set(changed):
        supersede(session, asset.id, "a corrected result replaced it")
        _announce(session, asset, RESULT)


def queue_seat_offer(
    session: Session,
    *,
    person_id: str,
    product_id: str,
    location: str,
    course_datetime: str,
    offered_until: dt.datetime,
    course_date_end: str | None = None,
) -> list[Message]:
    """A seat held for a person from a session's waiting list: tell them until when.

    For the sessions feature to call in the transaction that holds the seat.
    """
    if offered_until.tzinfo is None:
        raise ValueError("offered_until must be an aware (UTC) time")
    person = _person(session, person_id)
    now = utcnow()
    until = offered_until.astimezone(dt.UTC).isoformat(timespec="minutes")
    offers = []
    for channel in _channels(person):
        offer = Message(
            key=new_key(),
            person_id=person_id,
            channel=channel,
            kind=WAITLIST_OFFER,
            location=location,
            product_id=product_id,
            course_datetime=course_datetime,
            course_date_end=course_date_end,
            sequence=0,
            detail=until,
            due_at=now,
            status=PENDING,
            attempts=0,
        )
        session.add(offer)
        offers.append(offer)
    return offers


def withdraw_seat_offers(
    session: Session,
    *,
    person_ids: Any,
    product_id: str,
    location: str,
    course_datetime: str,
    reason: str,
) -> None:
    """Supersede the queued seat-offer messages of these people (ids, or a select of them)
    for this session: their offer ended (taken, lapsed, withdrawn, the session cancelled)
    and "a place is held for you" would be stale, as an SMS kept back by quiet hours was.
    For the sessions feature to call in the transaction that ends the offer."""
    session.flush()  # this transaction's own offers too
    session.execute(
        update(Message)
        .where(
            Message.person_id.in_(person_ids),
            Message.status == PENDING,
            Message.kind == WAITLIST_OFFER,
            Message.product_id == product_id,
            Message.location == location,
            Message.course_datetime == course_datetime,
        )
        .values(status=SUPERSEDED, reason=reason, updated_at=utcnow())
        .execution_options(synchronize_session=False)
    )


def digest_key(site: str, day: dt.date) -> str:
    """A staff digest's key: one per site and day, so a second writer (another deliverer,
    a restart) cannot add another (the key is unique) and its Message-ID is stable."""
    return f"digest-{'-'.join(site.lower().split())}-{day.isoformat()}"


def digest_written(session: Session, site: str, day: dt.date) -> bool:
    """Whether the staff digest of this site and day exists."""
    key = digest_key(site, day)
    return session.scalar(select(Message.id).where(Message.key == key)) is not None


def queue_digest(
    session: Session, *, site: str, day: dt.date, recipient: str, listing: dict[str, Any]
) -> Message:
    """Write the staff digest of ``day`` at ``site`` to ``recipient`` (an e-mail, no
    person); with nothing on that day it is kept as skipped. The caller's transaction
    fails on the unique key if it was written already."""
    empty = not listing.get("sessions") and not listing.get("courses")
    message = Message(
        key=digest_key(site, day),
        person_id=None,
        channel=EMAIL,
        kind=DIGEST,
        location=site,
        detail=day.isoformat(),
        data=listing,
        due_at=utcnow(),
        status=SKIPPED if empty else PENDING,
        reason="nothing is booked that day" if empty else None,
        recipient=recipient,
        sequence=0,
        attempts=0,
    )
    session.add(message)
    session.flush()
    return message


def messages_of(session: Session, person_id: str, *, limit: int = 200) -> list[Message]:
    """A person's messages, newest first."""
    return list(
        session.scalars(
            select(Message)
            .where(Message.person_id == person_id)
            .order_by(Message.id.desc())
            .limit(limit)
        )
    )


def open_count(session: Session) -> int:
    """How many messages wait to be sent."""
    return int(session.scalar(select(func.count()).where(Message.status.in_(OPEN_STATUSES))) or 0)


def reminders_stopped(session: Session, person_id: str) -> ReminderStop | None:
    """Who stopped a person's reminders and when, or None if they get them."""
    return session.get(ReminderStop, person_id)


def stop_reminders(session: Session, *, person_id: str, stopped_by: str) -> bool:
    """Send this person no more reminders (their pending ones are skipped); False if they
    had stopped them already. Confirmations, cancellations and results still go: they are
    the service itself."""
    if session.get(Person, person_id) is None:
        raise ValueError(f"no contact or lead with id {person_id}")
    if session.get(ReminderStop, person_id) is not None:
        return False
    session.add(ReminderStop(person_id=person_id, stopped_by=stopped_by, stopped_at=utcnow()))
    memo(session).pop(_STOPS, None)
    session.execute(
        update(Message)
        .where(
            Message.person_id == person_id,
            Message.kind == REMINDER,
            Message.status == PENDING,
        )
        .values(status=SKIPPED, reason="the person stopped reminders", updated_at=utcnow()),
        execution_options={"synchronize_session": False},
    )
    session.flush()
    return True


def resume_reminders(session: Session, *, person_id: str) -> bool:
    """Send this person reminders again, for courses booked or moved from now on; False if
    they had not stopped them."""
    stop = session.get(ReminderStop, person_id)
    if stop is None:
        return False
    session.delete(stop)
    session.flush()
    memo(session).pop(_STOPS, None)
    return True


def find_messages(
    session: Session,
    *,
    status: str = "",
    channel: str = "",
    kind: str = "",
    since: dt.datetime | None = None,
    limit: int = 200,
) -> list[Message]:
    """Messages, newest first, filtered by status, channel, kind and the time of their
    last change (``since``: sent, failed, deferred or written since then)."""
    query = select(Message).order_by(Message.id.desc()).limit(limit)
    if status:
        query = query.where(Message.status == status)
    if channel:
        query = query.where(Message.channel == channel)
    if kind:
        query = query.where(Message.kind == kind)
    if since is not None:
        # "Failed today" is what failed today: a reminder written weeks before it failed
        # was left out when this read the time it was written.
        query = query.where(Message.updated_at >= since)
    return list(session.scalars(query))
