"""Finding duplicates among stored people with the matcher's keys and model (docs/decisions.md, "Duplicates (issue 15)").

A scan walks the live people (not merged, not converted leads) in id order, a batch
per transaction, and records its cursor after each batch: an interrupted scan resumes
where it stopped. Each person is compared with the people sharing one of its blocking
keys (person_keys, at most KEY_CAP a key, as matching does), scored by the current
model, and the household guard applies: a pair it refuses is never proposed. After
the first scan, a scan checks only the people written since the previous one began.
The open pairs are then grouped into clusters (connected people), each scored by its
weakest pair.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Select, and_, delete, func, or_, select, text
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope, utcnow
from ridercrm.duplicates.models import (
    DISMISSED,
    OPEN,
    DuplicateCluster,
    DuplicatePair,
    DuplicateScan,
)
from ridercrm.matching import model_store, score
from ridercrm.matching.repository import KEY_CAP
from ridercrm.people.blocking import Identity, stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import Person, PersonKey

BATCH = 500
UNDER_THRESHOLD = "the total weight is under the match threshold"
# Keys per IN list: within SQLite's bound-parameter limit on every version.
KEYS_PER_QUERY = 900
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
) -> ScanResult:
    """Check the people written since the last scan (``full``: everyone); store clusters."""
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
        total = session.scalar(select(func.count()).select_from(_live(since).subquery())) or 0
    while True:
        with session_scope(sessions, write=True) as session:
            record = session.get(DuplicateScan, scan_id)
            assert record is not None
            batch = session.scalars(
                _live(since)
                .where(Person.id > (record.cursor or ""))
                .order_by(Person.id)
                .limit(batch_size)
            ).all()
            if not batch:
                from ridercrm.duplicates import recheck

                # Writes made while the scan ran, to people it had passed, and writes
                # made before it while no scan existed, are re-checked after it.
                recheck.mark_written_since(session, record.started_at - recheck.SCAN_MARGIN)
                clusters = rebuild_clusters(session)
                record.finished_at = utcnow()
                pairs = session.scalar(select(func.count()).where(DuplicatePair.status == OPEN))
                return ScanResult(scan_id, record.checked, pairs or 0, clusters, resumed)
            check_people(
                session,
                batch,
                thresholds=thresholds,
                review_threshold=review_threshold,
                both_ways=since is not None,
            )
            record.cursor = batch[-1].id
            record.checked += len(batch)
            if progress is not None:
                progress(record.checked, total)


def _live(since: dt.datetime | None) -> Select[Person]:
    statement = select(Person).where(
        Person.merged_into.is_(None), Person.converted_contact_id.is_(None)
    )
    if since is not None:
        statement = statement.where(Person.updated_at >= since)
    return statement


def check_people(
    session: Session,
    people: Iterable[Person],
    *,
    thresholds: score.Thresholds,
    review_threshold: float,
    both_ways: bool,
) -> None:
    """Score these people against those sharing a key with them; record the pairs found.

    ``both_ways`` compares each with every candidate; a full scan compares only with
    candidates of a higher id (the other way round was, or will be, done from them).
    """
    model = model_store.current(session)
    people = list(people)
    own: dict[str, tuple[Identity, set[int]]] = {}
    for person in people:
        identity = identity_of(person)
        own[person.id] = (identity, stored_keys(identity))
    holders = _key_holders(session, {k for _i, keys in own.values() for k in keys})
    wanted: dict[str, set[str]] = {}
    for person_id, (_identity, keys) in own.items():
        others = {o for k in keys if len(holders.get(k, ())) <= KEY_CAP for o in holders.get(k, ())}
        others.discard(person_id)
        if not both_ways:
            others = {o for o in others if o > person_id}
        wanted[person_id] = others
    candidate_ids = set().union(*wanted.values()) if wanted else set()
    candidates = {p.id: p for p in load_live(session, candidate_ids)}
    identities = {pid: identity_of(p) for pid, p in candidates.items()}
    stored = pairs_touching(session, own)
    for person_id, others in wanted.items():
        identity = own[person_id][0]
        for other_id in sorted(others):
            if other_id not in candidates:
                continue
            pair = (min(person_id, other_id), max(person_id, other_id))
            known = stored.get(pair)
            if known is not None and known.status == DISMISSED:
                continue
            verdict = score.evaluate(
                identity, identities[other_id], model=model, thresholds=thresholds
            )
            kept = _record(session, pair, known, verdict, review_threshold)
            if kept is None:
                stored.pop(pair, None)
            else:
                stored[pair] = kept


def _record(
    session: Session,
    pair: tuple[str, str],
    stored: DuplicatePair | None,
    verdict: score.Verdict,
    review_threshold: float,
) -> DuplicatePair | None:
    # The matcher's own refusals stand (household guard, too little personal evidence):
    # only the total may be under its match threshold, down to the review threshold.
    proposed = verdict.total >= review_threshold and (
        verdict.accepted or verdict.rule == UNDER_THRESHOLD
    )
    if not proposed:
        if stored is not None and stored.status == OPEN:
            session.delete(stored)  # re-checked after a change: no longer alike
        return None
    explanation = {"levels": verdict.levels, "weights": verdict.weights, "rule": verdict.rule}
    if stored is None:
        stored = DuplicatePair(
            person_id=pair[0],
            other_id=pair[1],
            score=verdict.total,
            explanation=explanation,
            status=OPEN,
        )
        session.add(stored)
    elif stored.status == OPEN:
        stored.score = verdict.total
        stored.explanation = explanation
    return stored


def _key_holders(session: Session, keys: set[int]) -> dict[int, list[str]]:
    holders: dict[int, list[str]] = defaultdict(list)
    ordered = sorted(keys)
    for start in range(0, len(ordered), KEYS_PER_QUERY):
        chunk = ordered[start : start + KEYS_PER_QUERY]
        rows = session.execute(
            select(PersonKey.key, PersonKey.person_id).where(PersonKey.key.in_(chunk))
        ).all()
        for key, person_id in rows:
            holders[key].append(person_id)
    return holders


def load_live(session: Session, ids: set[str]) -> list[Person]:
    ordered = sorted(ids)
    found: list[Person] = []
    for start in range(0, len(ordered), KEYS_PER_QUERY):
        chunk = ordered[start : start + KEYS_PER_QUERY]
        found.extend(session.scalars(_live(None).where(Person.id.in_(chunk))).all())
    return found


def pairs_touching(session: Session, ids: Iterable[str]) -> dict[tuple[str, str], DuplicatePair]:
    """The stored pairs (open or dismissed) that include any of these people."""
    ordered = sorted(ids)
    found: dict[tuple[str, str], DuplicatePair] = {}
    for start in range(0, len(ordered), KEYS_PER_QUERY // 2):
        chunk = ordered[start : start + KEYS_PER_QUERY // 2]
        for pair in session.scalars(
            select(DuplicatePair).where(
                or_(DuplicatePair.person_id.in_(chunk), DuplicatePair.other_id.in_(chunk))
            )
        ):
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
    for start in range(0, len(ordered), KEYS_PER_QUERY):
        chunk = ordered[start : start + KEYS_PER_QUERY]
        found |= set(
            session.scalars(
                select(Person.id).where(
                    Person.id.in_(chunk),
                    Person.merged_into.is_(None),
                    Person.converted_contact_id.is_(None),
                )
            ).all()
        )
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
    return session.scalar(select(func.count()).select_from(_live(since).subquery())) or 0


def auto_merge(sessions: sessionmaker[Session], *, threshold: float) -> list[int]:
    """Merge each open cluster whose weakest pair reaches ``threshold``; return the merge ids."""
    from ridercrm.duplicates import merge, service

    merged: list[int] = []
    with session_scope(sessions) as session:
        ids = session.scalars(
            select(DuplicateCluster.id).where(
                DuplicateCluster.status == OPEN, DuplicateCluster.score >= threshold
            )
        ).all()
    for cluster_id in ids:
        try:
            with session_scope(sessions, write=True) as session:
                cluster = session.get(DuplicateCluster, cluster_id)
                if cluster is None or cluster.status != OPEN:
                    continue
                result = service.decide(session, cluster, decision="merge")
                merged.append(result["merge_id"])
        except merge.MergeError:
            continue  # left in the queue for review
    return merged
