"""Duplicates: a first scan of a large store (issue 15: 1,000,000 people in under 10 minutes).

Run from the repository root:

    .venv/bin/python -m bench.dupscan_bench build --people 1000000 --store /tmp/dup-1m.sqlite3
    .venv/bin/python -m bench.dupscan_bench scan --store /tmp/dup-1m.sqlite3

``build`` writes a SQLite store (outside the repository; the path is yours) of generated
Australian people -- the matching benchmark's generator (bench/match_perf.py: households
sharing surname, address and often an e-mail or a phone) -- with one person in fifty
stored a second time under another e-mail address (someone who signed up twice), loaded
by the CSV importer in-process, as ``ridercrm import contacts`` does.

``scan`` brings the store's schema up to date, forgets any earlier scan (its pairs,
clusters and scan records: every run is a first scan) and runs a full scan in-process,
reporting wall-clock time, CPU time (this process and the worker processes that score
its batches, ``--workers``: default one per CPU), the load average before and after, and
the pairs and clusters found. ``--pairs-out FILE`` writes the open pairs found, one a
line with its score and explanation, sorted: to compare two versions of the scan.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=dupscan_bench ARGS="scan --store PATH --previous DIR"
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.duplicates import forget_scans, open_pairs

from bench import harness
from bench.match_perf import CSV_FIELDS, PeopleGenerator
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.duplicates import scan
from ridercrm.matching.service import thresholds_of
from ridercrm.migrate import upgrade
from ridercrm.people.models import Person
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv

TWICE = 0.02  # people stored a second time, under another e-mail address


def _load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def build(size: int, store: Path, seed: int) -> None:
    if store.exists():
        raise SystemExit(f"{store} exists; remove it or choose another path")
    engine = build_engine(Settings(database_url=f"sqlite:///{store}"))
    upgrade(engine)
    rng = random.Random(seed)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "people.csv"
        written = 0
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(CSV_FIELDS)
            for person in PeopleGenerator(seed).people(size):
                if written == size:
                    break
                writer.writerow([person[name] for name in CSV_FIELDS])
                written += 1
                if rng.random() < TWICE and written < size:
                    again = dict(person, email=f"{person['first_name']}.{written}@example.net")
                    writer.writerow([again[name] for name in CSV_FIELDS])
                    written += 1
        generated = time.perf_counter() - started
        print(f"generated {written} people in {generated:.1f} s; load {_load()}", flush=True)
        started = time.perf_counter()
        result = import_csv(session_factory(engine), CONTACTS, path)
    print(f"import: {result.summary()} in {time.perf_counter() - started:.1f} s; load {_load()}")
    with engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")
    engine.dispose()


def _children_cpu() -> float:
    """CPU time of this process's finished child processes (the scan's workers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_scan(
    store: Path, batch: int, pairs_out: Path | None = None, workers: int | None = None
) -> None:
    settings = Settings(database_url=f"sqlite:///{store}")
    engine = build_engine(settings)
    upgrade(engine)
    sessions = session_factory(engine)
    forget_scans(sessions)
    with session_scope(sessions) as session:
        people = session.scalar(select(func.count()).select_from(Person)) or 0
    print(f"{people} people; load before {_load()}", flush=True)
    last = [time.perf_counter()]
    started, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()

    def progress(done: int, total: int) -> None:
        if time.perf_counter() - last[0] >= 60:
            last[0] = time.perf_counter()
            spent = time.process_time() - cpu
            print(
                f"  {done}/{total} checked in {time.perf_counter() - started:.0f} s wall,"
                f" {spent:.0f} s CPU of this process (workers' CPU is counted at the end);"
                f" load {_load()}",
                flush=True,
            )

    # The scan before issue 15's speed work took no ``workers``: the bench measures both.
    extra = {} if workers is None else {"workers": workers}
    result = scan.scan(
        sessions,
        thresholds=thresholds_of(settings),
        review_threshold=settings.duplicates_review_threshold,
        full=True,
        progress=progress,
        batch_size=batch,
        **extra,
    )
    wall, used = time.perf_counter() - started, time.process_time() - cpu
    helped = _children_cpu() - children
    total = used + helped
    print(
        f"first scan of {result.checked} people: {wall:.1f} s wall ({wall / 60:.2f} min),"
        f" {total:.1f} s CPU ({used:.1f} s this process, {helped:.1f} s its workers;"
        f" {total * 1000 / max(result.checked, 1):.3f} ms a person); {result.pairs} open"
        f" pairs, {result.clusters} clusters; load after {_load()}"
    )
    if pairs_out is not None:
        write_pairs(sessions, pairs_out)
    engine.dispose()


def write_pairs(sessions: sessionmaker[Session], path: Path) -> None:
    """The open pairs, one a line, sorted: ids, score and explanation (its keys sorted)."""
    rows = open_pairs(sessions)
    lines = sorted(
        f"{a} {b} {score} {json.dumps(why, sort_keys=True)}\n" for a, b, score, why in rows
    )
    path.write_text("".join(lines), encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    make = sub.add_parser("build")
    make.add_argument("--people", type=int, default=1_000_000)
    make.add_argument("--store", type=Path, required=True)
    make.add_argument("--seed", type=int, default=7)
    check = sub.add_parser("scan")
    check.add_argument("--store", type=Path, required=True)
    check.add_argument("--batch", type=int, default=scan.BATCH)
    check.add_argument("--pairs-out", type=Path, help="write the open pairs found here")
    check.add_argument("--workers", type=int, help="scoring processes (default: one per CPU)")
    harness.add_previous(check)  # the scan; build makes the one store both scans read
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.dupscan_bench")) is not None:
        raise SystemExit(status)
    if args.what == "build":
        build(args.people, args.store, args.seed)
    else:
        run_scan(args.store, args.batch, args.pairs_out, args.workers)


if __name__ == "__main__":
    main()
