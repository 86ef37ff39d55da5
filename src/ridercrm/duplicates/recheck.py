"""Incremental re-check: after the first scan, each write re-checks only the people it touched.

The write path only marks: the people a transaction touched (created, changed, merged,
imported) get a ``duplicate_touched`` row, inserted in bulk in that transaction just
before it commits, beside their matching keys (one multi-row insert; nothing is read
or scored there). A change that rolls back leaves no mark; a committed one always has
its mark, through any crash. The re-checker (a background thread of ``ridercrm serve``,
or ``ridercrm duplicates recheck``) takes the marks in batches, scores each touched
live person against the people sharing a blocking key (as the scan does, both ways),
and rebuilds only the review clusters those people are part of. Dismissed pairs are
never re-proposed; a cluster whose people did not change keeps its id.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import weakref
from collections.abc import Callable, Collection
from typing import cast

from sqlalchemy import Engine, Table, delete, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import build_engine, bulk_insert, session_factory, session_scope, utcnow
from ridercrm.duplicates import scan
from ridercrm.duplicates.models import (
    OPEN,
    DuplicateCluster,
    DuplicateScan,
    TouchedPerson,
)
from ridercrm.matching.score import Thresholds
from ridercrm.people.models import Person

log = logging.getLogger("ridercrm.duplicates")

BATCH = 500
TOUCHED_TABLE = cast(Table, TouchedPerson.__table__)
# Engines whose database has had a scan: from then on writes mark what they touch.
# Before that, each write asks (one indexed read of a table that is empty until then).
_SCANNED: weakref.WeakKeyDictionary[Engine, bool] = weakref.WeakKeyDictionary()
# A write whose check ran just before the first scan began is not marked; the scan
# marks, when it ends, everyone written since this long before it began.
SCAN_MARGIN = dt.timedelta(seconds=60)


def _scanned(session: Session) -> bool:
    """Whether a scan ever started on this database (remembered once true)."""
    bind = session.get_bind()
    engine = cast(Engine, getattr(bind, "engine", bind))
    if _SCANNED.get(engine):
        return True
    started = session.scalar(select(DuplicateScan.id).limit(1)) is not None
    if started:
        _SCANNED[engine] = True
    return started


def mark_written_since(session: Session, since: dt.datetime) -> int:
    """Mark everyone written since ``since`` (a scan's start minus SCAN_MARGIN)."""
    ids = list(session.scalars(select(Person.id).where(Person.updated_at >= since)))
    if ids:
        _insert_marks(session, ids)
    return len(ids)


def mark_touched(session: Session, person_ids: Collection[str]) -> None:
    """Queue these people for a re-check, in the session's transaction (after a scan)."""
    if not person_ids or not _scanned(session):
        return
    _insert_marks(session, person_ids)


def _insert_marks(session: Session, person_ids: Collection[str]) -> None:
    now = utcnow()
    bulk_insert(
        session,
        TOUCHED_TABLE,
        ("person_id", "touched_at"),
        [(person_id, now) for person_id in sorted(set(person_ids))],
    )


def pending(session: Session) -> int:
    """How many marks wait for a re-check."""
    return len(session.scalars(select(TouchedPerson.id)).all())


def recheck_batch(
    session: Session, *, thresholds: Thresholds, review_threshold: float, limit: int = BATCH
) -> int:
    """Re-check the people of up to ``limit`` marks in this transaction; return how many."""
    scan.serialise_clusters(session)
    rows = session.execute(
        select(TouchedPerson.id, TouchedPerson.person_id).order_by(TouchedPerson.id).limit(limit)
    ).all()
    if not rows:
        return 0
    session.execute(delete(TouchedPerson).where(TouchedPerson.id.in_([row.id for row in rows])))
    touched = {row.person_id for row in rows}
    live = scan.load_live(session, touched)
    scan.check_people(
        session, live, thresholds=thresholds, review_threshold=review_threshold, both_ways=True
    )
    session.flush()
    update_clusters(session, touched)
    return len(touched)


def recheck(
    sessions: sessionmaker[Session],
    *,
    thresholds: Thresholds,
    review_threshold: float,
    stop: threading.Event | None = None,
) -> int:
    """Re-check until no mark is left (a transaction per batch); return the people checked."""
    done = 0
    while stop is None or not stop.is_set():
        with session_scope(sessions) as session:
            if session.scalar(select(TouchedPerson.id).limit(1)) is None:
                break  # a read, not a write: an idle re-checker takes no write turn
        with session_scope(sessions, write=True) as session:
            checked = recheck_batch(
                session, thresholds=thresholds, review_threshold=review_threshold
            )
        if not checked:
            break
        done += checked
    return done


def update_clusters(session: Session, touched: Collection[str]) -> None:
    """Rebuild the open clusters the touched people belong to (their connected people)."""
    component = set(touched)
    frontier = set(touched)
    edges: dict[tuple[str, str], float] = {}
    while frontier:
        found = scan.pairs_touching(session, frontier)
        reached: set[str] = set()
        for (a, b), pair in found.items():
            if pair.status == OPEN:
                edges[(a, b)] = pair.score
                reached |= {a, b}
        frontier = reached - component
        component |= reached
    live = scan.live_ids(session, component)
    kept = [(a, b, s) for (a, b), s in edges.items() if a in live and b in live]
    # The open clusters that hold any of these people are replaced by the groups found,
    # except one whose people are exactly a group's: it keeps its id (a reviewer may
    # have it open) and takes the new score.
    existing: dict[tuple[str, ...], DuplicateCluster] = {}
    for cluster in session.scalars(select(DuplicateCluster).where(DuplicateCluster.status == OPEN)):
        if component.intersection(cluster.people):
            existing[tuple(sorted(cluster.people))] = cluster
    for people, score in scan.groups_of(kept):
        key = tuple(people)
        same = existing.pop(key, None)
        if same is not None:
            same.score = score
        else:
            session.add(DuplicateCluster(people=list(key), score=score, status=OPEN))
    for stale in existing.values():
        session.delete(stale)
    session.flush()


def thresholds_of(settings: Settings) -> Thresholds:
    """The matcher's thresholds as configured."""
    return Thresholds(
        match=settings.match_threshold,
        personal=settings.match_personal_threshold,
        ambiguity=settings.match_ambiguity_margin,
    )


def start_rechecker(settings: Settings) -> Callable[[], None]:
    """Re-check touched people in a background thread of this process; return its stop."""
    engine = build_engine(settings)
    sessions = session_factory(engine)
    stop = threading.Event()

    def run() -> None:
        while not stop.wait(settings.duplicates_recheck_seconds):
            try:
                recheck(
                    sessions,
                    thresholds=thresholds_of(settings),
                    review_threshold=settings.duplicates_review_threshold,
                    stop=stop,
                )
            except Exception:  # the marks stay; the next round tries again
                log.exception("duplicates re-check failed")

    thread = threading.Thread(target=run, name="ridercrm-duplicates-recheck", daemon=True)
    thread.start()

    def stop_it() -> None:
        stop.set()
        thread.join(timeout=30)
        engine.dispose()

    return stop_it
