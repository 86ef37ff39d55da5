"""The waiting list's timer: offers that lapse pass to the next person without anyone
acting. It runs in the deliverer's process (``ridercrm deliver``, and beside ``serve``'s
deliverer), every RIDERCRM_WAITLIST_TIMER_SECONDS."""

from __future__ import annotations

import logging
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm import periodic
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope, utcnow
from ridercrm.sessions import seats
from ridercrm.sessions.models import OFFERED, WaitlistEntry

log = logging.getLogger("ridercrm.sessions")


def policy_of(settings: Settings) -> seats.SeatPolicy:
    return seats.SeatPolicy(
        required=settings.sessions_required, hold_hours=settings.waitlist_hold_hours
    )


def lapse_due(sessions: sessionmaker[Session], policy: seats.SeatPolicy) -> int:
    """End the offers past their time (each seat passes to the next in line); return how many.

    A look without the write lock first: an idle timer never queues behind writers.
    """
    now = utcnow()
    with session_scope(sessions) as session:
        due = session.scalar(
            select(WaitlistEntry.id)
            .where(WaitlistEntry.state == OFFERED, WaitlistEntry.offered_until <= now)
            .limit(1)
        )
    if due is None:
        return 0
    with session_scope(sessions, write=True) as session:
        seats.use_policy(session, policy)
        lapsed = seats.lapse_offers(session, now=now)
    for session_id, person_id in lapsed:
        log.info("waiting-list offer lapsed", extra={"session": session_id, "person": person_id})
    return len(lapsed)


def start_waitlist_timer(settings: Settings) -> Callable[[], None]:
    """Run the timer in a background thread of this process; return what stops it."""
    engine = build_engine(settings)
    sessions = session_factory(engine)
    policy = policy_of(settings)
    stop_rounds = periodic.every(
        settings.waitlist_timer_seconds,
        lambda _stop: lapse_due(sessions, policy),  # a failed round: the offers stay due
        name="ridercrm-waitlist-timer",
        log=log,
        failure="waiting-list timer failed",
    )

    def stop_it() -> None:
        stop_rounds()
        engine.dispose()

    return stop_it
