"""A scan scored in worker processes, and early refusals, propose exactly what scoring
every candidate pair whole proposes (docs/decisions.md, "Duplicates (issue 15)")."""

from __future__ import annotations

import csv
import os
import random
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from bench.matching.generate import CSV_COLUMNS, generate_store, make_id
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.duplicates import forget_scans, open_pairs

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.duplicates import scoring
from ridercrm.duplicates.models import OPEN, DuplicateCluster, DuplicateScan
from ridercrm.ids import RecordKind
from ridercrm.matching import model_store, score
from ridercrm.matching.repository import KEY_CAP
from ridercrm.people.index import identity_of
from ridercrm.people.models import Person, PersonKey
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv
from tests.duplicates.test_scan import REVIEW, run_scan

BATCH = 23  # small batches: many of them, several in flight at once


def store_people(sessions: sessionmaker[Session], directory: Path) -> None:
    """Generated people, households among them, and one in eight stored a second time
    under another e-mail address (someone who signed up twice)."""
    rng = random.Random(15)
    _gen, generated, _households = generate_store(rng, 360)
    people = [replace(p, id=make_id(rng, RecordKind.CONTACT)) for p in generated]  # all contacts
    twice = [
        replace(p, id=make_id(rng, RecordKind.CONTACT), email=f"{p.first_name}.{n}@example.net")
        for n, p in enumerate(rng.sample(people, 45))
    ]
    path = directory / "contacts.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        writer.writerows(p.csv_row() for p in people + twice)
    result = import_csv(sessions, CONTACTS, path, workers=0)
    assert result.imported == 405


def found(sessions: sessionmaker[Session]) -> tuple[list[Any], list[Any]]:
    """The open pairs (with score and explanation) and the open clusters."""
    pairs = open_pairs(sessions)
    with session_scope(sessions) as session:
        clusters = session.execute(
            select(DuplicateCluster.people, DuplicateCluster.score).where(
                DuplicateCluster.status == OPEN
            )
        ).all()
    return pairs, sorted((sorted(c.people), c.score) for c in clusters)


def whole_scores(sessions: sessionmaker[Session]) -> list[Any]:
    """What a scan should propose, computed the plain way: every pair of people sharing
    a stored key held by at most KEY_CAP people, scored whole by ``score.evaluate``."""
    with session_scope(sessions) as session:
        model = model_store.current(session)
        people = {p.id: identity_of(p) for p in session.scalars(select(Person))}
        holders: dict[int, list[str]] = defaultdict(list)
        for key, person_id in session.execute(select(PersonKey.key, PersonKey.person_id)):
            holders[key].append(person_id)
    pairs = {(a, b) for ids in holders.values() if len(ids) <= KEY_CAP for a in ids for b in ids}
    proposed = []
    for a, b in sorted(pair for pair in pairs if pair[0] < pair[1]):
        verdict = score.evaluate(people[a], people[b], model=model, thresholds=score.Thresholds())
        if verdict.total >= REVIEW and (verdict.accepted or verdict.rule == score.UNDER_THRESHOLD):
            why = {"levels": verdict.levels, "weights": verdict.weights, "rule": verdict.rule}
            proposed.append((a, b, verdict.total, why))
    return proposed


def test_worker_processes_propose_what_scoring_every_pair_whole_proposes(
    db_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    store_people(sessions, tmp_path)
    expected = whole_scores(sessions)
    assert len(expected) >= 40  # most of the people stored twice

    alone = run_scan(sessions, full=True, batch_size=BATCH, workers=1)
    in_one = found(sessions)
    forget_scans(sessions)
    shared = run_scan(sessions, full=True, batch_size=BATCH, workers=2)
    in_two = found(sessions)

    assert in_one[0] == expected
    assert in_two == in_one
    assert (shared.checked, shared.pairs, shared.clusters) == (
        alone.checked,
        alone.pairs,
        alone.clusters,
    )
    assert alone.checked == 405


def test_a_scan_in_workers_interrupted_resumes_after_its_last_written_batch(
    db_url: str, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    store_people(sessions, tmp_path)
    seen: list[int] = []

    def stop(done: int, total: int) -> None:
        seen.append(done)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_scan(sessions, full=True, batch_size=BATCH, workers=2, progress=stop)
    with session_scope(sessions) as session:
        record = session.scalars(select(DuplicateScan)).one()
        # The cursor passed the three batches written, and no other.
        assert record.checked == 3 * BATCH
        written = session.scalars(select(Person.id).order_by(Person.id).limit(3 * BATCH)).all()
        assert record.cursor == written[-1]
        assert record.finished_at is None

    resumed = run_scan(sessions, batch_size=BATCH, workers=2)
    assert resumed.resumed
    assert resumed.checked == 405
    assert found(sessions)[0] == whole_scores(sessions)


def test_small_scans_and_databases_in_memory_are_scored_in_one_process(tmp_path: Path) -> None:
    def workers(url: str, people: int) -> int:
        engine = build_engine(Settings(database_url=url))
        try:
            return scoring.workers_for(people, session_factory(engine))
        finally:
            engine.dispose()

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    on_file = f"sqlite:///{tmp_path / 'store.db'}"
    assert workers(on_file, scoring.PARALLEL_FROM) == min(scoring.MAX_WORKERS, cpus or 1)
    assert workers(on_file, scoring.PARALLEL_FROM - 1) == 1
    assert workers("sqlite://", 1_000_000) == 1
    assert workers("sqlite:///:memory:", 1_000_000) == 1
