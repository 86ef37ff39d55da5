"""A session's waiting list (docs/decisions.md, "Course sessions"): join a full session, leave, be offered a seat.

The line is the entries in state waiting or offered, ordered by ``rank``. A freed seat is
held for the first waiting person at once (``seats.offer_free_seats``); the hold lapses
after RIDERCRM_WAITLIST_HOLD_HOURS (``seats.lapse_offers``, run by the deliverer's timer).
"""

from __future__ import annotations

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.errors import CONFLICT, NOT_FOUND, UNPROCESSABLE
from ridercrm.events import service as events
from ridercrm.ids import canonical_id
from ridercrm.people import service as people
from ridercrm.sessions import seats
from ridercrm.sessions.models import (
    CANCELLED,
    IN_LINE,
    OFFERED,
    REMOVED,
    WAITING,
    CourseSession,
    WaitlistEntry,
)
from ridercrm.sessions.schemas import WaitlistRead
from ridercrm.sessions.service import SessionProblem


def _line(session: Session, session_id: str) -> list[WaitlistEntry]:
    return list(
        session.scalars(
            select(WaitlistEntry)
            .where(WaitlistEntry.session_id == session_id, WaitlistEntry.state.in_(IN_LINE))
            .order_by(WaitlistEntry.rank, WaitlistEntry.id)
        )
    )


def join(session: Session, row: CourseSession, *, raw_person_id: str) -> WaitlistRead:
    """Put a person at the end of a full session's line (SessionProblem otherwise)."""
    person = people.resolve(session, raw_person_id)
    if person is None:
        raise SessionProblem(
            UNPROCESSABLE, f"person_id: no contact or lead with id {raw_person_id}"
        )
    # The session's row, locked: joins and freed seats of one session queue here.
    current = session.scalar(
        select(CourseSession)
        .where(CourseSession.id == row.id)
        .with_for_update()
        .execution_options(populate_existing=True)
    )
    assert current is not None
    if current.status == CANCELLED:
        raise SessionProblem(CONFLICT, f"session {current.id} is cancelled")
    left = seats.seats_left(current)
    if left is None or left > 0:
        shown = "no limit" if left is None else str(left)
        raise SessionProblem(
            CONFLICT,
            f"seats_left: {shown}; session {current.id} has seats, book one instead of"
            " joining the waiting list",
        )
    line = _line(session, current.id)
    # In line under any record that stands for them (one merged into them waits too).
    standing = set(session.scalars(seats.standing_for([person.id])))
    waiting = [n for n, e in enumerate(line, 1) if e.person_id in standing]
    if waiting:
        raise SessionProblem(
            CONFLICT,
            f"person_id: {person.id} is already on the waiting list at position {waiting[0]}",
        )
    entry = session.scalar(
        select(WaitlistEntry).where(
            WaitlistEntry.session_id == current.id, WaitlistEntry.person_id == person.id
        )
    )
    rank = max((e.rank for e in line), default=0) + 1
    last = session.scalar(
        select(func.max(WaitlistEntry.rank)).where(WaitlistEntry.session_id == current.id)
    )
    rank = max(rank, (last or 0) + 1)
    if entry is None:
        entry = WaitlistEntry(session_id=current.id, person_id=person.id, rank=rank, state=WAITING)
        session.add(entry)
    else:  # back in line after a lapse, a removal or a cancelled booking
        entry.rank, entry.state, entry.offered_until = rank, WAITING, None
    session.flush()
    position = len(line) + 1
    events.record(
        session,
        event_type=events.WAITLIST_JOINED,
        subject=seats.subject_of(current.id),
        data={"session_id": current.id, "person_id": person.id, "position": position},
    )
    return _entry_read(entry, position)


def _entry_read(entry: WaitlistEntry, position: int | None) -> WaitlistRead:
    until = entry.offered_until.isoformat() if entry.offered_until else None
    return WaitlistRead(
        session_id=entry.session_id,
        person_id=entry.person_id,
        position=position,
        state=entry.state,
        offered_until=until,
    )


def entries(session: Session, session_id: str) -> list[WaitlistRead]:
    """The line first, in order, then everyone who left it (latest first)."""
    rows = list(
        session.scalars(
            select(WaitlistEntry)
            .where(WaitlistEntry.session_id == session_id)
            .execution_options(populate_existing=True)
        )
    )
    line = sorted((e for e in rows if e.state in IN_LINE), key=lambda e: (e.rank, e.id))
    out = sorted((e for e in rows if e.state not in IN_LINE), key=lambda e: -e.id)
    return [_entry_read(e, n) for n, e in enumerate(line, 1)] + [_entry_read(e, None) for e in out]


def _entry(session: Session, session_id: str, raw_person_id: str) -> WaitlistEntry:
    person = people.resolve(session, raw_person_id)
    # The id as given only in its canonical form: one with NUL reached PostgreSQL (a 500).
    given = canonical_id(raw_person_id)
    ids = {*([given] if given else []), *([person.id] if person else [])}
    # Every record standing for the person may have an entry (merged ones); the one in
    # line comes first, else the latest.
    entry = session.scalars(
        select(WaitlistEntry)
        .where(
            WaitlistEntry.session_id == session_id,
            WaitlistEntry.person_id.in_(seats.standing_for(ids)),
        )
        .order_by(WaitlistEntry.state.not_in(IN_LINE), WaitlistEntry.id.desc())
        .execution_options(populate_existing=True)
    ).first()
    if entry is None:
        raise SessionProblem(NOT_FOUND, f"person {raw_person_id} is not on the waiting list")
    return entry


def remove(session: Session, row: CourseSession, *, raw_person_id: str) -> WaitlistRead:
    """Take a person off the line; a seat held for them goes to the next in line."""
    # The session's row first, as join and a merge's lines take it: the entry read
    # below is then what a concurrent merge or lapse left, not what it is changing.
    seats.lock_sessions(session, [row.id])
    entry = _entry(session, row.id, raw_person_id)
    if entry.state not in IN_LINE:
        raise SessionProblem(NOT_FOUND, f"person {raw_person_id} is not on the waiting list")
    was_offered = entry.state == OFFERED
    now = utcnow()
    ended = session.execute(
        update(WaitlistEntry)
        .where(WaitlistEntry.id == entry.id, WaitlistEntry.state == entry.state)
        .values(state=REMOVED, offered_until=None, updated_at=now)
        .execution_options(synchronize_session="fetch")
    )
    if not ended.rowcount:  # type: ignore[attr-defined]
        raise SessionProblem(NOT_FOUND, f"person {raw_person_id} is not on the waiting list")
    if was_offered:
        session.execute(
            update(CourseSession)
            .where(CourseSession.id == row.id, CourseSession.held > 0)
            .values(held=CourseSession.held - 1)
            .execution_options(synchronize_session=False)
        )
        seats.offers_ended(session, row.id, [entry.person_id], "taken off the waiting list")
        seats.offer_free_seats(session, row.id)
    session.flush()
    session.refresh(entry)
    return _entry_read(entry, None)


def move_to(session: Session, row: CourseSession, *, raw_person_id: str, position: int) -> None:
    """Staff reorder: put a person at ``position`` (1 first) of the line."""
    # The session's row first, whoever calls: a join, a leave or a freed seat of this
    # line waits until the new order is written.
    seats.lock_sessions(session, [row.id])
    entry = _entry(session, row.id, raw_person_id)
    line = _line(session, row.id)
    if entry not in line:
        raise SessionProblem(NOT_FOUND, f"person {raw_person_id} is not on the waiting list")
    line.remove(entry)
    line.insert(max(0, min(position - 1, len(line))), entry)
    for rank, member in enumerate(line, 1):
        member.rank = rank
    session.flush()


def offer_by_hand(session: Session, row: CourseSession, *, raw_person_id: str) -> bool:
    """Staff hold a free seat for this person, out of turn; False if no seat is free.

    ``seats.offer_to`` locks the session's row itself, whoever calls, before it reads
    the entry's state again."""
    entry = _entry(session, row.id, raw_person_id)
    return seats.offer_to(session, entry.id)
