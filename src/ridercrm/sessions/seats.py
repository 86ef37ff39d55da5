"""Seats: what an operation-1 item takes and frees (docs/decisions.md, "Course sessions").

A course that is booked or completed holds a seat of the session its product, location
and ``course_datetime`` name. Taking one is a single conditional update of that
session's own row (``booked = booked + 1 WHERE booked + held < seats``), run in the
item's savepoint before the item writes anything else: the database decides, so two
workers can never sell the last seat twice, and bookings of different sessions touch
different rows. A seat held for a waiting-list offer is taken only by that person.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import ColumnElement, Table, and_, exists, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import CACHES, utcnow
from ridercrm.errors import CONFLICT, DomainError
from ridercrm.events import service as events
from ridercrm.notifications import service as notifications
from ridercrm.people.models import Person
from ridercrm.sessions.models import BOOKED as ENTRY_BOOKED
from ridercrm.sessions.models import (
    CANCELLED,
    IN_LINE,
    OFFERED,
    REMOVED,
    WAITING,
    CourseSession,
    WaitlistEntry,
)

FULL = "Course is full."
NO_SESSION = "No such course session."
CANCELLED_SESSION = "The course session is cancelled."
SEAT_STATUSES = frozenset({"booked", "completed - pass", "completed - fail"})

SESSIONS = cast(Table, CourseSession.__table__)
WAITLIST = cast(Table, WaitlistEntry.__table__)
_POLICY = "ridercrm.seat_policy"


@dataclass(frozen=True)
class SeatPolicy:
    """The settings seats follow: RIDERCRM_SESSIONS_REQUIRED, RIDERCRM_WAITLIST_HOLD_HOURS."""

    required: bool = False
    hold_hours: float = 24.0

    @property
    def hold(self) -> dt.timedelta:
        return dt.timedelta(hours=self.hold_hours)


class NoSeat(DomainError):
    """The item cannot have a seat; the message is its receipt, exactly."""

    kind = CONFLICT


@dataclass(frozen=True)
class Place:
    """Where a course sits: what names its session."""

    product_id: str
    location: str | None
    course_datetime: str | None


def _count(result: Any) -> int:
    """Rows an UPDATE changed."""
    return int(getattr(result, "rowcount", 0) or 0)


def use_policy(session: Session, policy: SeatPolicy) -> None:
    """Make the seat rules of this transaction follow ``policy`` (the request's settings)."""
    session.info[_POLICY] = policy


def use_policy_by_default(sessions: sessionmaker[Session], policy: SeatPolicy) -> None:
    """Make ``policy`` the seat rules of every session of this factory that sets none of
    its own (a merge, its undo, a review decision: they free and hold seats too)."""
    sessions.kw["info"][CACHES][_POLICY] = policy


def policy_of(session: Session) -> SeatPolicy:
    policy = session.info.get(_POLICY)
    if not isinstance(policy, SeatPolicy):
        policy = session.info.get(CACHES, {}).get(_POLICY)
    return policy if isinstance(policy, SeatPolicy) else SeatPolicy()


def holds_seat(status: str | None) -> bool:
    return status in SEAT_STATUSES


def find(session: Session, place: Place) -> CourseSession | None:
    """The session a place names, or None."""
    if place.location is None or place.course_datetime is None:
        return None
    return session.scalar(
        select(CourseSession).where(
            CourseSession.product_id == place.product_id,
            CourseSession.location == place.location,
            CourseSession.course_datetime == place.course_datetime,
        )
    )


def move(
    session: Session,
    *,
    before: Place | None,
    after: Place | None,
    person_ids: Collection[str],
) -> None:
    """A course leaves the seat of ``before`` and takes one at ``after`` (None: holds no
    seat). The new seat is taken first; NoSeat leaves everything as it was."""
    if before == after:
        return
    if before is not None and after is not None:
        # Two sessions' rows: locked in id order first, as every path locks them (a move
        # one way and another the other way would each hold the row the other waits for).
        lock_sessions(
            session,
            {found[0] for place in (before, after) if (found := _session_id(session, place))},
        )
    if after is not None:
        take(session, after, person_ids=person_ids)
    if before is not None:
        release(session, before)


def take(session: Session, place: Place, *, person_ids: Collection[str]) -> None:
    """Take a seat at ``place``, or raise NoSeat. No session there: nothing to take,
    unless sessions are required."""
    found = _session_id(session, place)
    if found is None:
        if policy_of(session).required:
            raise NoSeat(NO_SESSION)
        return
    session_id, status = found
    if status == CANCELLED:
        raise NoSeat(CANCELLED_SESSION)
    now = utcnow()
    waiting_as = _entry_of(person_ids)
    # The session's row first, as a leave, a join, a merge and a lapse take it: a held
    # seat's entry locked before the row deadlocked with a leave of that entry
    # (PostgreSQL; docs/decisions.md, "Course sessions"). Under the lock, ``held`` is
    # current: no seat held, no offer to look for.
    if not _held_locked(session, session_id):
        _take_free(session, session_id, waiting_as, now)
        return
    offer = session.execute(
        update(WAITLIST)
        .where(
            WAITLIST.c.session_id == session_id,
            waiting_as,
            WAITLIST.c.state == OFFERED,
            WAITLIST.c.offered_until > now,
            # The held seat is still within the seats on sale: instructors may have been
            # cut since it was held (docs/decisions.md, "Course sessions").
            _holds_fit(session_id),
        )
        .values(state=ENTRY_BOOKED, offered_until=None, updated_at=now)
    )
    offers = _count(offer)
    if offers:
        # Their held seat becomes a booked one; a message of the offer not sent yet is stale.
        # Records merged into one person may each have held a seat: the others pass on.
        _counts(session, session_id, booked=1, held=-offers)
        booked_entries = select(WAITLIST.c.person_id).where(
            WAITLIST.c.session_id == session_id, WAITLIST.c.state == ENTRY_BOOKED
        )
        offers_ended(session, session_id, booked_entries, "the seat was booked")
        _leave_line(session, session_id, waiting_as, now)
        if offers > 1:
            offer_free_seats(session, session_id)
        return
    _take_free(session, session_id, waiting_as, now)


def _held_locked(session: Session, session_id: str) -> int:
    """The seats held in the session, its row locked (PostgreSQL; SQLite writes one at a
    time) until the transaction ends."""
    query = select(SESSIONS.c.held).where(SESSIONS.c.id == session_id)
    if session.get_bind().dialect.name != "sqlite":
        query = query.with_for_update()
    return int(session.scalar(query) or 0)


def _take_free(
    session: Session, session_id: str, waiting_as: ColumnElement[bool], now: dt.datetime
) -> None:
    """Take a seat on sale (none held for them), or raise NoSeat."""
    taken = session.execute(
        update(SESSIONS)
        .where(
            SESSIONS.c.id == session_id,
            SESSIONS.c.status != CANCELLED,
            or_(
                SESSIONS.c.seats.is_(None),
                SESSIONS.c.booked + SESSIONS.c.held < SESSIONS.c.seats,
            ),
        )
        .values(booked=SESSIONS.c.booked + 1, updated_at=now)
    )
    if not _count(taken):
        raise NoSeat(FULL)
    _leave_line(session, session_id, waiting_as, now)


def _leave_line(
    session: Session, session_id: str, waiting_as: ColumnElement[bool], now: dt.datetime
) -> None:
    """Someone waiting who books a seat leaves the line, under every record that stands
    for them (a record merged into them may still be waiting)."""
    session.execute(
        update(WAITLIST)
        .where(
            WAITLIST.c.session_id == session_id,
            waiting_as,
            WAITLIST.c.state == WAITING,
        )
        .values(state=ENTRY_BOOKED, updated_at=now)
    )


def _holds_fit(session_id: str) -> ColumnElement[bool]:
    """The session's booked and held seats are no more than its seats on sale."""
    return exists(
        select(SESSIONS.c.id).where(
            SESSIONS.c.id == session_id,
            or_(
                SESSIONS.c.seats.is_(None), SESSIONS.c.booked + SESSIONS.c.held <= SESSIONS.c.seats
            ),
        )
    )


def _entry_of(person_ids: Collection[str]) -> ColumnElement[bool]:
    """A waiting-list entry of these people under any id that stands for them: their
    own, or that of any record converted or merged into them, however long the chain
    (a lead merged into a lead, converted, its contact merged into another: docs/
    decisions.md, "Course sessions"). Evaluated by the database only for the session's
    entries in the state asked for: usually none."""
    return WAITLIST.c.person_id.in_(standing_for(person_ids))


def standing_for(person_ids: Collection[str]) -> Any:
    """A select of the ids that stand for these people: their own and every record
    converted or merged into them, through any number of hops (a recursive query)."""
    people = cast(Table, Person.__table__)
    chain = (
        select(people.c.id)
        .where(people.c.id.in_(list(person_ids)))
        .cte(recursive=True, nesting=True)
    )
    chain = chain.union(
        select(people.c.id).join(
            chain,
            or_(people.c.converted_contact_id == chain.c.id, people.c.merged_into == chain.c.id),
        )
    )
    return select(chain.c.id)


def standing_as(person_ids: Any) -> Any:
    """A select of these ids (a list or a select) and the ids of the records they were
    converted or merged into, through any number of hops: :func:`standing_for` the other
    way."""
    people = cast(Table, Person.__table__)
    chain = (
        select(people.c.id, people.c.merged_into, people.c.converted_contact_id)
        .where(people.c.id.in_(person_ids))
        .cte(recursive=True, nesting=True)
    )
    chain = chain.union(
        select(people.c.id, people.c.merged_into, people.c.converted_contact_id).join(
            chain,
            or_(people.c.id == chain.c.merged_into, people.c.id == chain.c.converted_contact_id),
        )
    )
    return select(chain.c.id)


def release(session: Session, place: Place) -> None:
    """Free a seat at ``place`` and hold it for the first person waiting."""
    found = _session_id(session, place)
    if found is None:
        return
    session_id, _status = found
    session.execute(
        update(SESSIONS)
        .where(SESSIONS.c.id == session_id, SESSIONS.c.booked > 0)
        .values(booked=SESSIONS.c.booked - 1, updated_at=utcnow())
    )
    offer_free_seats(session, session_id)


_KNOWN = "ridercrm.seats.known_sessions"


@contextmanager
def sessions_read_once(
    session: Session,
    product_ids: Collection[str],
    course_datetimes: Collection[str],
    locations: Collection[str] = (),
) -> Iterator[None]:
    """Within the block, find the sessions of these products and start times from one
    read of them (a batch of bookings: one statement instead of one per item); a place
    outside them is looked up as usual. The block must not create sessions. When the
    batch names several of them at ``locations``, their rows are locked at once, in id
    order (PostgreSQL), before any seat is taken.

    Read by start time alone, the products kept here: with the products in the query
    too, SQLite (no statistics) took the unique index for its first column, every session
    of the product, past ones included; by start time it reads the few sessions that
    begin then, at every site."""
    products = frozenset(product_ids)
    rows = session.execute(
        select(
            SESSIONS.c.id,
            SESSIONS.c.status,
            SESSIONS.c.product_id,
            SESSIONS.c.location,
            SESSIONS.c.course_datetime,
        ).where(SESSIONS.c.course_datetime.in_(list(course_datetimes)))
    ).all()
    known = {
        (r.product_id, r.location, r.course_datetime): (r.id, r.status)
        for r in rows
        if r.product_id in products
    }
    named = [
        session_id for (_, location, _), (session_id, _) in known.items() if location in locations
    ]
    if len(named) > 1:
        # Seats of several sessions in one transaction: their rows locked now, in id
        # order, not each as its item takes a seat, in the items' order (two requests
        # naming two sessions in opposite orders deadlocked on PostgreSQL).
        lock_sessions(session, named)
    session.info[_KNOWN] = (products, frozenset(course_datetimes), known)
    try:
        yield
    finally:
        session.info.pop(_KNOWN, None)


def _session_id(session: Session, place: Place) -> tuple[str, str] | None:
    if place.location is None or place.course_datetime is None:
        return None
    known = session.info.get(_KNOWN)
    if known is not None:
        products, starts, found = known
        if place.product_id in products and place.course_datetime in starts:
            return found.get((place.product_id, place.location, place.course_datetime))
    row = session.execute(
        select(SESSIONS.c.id, SESSIONS.c.status).where(
            SESSIONS.c.product_id == place.product_id,
            SESSIONS.c.location == place.location,
            SESSIONS.c.course_datetime == place.course_datetime,
        )
    ).first()
    return (row.id, row.status) if row is not None else None


def _counts(session: Session, session_id: str, *, booked: int = 0, held: int = 0) -> None:
    session.execute(
        update(SESSIONS)
        .where(SESSIONS.c.id == session_id)
        .values(
            booked=SESSIONS.c.booked + booked,
            held=SESSIONS.c.held + held,
            updated_at=utcnow(),
        )
    )


def offer_free_seats(session: Session, session_id: str) -> list[str]:
    """Hold each free seat of the session for the next person waiting; return who.

    Each hold is a conditional update of the session's row (``held + 1`` only while a
    seat is free), so concurrent releases never hold one seat twice.
    """
    policy = policy_of(session)
    offered: list[str] = []
    while True:
        entry = session.execute(
            select(WAITLIST.c.id, WAITLIST.c.person_id)
            .where(WAITLIST.c.session_id == session_id, WAITLIST.c.state == WAITING)
            .order_by(WAITLIST.c.rank, WAITLIST.c.id)
            .limit(1)
        ).first()
        if entry is None:
            return offered
        now = utcnow()
        held = session.execute(
            update(SESSIONS)
            .where(
                SESSIONS.c.id == session_id,
                SESSIONS.c.status != CANCELLED,
                SESSIONS.c.seats.is_not(None),
                SESSIONS.c.booked + SESSIONS.c.held < SESSIONS.c.seats,
            )
            .values(held=SESSIONS.c.held + 1, updated_at=now)
        )
        if not _count(held):
            return offered
        until = now + policy.hold
        session.execute(
            update(WAITLIST)
            .where(WAITLIST.c.id == entry.id)
            .values(state=OFFERED, offered_until=until, updated_at=now)
        )
        _seat_offered(session, session_id, entry.person_id, until)
        offered.append(entry.person_id)


def offer_to(session: Session, entry_id: int) -> bool:
    """Staff offer a free seat to this entry by hand (out of turn); False if none is free.

    The entry's session row is locked before the entry is read again (any caller: a
    leave, a lapse or a booking of it queues, and its state is what they left)."""
    session_id = session.scalar(select(WAITLIST.c.session_id).where(WAITLIST.c.id == entry_id))
    if session_id is None:
        return False
    lock_sessions(session, [session_id])
    row = session.execute(
        select(WAITLIST.c.session_id, WAITLIST.c.person_id, WAITLIST.c.state).where(
            WAITLIST.c.id == entry_id
        )
    ).first()
    if row is None or row.state != WAITING:
        return False
    now = utcnow()
    held = session.execute(
        update(SESSIONS)
        .where(
            SESSIONS.c.id == row.session_id,
            SESSIONS.c.status != CANCELLED,
            or_(
                SESSIONS.c.seats.is_(None),
                SESSIONS.c.booked + SESSIONS.c.held < SESSIONS.c.seats,
            ),
        )
        .values(held=SESSIONS.c.held + 1, updated_at=now)
    )
    if not _count(held):
        return False
    until = now + policy_of(session).hold
    session.execute(
        update(WAITLIST)
        .where(WAITLIST.c.id == entry_id, WAITLIST.c.state == WAITING)
        .values(state=OFFERED, offered_until=until, updated_at=now)
    )
    _seat_offered(session, row.session_id, row.person_id, until)
    return True


def _seat_offered(session: Session, session_id: str, person_id: str, until: dt.datetime) -> None:
    row = _course_of(session, session_id)
    # The rider hears of the held seat in the same transaction that holds it (docs/decisions.md, "Notifications (issue 27)").
    notifications.queue_seat_offer(
        session,
        person_id=person_id,
        product_id=row.product_id,
        location=row.location,
        course_datetime=row.course_datetime,
        course_date_end=row.course_date_end,
        offered_until=until,
    )
    events.record(
        session,
        event_type=events.SESSION_SEAT_OFFERED,
        subject=subject_of(session_id),
        data={
            "session_id": session_id,
            "person_id": person_id,
            "product_id": row.product_id,
            "location": row.location,
            "course_datetime": row.course_datetime,
            "offered_until": until.isoformat(),
        },
    )


def _course_of(session: Session, session_id: str) -> Any:
    """The course a session is, as its messages name it: product, site, start and end."""
    return session.execute(
        select(
            SESSIONS.c.product_id,
            SESSIONS.c.location,
            SESSIONS.c.course_datetime,
            SESSIONS.c.course_date_end,
        ).where(SESSIONS.c.id == session_id)
    ).one()


def offers_ended(
    session: Session, session_id: str, person_ids: Any, reason: str, *, merging: bool = False
) -> None:
    """The offers of these people (ids, or a select of them) in a session ended: their
    queued "a place is held for you" messages are superseded with ``reason``.

    A merge moves a record's messages to its survivor, so the messages of an offer made
    to a merged record are looked for under the records it now stands as too (they
    stayed pending when the survivor booked that seat, or the offer lapsed) -- except
    within the merge (``merging``): its messages have not moved yet, and the survivor's
    own are those of the offer it keeps."""
    row = _course_of(session, session_id)
    notifications.withdraw_seat_offers(
        session,
        person_ids=person_ids if merging else standing_as(person_ids),
        product_id=row.product_id,
        location=row.location,
        course_datetime=row.course_datetime,
        reason=reason,
    )


def subject_of(session_id: str) -> str:
    """The subject a session's events are delivered in order under."""
    return f"session:{session_id}"


def lapse_offers(session: Session, *, now: dt.datetime | None = None) -> list[tuple[str, str]]:
    """End the offers past their time and pass each seat to the next person waiting;
    return the (session, person) pairs that lapsed."""
    now = now or utcnow()
    due = session.execute(
        select(WAITLIST.c.id, WAITLIST.c.session_id, WAITLIST.c.person_id)
        .where(WAITLIST.c.state == OFFERED, WAITLIST.c.offered_until <= now)
        .order_by(WAITLIST.c.offered_until)
        .limit(500)
    ).all()
    # Their sessions' rows first, in id order, as a leave or a booking of the offer
    # takes them: an entry ended before its row was locked deadlocked with a leave.
    lock_sessions(session, {entry.session_id for entry in due})
    lapsed: list[tuple[str, str]] = []
    for entry in due:
        ended = session.execute(
            update(WAITLIST)
            .where(
                and_(
                    WAITLIST.c.id == entry.id,
                    WAITLIST.c.state == OFFERED,
                    WAITLIST.c.offered_until <= now,
                )
            )
            .values(state="lapsed", offered_until=None, updated_at=now)
        )
        if not _count(ended):
            continue  # taken or withdrawn meanwhile
        _counts(session, entry.session_id, held=-1)
        offers_ended(session, entry.session_id, [entry.person_id], "the offer lapsed")
        events.record(
            session,
            event_type=events.WAITLIST_LAPSED,
            subject=subject_of(entry.session_id),
            data={"session_id": entry.session_id, "person_id": entry.person_id},
        )
        lapsed.append((entry.session_id, entry.person_id))
        offer_free_seats(session, entry.session_id)
    return lapsed


def lock_sessions(session: Session, session_ids: Collection[str]) -> None:
    """Lock these sessions' rows (PostgreSQL; SQLite writes one at a time), in id order:
    who joins, leaves or is merged in a session's line queues here."""
    if session_ids and session.get_bind().dialect.name != "sqlite":
        session.execute(
            select(SESSIONS.c.id)
            .where(SESSIONS.c.id.in_(sorted(session_ids)))
            .order_by(SESSIONS.c.id)
            .with_for_update()
        ).all()


def lines_merged(session: Session, survivor_id: str, seated: Collection[Place]) -> list[list[Any]]:
    """After a merge, one person has one place in each line: the merged records' entries
    leave the lines of sessions where the survivor holds a seat (``seated``), and where
    several records of the person wait in one line only the best place stays (an offer,
    else the earliest). Seats held for an entry that left pass on. Returns
    ``[entry id, state set]`` for each entry ended, for the undo (:func:`lines_unmerged`).

    The sessions' rows are locked before the entries are read (a join, a leave or
    another merge of the same line waits), and each entry ends only from the state it
    was read in (a lapse may end an offer meanwhile): a held seat passes on once."""
    in_line = (
        select(WAITLIST.c.id, WAITLIST.c.session_id, WAITLIST.c.person_id, WAITLIST.c.state)
        .where(WAITLIST.c.person_id.in_(standing_for([survivor_id])))
        .where(WAITLIST.c.state.in_(IN_LINE))
    )
    lock_sessions(session, {row.session_id for row in session.execute(in_line)})
    seated_ids = {found[0] for place in seated if (found := _session_id(session, place))}
    rows = session.execute(
        in_line.order_by(
            WAITLIST.c.session_id, WAITLIST.c.state != OFFERED, WAITLIST.c.rank, WAITLIST.c.id
        )
    ).all()
    ended: list[list[Any]] = []
    kept: set[str] = set()
    offers: dict[str, list[str]] = {}  # session -> the people whose offer ended
    now = utcnow()
    for row in rows:
        if row.session_id not in seated_ids and row.session_id not in kept:
            kept.add(row.session_id)
            continue
        state = ENTRY_BOOKED if row.session_id in seated_ids else REMOVED
        changed = session.execute(
            update(WAITLIST)
            .where(WAITLIST.c.id == row.id, WAITLIST.c.state == row.state)
            .values(state=state, offered_until=None, updated_at=now)
        )
        if not _count(changed):
            continue  # lapsed or taken meanwhile
        ended.append([row.id, state])
        if row.state == OFFERED:
            offers.setdefault(row.session_id, []).append(row.person_id)
    # Seats pass on only once every entry that leaves has left: passed on in the loop,
    # a seat went to a record of this very person still waiting further down the line.
    for session_id, person_ids in offers.items():
        _counts(session, session_id, held=-len(person_ids))
        offers_ended(
            session, session_id, person_ids, "merged with a record that has a place", merging=True
        )
        offer_free_seats(session, session_id)
    return ended


def lines_unmerged(
    session: Session, ended: Collection[list[Any]], seated: Callable[[str], Collection[Place]]
) -> None:
    """Undo :func:`lines_merged`: each entry it ended, still as it left it, waits again
    at its place in line (a seat it held was passed on and is not taken back), unless
    its record now holds a seat in that session (``seated``: a record's seat places)."""
    rows = session.execute(
        select(WAITLIST.c.id, WAITLIST.c.session_id, WAITLIST.c.person_id).where(
            WAITLIST.c.id.in_([entry_id for entry_id, _state in ended])
        )
    ).all()
    lock_sessions(session, {row.session_id for row in rows})
    where = {row.id: row for row in rows}
    now = utcnow()
    for entry_id, state in ended:
        row = where.get(entry_id)
        if row is None:
            continue
        places = {
            found[0] for place in seated(row.person_id) if (found := _session_id(session, place))
        }
        if row.session_id in places:
            continue  # booked in that session since: no place in its line
        back = session.execute(
            update(WAITLIST)
            .where(WAITLIST.c.id == entry_id, WAITLIST.c.state == state)
            .values(state=WAITING, updated_at=now)
        )
        if _count(back):
            offer_free_seats(session, row.session_id)


def seats_left(row: Any) -> int | None:
    """Seats still on sale (null: no limit)."""
    if row.seats is None:
        return None
    return max(0, int(row.seats) - int(row.booked) - int(row.held))
