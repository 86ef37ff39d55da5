"""Purging the outbox: delivered events and their delivery log, after the retention time.

An event is purged once it is older than RIDERCRM_EVENT_RETENTION_DAYS and every one of
its deliveries was delivered (an event no endpoint wanted has none). An event with a
delivery still pending, being sent, or failed (the operator may replay it once the
endpoint works again) is kept with its log. Work goes in small batches, a transaction
each, so a purge never holds the write lock for long; several deliverers purging at
once delete each row once.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from sqlalchemy import Select, delete, exists, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import chunks, session_scope, utcnow
from ridercrm.events.models import DELIVERED, Delivery, Event

BATCH = 1000


@dataclass
class Purged:
    events: int = 0
    deliveries: int = 0


def _purgeable(cutoff: dt.datetime, limit: int) -> Select[str]:
    unfinished = exists().where(Delivery.event_id == Event.id, Delivery.status != DELIVERED)
    return (
        select(Event.id)
        .where(Event.created_at < cutoff, ~unfinished)
        .order_by(Event.created_at, Event.id)
        .limit(limit)
    )


def purge_batch(session: Session, *, cutoff: dt.datetime, limit: int = BATCH) -> Purged:
    """Delete up to ``limit`` purgeable events older than ``cutoff`` and their deliveries."""
    ids = list(session.scalars(_purgeable(cutoff, limit)))
    if not ids:
        return Purged()
    deliveries = session.execute(delete(Delivery).where(Delivery.event_id.in_(ids)))
    events = session.execute(delete(Event).where(Event.id.in_(ids)))
    return Purged(
        events=getattr(events, "rowcount", 0) or 0,
        deliveries=getattr(deliveries, "rowcount", 0) or 0,
    )


def purge(
    sessions: sessionmaker[Session], *, retention_days: float, dry_run: bool = False
) -> Purged:
    """Purge every delivered event older than the retention; ``dry_run`` only counts."""
    try:
        cutoff = utcnow() - dt.timedelta(days=retention_days)
    except OverflowError:
        return Purged()  # an age beyond the calendar: no event is that old
    if dry_run:
        with session_scope(sessions) as session:
            ids = list(session.scalars(_purgeable(cutoff, 2**31 - 1)))
            count = len(ids)
            logged = 0
            for chunk in chunks(ids, BATCH):
                logged += len(
                    session.scalars(select(Delivery.id).where(Delivery.event_id.in_(chunk))).all()
                )
        return Purged(events=count, deliveries=logged)
    total = Purged()
    while True:
        with session_scope(sessions, write=True) as session:
            done = purge_batch(session, cutoff=cutoff)
        if not done.events:
            return total
        total.events += done.events
        total.deliveries += done.deliveries
