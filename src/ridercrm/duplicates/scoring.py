"""Scoring a batch of people against those sharing a blocking key (docs/decisions.md, "Duplicates (issue 15)").

Reads only: what a batch proposes is computed here and written by the scan (or the
re-check) in its own transaction. So a scan of the whole store can score its batches
in worker processes, one per CPU, while its own process writes their pairs in batch
order and moves its cursor past a batch only once that batch's pairs are written.
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import signal
import threading
import time
from collections import defaultdict, deque
from collections.abc import Collection, Iterable, Iterator, Mapping
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, cast

from sqlalchemy import Select, Table, TextClause, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import build_engine, chunks, session_factory, session_scope
from ridercrm.matching import model_store, score
from ridercrm.matching.repository import KEY_CAP
from ridercrm.matching.service import thresholds_of
from ridercrm.people import normalize
from ridercrm.people.blocking import Identity, stored_keys
from ridercrm.people.identity import IDENTITY_COLUMNS as IDENTITY_FIELD_NAMES
from ridercrm.people.index import identity_of
from ridercrm.people.models import Person

# Ids per IN list: within SQLite's bound-parameter limit on every version.
IDS_PER_QUERY = 900
# A scan of fewer people is scored in its own process: starting a worker (a new
# interpreter importing the service) takes about a second.
PARALLEL_FROM = 20_000
MAX_WORKERS = 8

PEOPLE = cast(Table, Person.__table__)
# What scoring reads of a person (people.index.identity_of), and nothing else. Table
# columns, read as plain rows: the ORM's handling of each row cost a tenth of a scan.
IDENTITY_COLUMNS = tuple(PEOPLE.c[name] for name in ("id", *IDENTITY_FIELD_NAMES))

# Neither merged nor a converted lead. As one expression, not two IS NULL terms: SQLite's
# planner would otherwise read the unique index of converted_contact_id (every live
# person is NULL there) instead of the id, a million entries per batch at 1M people.
IS_LIVE = func.coalesce(PEOPLE.c.merged_into, PEOPLE.c.converted_contact_id).is_(None)


def live(since: dt.datetime | None) -> Select[*tuple[Any, ...]]:
    """The live people's identifying columns (not merged, not converted leads)."""
    statement: Select[*tuple[Any, ...]] = select(*IDENTITY_COLUMNS).where(IS_LIVE)
    if since is not None:
        statement = statement.where(PEOPLE.c.updated_at >= since)
    return statement


def next_batch(session: Session, *, since: dt.datetime | None, after: str, size: int) -> list[str]:
    """The ids of the next ``size`` live people after ``after``, in id order."""
    statement = select(PEOPLE.c.id).where(IS_LIVE, PEOPLE.c.id > after)
    if since is not None:
        statement = statement.where(PEOPLE.c.updated_at >= since)
    return list(session.scalars(statement.order_by(PEOPLE.c.id).limit(size)))


def load_live(session: Session, ids: Collection[str]) -> list[Any]:
    """The identifying columns of those of these people who are live."""
    if session.autoflush:
        # Plain rows (no ORM query flushes for them): this session's own unflushed
        # changes are seen, as an ORM query would see them.
        session.flush()
    ordered = sorted(ids)
    found: list[Any] = []
    for chunk in chunks(ordered, IDS_PER_QUERY):
        found.extend(session.execute(live(None).where(PEOPLE.c.id.in_(chunk))).all())
    return found


# Keys (with their person) per statement: two bound values each, within SQLite's
# bound-parameter limit on every version.
KEYS_PER_QUERY = IDS_PER_QUERY // 2


@lru_cache(maxsize=16)
def _candidate_pairs(count: int, both_ways: bool) -> TextClause:
    """The pairs of people sharing a blocking key, for ``count`` (key, person) values of a
    batch's people (:k0, :p0 …), each joined with the key's other holders. The batch's
    keys are computed from their identities (people.blocking.stored_keys, what every
    write stores), not read back: person_keys has no index on person_id. A key held by
    more than KEY_CAP people is left out, as matching leaves it (a common name pair at a
    million people): whether a key has a (KEY_CAP + 1)th holder is one bounded index
    probe."""
    direction = "<>" if both_ways else ">"
    values = ", ".join(f"(CAST(:k{n} AS BIGINT), :p{n})" for n in range(count))
    return text(
        f"WITH mine (key, person_id) AS (VALUES {values})"  # noqa: S608 (constant)
        " SELECT mine.person_id, other.person_id FROM mine"
        " JOIN person_keys AS other ON other.key = mine.key"
        f" AND other.person_id {direction} mine.person_id"
        " WHERE NOT EXISTS ("
        " SELECT 1 FROM person_keys AS more WHERE more.key = mine.key LIMIT 1 OFFSET :cap)"
    )


def candidate_pairs(
    session: Session, identities: Mapping[str, Identity], *, both_ways: bool
) -> dict[str, set[str]]:
    """For each of these people (id: identity), the others sharing one of their blocking keys.

    ``both_ways`` False: only the others of a higher id.
    """
    mine = [
        (key, person_id)
        for person_id, identity in sorted(identities.items())
        for key in sorted(stored_keys(identity))
    ]
    found: dict[str, set[str]] = defaultdict(set)
    for chunk in chunks(mine, KEYS_PER_QUERY):
        # Padded with its last value (a pair found twice is found once) to one of a few
        # sizes: a few statement texts, each compiled and cached once.
        size = min(KEYS_PER_QUERY, 1 << max(4, (len(chunk) - 1).bit_length()))
        chunk += [chunk[-1]] * (size - len(chunk))
        params: dict[str, Any] = {"cap": KEY_CAP}
        for n, (key, person_id) in enumerate(chunk):
            params[f"k{n}"] = key
            params[f"p{n}"] = person_id
        for person_id, other in session.execute(_candidate_pairs(len(chunk), both_ways), params):
            found[person_id].add(other)
    return found


@dataclass(frozen=True, slots=True)
class Proposal:
    """A pair to propose: its total and the explanation stored with it."""

    total: float
    explanation: dict[str, Any]


# Each pair compared, in the order compared, with what it proposes (None: nothing).
Checked = list[tuple[tuple[str, str], Proposal | None]]


def score_people(
    session: Session,
    people: Iterable[Any],
    *,
    thresholds: score.Thresholds,
    review_threshold: float,
    both_ways: bool,
) -> Checked:
    """Score these people against the live people sharing a key with them.

    ``people`` are live people's identifying columns (``IDENTITY_COLUMNS``, or Person
    rows). ``both_ways`` compares each with every candidate; a full scan compares only
    with candidates of a higher id (the other way round was, or will be, done from them).
    """
    model = model_store.current(session)
    own = {person.id: identity_of(person) for person in people}
    wanted = candidate_pairs(session, own, both_ways=both_ways)
    candidate_ids = set().union(*wanted.values()) if wanted else set()
    candidates = {row.id: _Candidate(row) for row in load_live(session, candidate_ids)}
    checked: Checked = []
    for person_id in sorted(wanted):
        scorer = score.Scorer(own[person_id], model=model, thresholds=thresholds)
        for other_id in sorted(wanted[person_id]):
            other = candidates.get(other_id)
            if other is None:
                continue  # merged or a converted lead: not a live person
            pair = (min(person_id, other_id), max(person_id, other_id))
            checked.append((pair, _proposal(scorer, other, review_threshold)))
    return checked


class _Candidate:
    """A candidate's personal fields, normalised as ``Identity.of`` normalises them: what
    ``Scorer.refusal`` reads of most pairs. Its whole identity (e-mail, phones, postcode...)
    is built only for a pair the refusal lets through (about one in eight at a million
    people) or asks it of (the street, e-mail and phones of a few)."""

    __slots__ = ("_identity", "date_of_birth", "first", "last", "licence", "row")

    def __init__(self, row: Any) -> None:
        self.row = row
        self.first = normalize.name_tokens(row.first_name)
        self.last = normalize.name_tokens(row.last_name)
        self.date_of_birth: dt.date | None = row.date_of_birth
        self.licence = normalize.licence(row.drivers_license)
        self._identity: Identity | None = None

    @property
    def identity(self) -> Identity:
        if self._identity is None:
            self._identity = identity_of(self.row)
        return self._identity

    @property
    def street(self) -> str | None:
        return self.identity.street

    @property
    def email(self) -> str | None:
        return self.identity.email

    @property
    def phones(self) -> frozenset[str]:
        return self.identity.phones

    @property
    def postcode(self) -> str | None:
        return self.identity.postcode

    @property
    def city(self) -> str | None:
        return self.identity.city

    def __getattr__(self, name: str) -> Any:
        # Any other identity value (people.identity.IDENTITY_FIELDS) a comparison reads.
        if name.startswith("_"):
            raise AttributeError(name)  # copying or pickling asks before the slots are set
        return getattr(self.identity, name)


def _proposal(scorer: score.Scorer, other: _Candidate, review_threshold: float) -> Proposal | None:
    # The matcher's own refusals stand (household guard, too little personal evidence):
    # only the total may be under its match threshold, down to the review threshold.
    # Most candidates are relatives and neighbours, refused from the personal fields
    # alone (Scorer.refusal) without comparing the other fields.
    if scorer.refusal(other) is not None:
        return None
    verdict = scorer.evaluate(other.identity)
    if verdict.total < review_threshold:
        return None
    if not (verdict.accepted or verdict.rule == score.UNDER_THRESHOLD):
        return None
    explanation = {"levels": verdict.levels, "weights": verdict.weights, "rule": verdict.rule}
    return Proposal(verdict.total, explanation)


def workers_for(people: int, sessions: sessionmaker[Session]) -> int:
    """How many processes score a scan of this many people: one per CPU, one for a
    small scan or a database other processes cannot open (SQLite in memory)."""
    engine = sessions.kw["bind"]
    if people < PARALLEL_FROM:
        return 1
    in_memory = engine.url.database in (None, "", ":memory:") or "mode=memory" in str(engine.url)
    if engine.dialect.name == "sqlite" and in_memory:
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(MAX_WORKERS, cpus or 1))


def scored_batches(
    sessions: sessionmaker[Session],
    *,
    since: dt.datetime | None,
    after: str,
    size: int,
    workers: int,
    thresholds: score.Thresholds,
    review_threshold: float,
    both_ways: bool,
) -> Iterator[tuple[list[str], Checked]]:
    """The next batches of live people after ``after``, in id order, each with what it
    proposes; scored in ``workers`` worker processes (1: in this one)."""
    work: dict[str, Any] = {
        "thresholds": thresholds,
        "review_threshold": review_threshold,
        "both_ways": both_ways,
    }
    if workers <= 1:
        while True:
            with session_scope(sessions) as session:
                ids = next_batch(session, since=since, after=after, size=size)
                if not ids:
                    return
                checked = score_people(session, load_live(session, ids), **work)
            yield ids, checked
            after = ids[-1]
    url = sessions.kw["bind"].url.render_as_string(hide_password=False)
    pool = ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("spawn"),
        initializer=_start_worker,
        initargs=(url,),
    )
    try:
        # Two batches per worker in flight: one scored while the other waits to be written.
        waiting: deque[tuple[list[str], Future[Checked]]] = deque()
        read_all = False
        while True:
            while len(waiting) < 2 * workers and not read_all:
                with session_scope(sessions) as session:
                    ids = next_batch(session, since=since, after=after, size=size)
                if ids:
                    waiting.append((ids, pool.submit(_score_in_worker, ids, **work)))
                    after = ids[-1]
                read_all = not ids
            if not waiting:
                return
            ids, future = waiting.popleft()
            yield ids, future.result()
    finally:
        pool.shutdown(cancel_futures=True)


_worker_sessions: list[sessionmaker[Session]] = []  # a worker's own, set when it starts


def _start_worker(url: str) -> None:
    # Ctrl-C stops the scan in its own process, which then stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with, args=(os.getppid(),), daemon=True).start()
    _worker_sessions.append(session_factory(build_engine(Settings(database_url=url))))


def _end_with(parent: int) -> None:
    """End this worker once the scan's process is gone (killed, it could not stop it)."""
    while os.getppid() == parent:
        time.sleep(1)
    os._exit(1)


def _score_in_worker(ids: list[str], **work: Any) -> Checked:
    with session_scope(_worker_sessions[0]) as session:
        return score_people(session, load_live(session, ids), **work)


@dataclass(frozen=True)
class SameCheck:
    """How a merge asks the matcher whether its members are one person: the matching
    thresholds (RIDERCRM_MATCH_*) and the scan's review threshold."""

    thresholds: score.Thresholds
    review_threshold: float

    @classmethod
    def of(cls, settings: Settings) -> SameCheck:
        """The check as the app or command is configured (duplicates' own reading of them)."""
        return cls(
            thresholds=thresholds_of(settings),
            review_threshold=settings.duplicates_review_threshold,
        )


def scored_as_different(
    session: Session, one: Person, other: Person, check: SameCheck
) -> str | None:
    """Why the matcher scores these two stored people as different, or None when it would
    propose them as duplicates (what the scan proposes: its refusals, then the total)."""
    scorer = score.Scorer(
        identity_of(one), model=model_store.current(session), thresholds=check.thresholds
    )
    candidate = _Candidate(other)
    refusal = scorer.refusal(candidate)
    if refusal is not None:
        return refusal
    verdict = scorer.evaluate(candidate.identity)
    if verdict.total < check.review_threshold:
        return f"total weight {verdict.total:.1f} bits, under the review threshold {check.review_threshold:g}"
    if not (verdict.accepted or verdict.rule == score.UNDER_THRESHOLD):
        return verdict.rule
    return None
