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
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    TextClause,
    and_,
    bindparam,
    delete,
    func,
    or_,
    select,
    text,
)
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
from ridercrm.people.index import identity_of
from ridercrm.people.models import Person

BATCH = 500
UNDER_THRESHOLD = "the total weight is under the match threshold"
# Ids per IN list: within SQLite's bound-parameter limit on every version.
IDS_PER_QUERY = 900
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
            batch = session.execute(
                _live(since)
                .where(Person.id > (record.cursor or ""))
                .order_by(Person.id)
                .limit(batch_size)
            ).all()
            if not batch:
                # Writes made while the scan ran, to people it had passed, are marked in
                # their rows and re-checked after it (duplicates/recheck.py).
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


# What scoring reads of a person (people.index.identity_of), and nothing else.
IDENTITY_COLUMNS = (
    Person.id,
    Person.first_name,
    Person.last_name,
    Person.date_of_birth,
    Person.email,
    Person.mobile_phone,
    Person.home_phone,
    Person.drivers_license,
    Person.street,
    Person.postcode,
    Person.city,
)


# Neither merged nor a converted lead. As one expression, not two IS NULL terms: SQLite's
# planner would otherwise read the unique index of converted_contact_id (every live
# person is NULL there) instead of the id, a million entries per batch at 1M people.
_IS_LIVE = func.coalesce(Person.merged_into, Person.converted_contact_id).is_(None)


def _live(since: dt.datetime | None) -> Select[*tuple[Any, ...]]:
    """The live people's identifying columns (not merged, not converted leads)."""
    statement: Select[*tuple[Any, ...]] = select(*IDENTITY_COLUMNS).where(_IS_LIVE)
    if since is not None:
        statement = statement.where(Person.updated_at >= since)
    return statement


# The pairs of people sharing a blocking key, for one batch of people: their stored keys
# (person_keys by person_id), each joined with the key's other holders. A key held by
# more than KEY_CAP people is left out, as matching leaves it (a common name pair at a
# million people): whether a key has a (KEY_CAP + 1)th holder is one bounded index probe.
_CANDIDATE_PAIRS = """
SELECT mine.person_id, other.person_id
FROM person_keys AS mine
JOIN person_keys AS other ON other.key = mine.key AND other.person_id {direction} mine.person_id
WHERE mine.person_id IN :ids
AND NOT EXISTS (
    SELECT 1 FROM person_keys AS more WHERE more.key = mine.key LIMIT 1 OFFSET :cap
)
"""


@lru_cache(maxsize=2)
def _candidate_pairs(both_ways: bool) -> TextClause:
    direction = "<>" if both_ways else ">"
    return text(_CANDIDATE_PAIRS.format(direction=direction)).bindparams(
        bindparam("ids", expanding=True)
    )


def candidate_pairs(
    session: Session, person_ids: Sequence[str], *, both_ways: bool
) -> dict[str, set[str]]:
    """For each of these people, the others sharing one of their stored blocking keys.

    ``both_ways`` False: only the others of a higher id.
    """
    found: dict[str, set[str]] = defaultdict(set)
    statement = _candidate_pairs(both_ways)
    for start in range(0, len(person_ids), IDS_PER_QUERY):
        chunk = list(person_ids[start : start + IDS_PER_QUERY])
        for mine, other in session.execute(statement, {"ids": chunk, "cap": KEY_CAP}):
            found[mine].add(other)
    return found


def check_people(
    session: Session,
    people: Iterable[Any],
    *,
    thresholds: score.Thresholds,
    review_threshold: float,
    both_ways: bool,
) -> None:
    """Score these people against those sharing a key with them; record the pairs found.

    ``people`` are live people's identifying columns (``IDENTITY_COLUMNS``, or Person
    rows). ``both_ways`` compares each with every candidate; a full scan compares only
    with candidates of a higher id (the other way round was, or will be, done from them).
    """
    model = model_store.current(session)
    own = {person.id: identity_of(person) for person in people}
    wanted = candidate_pairs(session, sorted(own), both_ways=both_ways)
    candidate_ids = set().union(*wanted.values()) if wanted else set()
    identities = {row.id: identity_of(row) for row in load_live(session, candidate_ids)}
    stored = pairs_touching(session, own, both_ways=both_ways)
    for person_id in sorted(wanted):
        identity = own[person_id]
        for other_id in sorted(wanted[person_id]):
            other = identities.get(other_id)
            if other is None:
                continue  # merged or a converted lead: not a live person
            pair = (min(person_id, other_id), max(person_id, other_id))
            known = stored.get(pair)
            if known is not None and known.status == DISMISSED:
                continue
            verdict = score.evaluate(identity, other, model=model, thresholds=thresholds)
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


def load_live(session: Session, ids: Collection[str]) -> list[Any]:
    """The identifying columns of those of these people who are live."""
    ordered = sorted(ids)
    found: list[Any] = []
    for start in range(0, len(ordered), IDS_PER_QUERY):
        chunk = ordered[start : start + IDS_PER_QUERY]
        found.extend(session.execute(_live(None).where(Person.id.in_(chunk))).all())
    return found


def pairs_touching(
    session: Session, ids: Iterable[str], *, both_ways: bool = True
) -> dict[tuple[str, str], DuplicatePair]:
    """The stored pairs (open or dismissed) that include any of these people.

    ``both_ways`` False: only those where they are the lower id (``person_id``).
    """
    ordered = sorted(ids)
    found: dict[tuple[str, str], DuplicatePair] = {}
    for start in range(0, len(ordered), IDS_PER_QUERY // 2):
        chunk = ordered[start : start + IDS_PER_QUERY // 2]
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
    for start in range(0, len(ordered), IDS_PER_QUERY):
        chunk = ordered[start : start + IDS_PER_QUERY]
        found |= set(session.scalars(select(Person.id).where(Person.id.in_(chunk), _IS_LIVE)).all())
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
