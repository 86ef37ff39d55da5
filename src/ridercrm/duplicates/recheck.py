"""Incremental re-check: after the first scan, each write re-checks only the people it touched.

The write path only marks, and in no statement of its own: every insert and update of a
person's row sets ``people.duplicate_touched_at`` (the column's default and on-update
value), in the statement the write sends anyway. A change that rolls back takes its mark
along; a committed one always has it, through any crash. The re-checker (a background
thread of ``ridercrm serve``, or ``ridercrm duplicates recheck``) takes the people marked
since the first scan began (less SCAN_MARGIN; older marks are the first scan's to check),
scores each live one against the people sharing a blocking key (as the scan does, both
ways), rebuilds only the review clusters those people are part of, and clears each mark
that no write changed meanwhile. Dismissed pairs are never re-proposed; a cluster whose
people did not change keeps its id.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
from collections.abc import Callable, Collection, Iterable
from typing import Any, cast

from sqlalchemy import Table, bindparam, func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm import periodic
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope, utcnow
from ridercrm.duplicates import scan, scoring
from ridercrm.duplicates.models import OPEN, DuplicateCluster, DuplicateScan
from ridercrm.matching.score import Thresholds
from ridercrm.matching.service import thresholds_of
from ridercrm.people.models import Person

log = logging.getLogger("ridercrm.duplicates")

BATCH = 500
PEOPLE = cast(Table, Person.__table__)
# A write flushed this long before the first scan began, and committed after the scan
# read that person, is still re-checked: marks from then on count.
SCAN_MARGIN = dt.timedelta(seconds=60)


def mark(people: Iterable[Person]) -> None:
    """Mark these people for a re-check with the rest of their row's update (merges)."""
    now = utcnow()
    for person in people:
        person.duplicate_touched_at = now


def _since(session: Session) -> dt.datetime | None:
    """Marks from this time on wait for a re-check; None before any scan."""
    first = session.scalar(select(func.min(DuplicateScan.started_at)))
    return None if first is None else first - SCAN_MARGIN


def _marked(session: Session, limit: int | None) -> list[Any]:
    """(id, mark) of people waiting for a re-check, oldest mark first."""
    since = _since(session)
    if since is None:
        return []
    statement = (
        select(Person.id, Person.duplicate_touched_at)
        .where(Person.duplicate_touched_at >= since)
        .order_by(Person.duplicate_touched_at, Person.id)
    )
    if limit is not None:
        statement = statement.limit(limit)
    return list(session.execute(statement).all())


def waiting(session: Session) -> set[str]:
    """The people waiting for a re-check."""
    return {row.id for row in _marked(session, None)}


def pending(session: Session) -> int:
    """How many people wait for a re-check."""
    return len(_marked(session, None))


def recheck_batch(
    session: Session, *, thresholds: Thresholds, review_threshold: float, limit: int = BATCH
) -> int:
    """Re-check up to ``limit`` marked people in this transaction; return how many."""
    scan.serialise_clusters(session)
    rows = _marked(session, limit)
    if not rows:
        return 0
    touched = {row.id for row in rows}
    live = scoring.load_live(session, touched)
    scan.check_people(
        session, live, thresholds=thresholds, review_threshold=review_threshold, both_ways=True
    )
    session.flush()
    update_clusters(session, touched)
    _clear(session, rows)
    return len(touched)


def _clear(session: Session, rows: list[Any]) -> None:
    """Clear the marks read, unless a write changed them since (it is checked next round).

    People a write holds are skipped, not waited for (PostgreSQL SKIP LOCKED): this
    transaction then never waits for a row while holding others, so it cannot deadlock
    with a write; their marks stay, and are checked again.
    """
    free = set(
        session.scalars(
            select(Person.id)
            .where(Person.id.in_(sorted(row.id for row in rows)))
            .with_for_update(skip_locked=True)
        )
    )
    cleared = [{"marked": row.id, "mark": row.duplicate_touched_at} for row in rows]
    cleared = [row for row in cleared if row["marked"] in free]
    if not cleared:
        return
    unchanged = [PEOPLE.c.id == bindparam("marked")]
    if session.get_bind().dialect.name != "sqlite":
        unchanged.append(PEOPLE.c.duplicate_touched_at == bindparam("mark"))
    # (SQLite: this transaction has held the one write lock since it read the marks, so
    # none changed; and marks stored by older versions are text of another form.)
    session.execute(
        PEOPLE.update()
        .where(*unchanged)
        # Not a change of the person: updated_at and the mark's own on-update stay out.
        .values(duplicate_touched_at=None, updated_at=PEOPLE.c.updated_at),
        cleared,
    )


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
            if not _marked(session, 1):
                break  # a read, not a write: an idle re-checker takes no write turn
        with session_scope(sessions, write=True) as session:
            checked = recheck_batch(
                session, thresholds=thresholds, review_threshold=review_threshold
            )
        done += checked
        if checked < BATCH:
            # The last batch: a mark left (its person was being written) waits for the
            # next round rather than being re-checked over and over meanwhile.
            break
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


def start_rechecker(settings: Settings) -> Callable[[], None]:
    """Re-check touched people in a background thread of this process; return its stop."""
    engine = build_engine(settings)
    sessions = session_factory(engine)

    def round_(stop: threading.Event) -> None:  # a failed round: the marks stay
        recheck(
            sessions,
            thresholds=thresholds_of(settings),
            review_threshold=settings.duplicates_review_threshold,
            stop=stop,
        )

    stop_rounds = periodic.every(
        settings.duplicates_recheck_seconds,
        round_,
        name="ridercrm-duplicates-recheck",
        log=log,
        failure="duplicates re-check failed",
    )

    def stop_it() -> None:
        stop_rounds()
        engine.dispose()

    return stop_it
