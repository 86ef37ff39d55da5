"""Finding duplicates among stored people with the matcher's keys and model (docs/decisions.md, "Duplicates (issue 15)").

A scan walks the live people (not merged, not converted leads) in id order, a batch
per transaction, and records its cursor after each batch: an interrupted scan resumes
where it stopped. Each person is compared with the people sharing one of its blocking
keys (person_keys, at most KEY_CAP a key, as matching does), scored by the current
model, and the household guard applies: a pair it refuses is never proposed. A scan of
many people scores its batches in worker processes, one per CPU (duplicates/scoring.py),
and writes their pairs itself, in batch order. After the first scan, a scan checks only
the people written since the previous one began. The open pairs are then grouped into
clusters (connected people), each scored by its weakest pair.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, delete, func, or_, select, text
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import chunks, session_scope, utcnow
from ridercrm.duplicates import scoring
from ridercrm.duplicates.models import (
    DISMISSED,
    OPEN,
    DuplicateCluster,
    DuplicatePair,
    DuplicateScan,
)
from ridercrm.duplicates.scoring import IDS_PER_QUERY, IS_LIVE
from ridercrm.matching import score
from ridercrm.people.models import Person

BATCH = 500
# pg_advisory_xact_lock key of the review clusters ("dupc").
CLUSTERS_LOCK = 0x64757063


@dataclass
class ScanResult:
    scan_id: int
    checked: int
    pairs: int
    clusters: int
    resumed: bool


def scan(
    sessions: sessionmaker[Session],
    *,
    thresholds: score.Thresholds,
    review_threshold: float,
    full: bool = False,
    progress: Callable[[int, int], None] | None = None,
    batch_size: int = BATCH,
    workers: int | None = None,
) -> ScanResult:
    """Check the people written since the last scan (``full``: everyone); store clusters.

    ``workers``: the processes that score (default: one per CPU for a scan of many
    people, ``scoring.workers_for``); the pairs found are the same with any number.
    """
    with session_scope(sessions, write=True) as session:
        current = session.scalars(
            select(DuplicateScan)
            .where(DuplicateScan.finished_at.is_(None))
            .order_by(DuplicateScan.id.desc())
        ).first()
        resumed = current is not None and not full
        if current is None or full:
            previous = session.scalars(
                select(DuplicateScan.started_at)
                .where(DuplicateScan.finished_at.is_not(None))
                .order_by(DuplicateScan.id.desc())
            ).first()
            current = DuplicateScan(since=None if full else previous, checked=0)
            session.add(current)
            session.flush()
        scan_id, since = current.id, current.since
        cursor, checked = current.cursor or "", current.checked
        total = session.scalar(select(func.count()).select_from(scoring.live(since).subquery()))
    total = total or 0
    both_ways = since is not None
    batches = scoring.scored_batches(
        sessions,
        since=since,
        after=cursor,
        size=batch_size,
        workers=scoring.workers_for(total, sessions) if workers is None else workers,
        thresholds=thresholds,
        review_threshold=review_threshold,
        both_ways=both_ways,
    )
    for ids, scored in batches:
        # The cursor passes a batch in the transaction that writes its pairs.
        with session_scope(sessions, write=True) as session:
            record = session.get(DuplicateScan, scan_id)
            assert record is not None
            record_pairs(session, ids, scored, both_ways=both_ways)
            record.cursor = ids[-1]
            record.checked += len(ids)
            checked = record.checked
        if progress is not None:
            progress(checked, total)
    with session_scope(sessions, write=True) as session:
        record = session.get(DuplicateScan, scan_id)
        assert record is not None
        # Writes made while the scan ran, to people it had passed, are marked in their
        # rows and re-checked after it (duplicates/recheck.py).
        clusters = rebuild_clusters(session)
        record.finished_at = utcnow()
        pairs = session.scalar(select(func.count()).where(DuplicatePair.status == OPEN))
        return ScanResult(scan_id, record.checked, pairs or 0, clusters, resumed)


def check_people(
    session: Session,
    people: Iterable[Any],
    *,
    thresholds: score.Thresholds,
    review_threshold: float,
    both_ways: bool,
) -> None:
    """Score these people against those sharing a key with them; record the pairs found.

    ``people`` are live people's identifying columns (``scoring.IDENTITY_COLUMNS``, or
    Person rows); ``both_ways`` as ``scoring.score_people`` takes it.
    """
    people = list(people)
    scored = scoring.score_people(
        session,
        people,
        thresholds=thresholds,
        review_threshold=review_threshold,
        both_ways=both_ways,
    )
    record_pairs(session, [person.id for person in people], scored, both_ways=both_ways)


def record_pairs(
    session: Session, people: Iterable[str], scored: scoring.Checked, *, both_ways: bool
) -> None:
    """Store what these people's pairs propose, in the order they were compared: a new
    pair is added, an open one updated, or deleted when it proposes nothing any more (a
    re-check after a change); a dismissed pair stays as it is."""
    stored = pairs_touching(session, people, both_ways=both_ways)
    for pair, proposal in scored:
        known = stored.get(pair)
        if known is not None and known.status == DISMISSED:
            continue
        kept = _record(session, pair, known, proposal)
        if kept is None:
            stored.pop(pair, None)
        else:
            stored[pair] = kept


def _record(
    session: Session,
    pair: tuple[str, str],
    stored: DuplicatePair | None,
    proposal: scoring.Proposal | None,
) -> DuplicatePair | None:
    if proposal is None:
        if stored is not None and stored.status == OPEN:
            session.delete(stored)  # re-checked after a change: no longer alike
        return None
    if stored is None:
        stored = DuplicatePair(
            person_id=pair[0],
            other_id=pair[1],
            score=proposal.total,
            explanation=proposal.explanation,
            status=OPEN,
        )
        session.add(stored)
    elif stored.status == OPEN:
        stored.score = proposal.total
        stored.explanation = proposal.explanation
    return stored


def pairs_touching(
    session: Session, ids: Iterable[str], *, both_ways: bool = True
) -> dict[tuple[str, str], DuplicatePair]:
    """The stored pairs (open or dismissed) that include any of these people.

    ``both_ways`` False: only those where they are the lower id (``person_id``).
    """
    ordered = sorted(ids)
    found: dict[tuple[str, str], DuplicatePair] = {}
    for chunk in chunks(ordered, IDS_PER_QUERY // 2):
        where: ColumnElement[bool] = DuplicatePair.person_id.in_(chunk)
        if both_ways:
            where = or_(where, DuplicatePair.other_id.in_(chunk))
        for pair in session.scalars(select(DuplicatePair).where(where)):
            found[(pair.person_id, pair.other_id)] = pair
    return found


def serialise_clusters(session: Session) -> None:
    """Take the clusters' turn until commit: one rebuild or re-check at a time.

    On PostgreSQL a transaction-scoped advisory lock; SQLite has one writer at a time.
    """
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CLUSTERS_LOCK})


def rebuild_clusters(session: Session) -> int:
    """Group the open pairs of live people into clusters; replace the open clusters."""
    serialise_clusters(session)
    rows = session.execute(
        select(DuplicatePair.person_id, DuplicatePair.other_id, DuplicatePair.score).where(
            DuplicatePair.status == OPEN
        )
    ).all()
    live = {p for p in live_ids(session, {x for a, b, _s in rows for x in (a, b)})}
    groups = groups_of([(a, b, s) for a, b, s in rows if a in live and b in live])
    session.execute(delete(DuplicateCluster).where(DuplicateCluster.status == OPEN))
    for people, weakest in groups:
        session.add(DuplicateCluster(people=people, score=weakest, status=OPEN))
    session.flush()
    return len(groups)


def groups_of(edges: Sequence[tuple[str, str, float]]) -> list[tuple[list[str], float]]:
    """The connected groups of scored pairs (union-find), each with its people in order
    and its weakest pair's score."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b, _s in edges:
        parent[root(a)] = root(b)
    members: dict[str, list[str]] = defaultdict(list)
    for person_id in parent:
        members[root(person_id)].append(person_id)
    weakest: dict[str, float] = {}
    for a, _b, s in edges:
        r = root(a)
        weakest[r] = min(weakest.get(r, s), s)
    return [(sorted(people), weakest[r]) for r, people in members.items()]


def live_ids(session: Session, ids: set[str]) -> set[str]:
    ordered = sorted(ids)
    found: set[str] = set()
    for chunk in chunks(ordered, IDS_PER_QUERY):
        found |= set(session.scalars(select(Person.id).where(Person.id.in_(chunk), IS_LIVE)).all())
    return found


def pairs_of(session: Session, people: list[str]) -> list[DuplicatePair]:
    """The open pairs between these people (a cluster's explanation)."""
    return list(
        session.scalars(
            select(DuplicatePair)
            .where(and_(DuplicatePair.person_id.in_(people), DuplicatePair.other_id.in_(people)))
            .order_by(DuplicatePair.score.desc())
        ).all()
    )


def pending(session: Session, *, full: bool) -> int:
    """How many people the next scan would check."""
    since = None
    if not full:
        since = session.scalars(
            select(DuplicateScan.started_at)
            .where(DuplicateScan.finished_at.is_not(None))
            .order_by(DuplicateScan.id.desc())
        ).first()
    return session.scalar(select(func.count()).select_from(scoring.live(since).subquery())) or 0
