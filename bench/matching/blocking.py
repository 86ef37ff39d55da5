"""Blocking, apart from the decision: is the true record among the matcher's candidates?

Run from the repository root (needs the `bench` extra):

    .venv/bin/python -m bench.matching.blocking                     # FEBRL 1-3 stores
    .venv/bin/python -m bench.matching.blocking --people 1000000    # the same in 1M people

In-process, on fresh SQLite files: the FEBRL originals (``febrl_data.make_store``, the
same store and queries as ``bench.matching.febrl``) loaded by the service's importer
(``import_csv``), alone or after ``--people`` synthetic people from
``bench/match_perf.py``'s generator (one store holding the three data sets' originals).
For every duplicate whose original was stored, with and without the licence, the
candidate ids the matcher's blocking returns for the request (the keys of the query, the
same call ``find_match`` makes): pairs completeness = share of duplicates whose original
is among them; and candidates per query (median, p99, max), strangers included.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=matching.blocking ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from sqlalchemy import select

from bench import harness
from bench.matching import damage, febrl_data
from bench.matching.febrl_data import Asks, Store
from bench.matching.generate import make_id
from bench.report import code_version, machine, write_section
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.ids import RecordKind
from ridercrm.matching import repository
from ridercrm.migrate import upgrade
from ridercrm.people.blocking import Identity, query_keys
from ridercrm.people.models import Person
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv

SEED = 20261122  # as bench.matching.febrl's default


def candidates(session: Any, data: dict[str, Any]) -> set[str]:
    """The candidate ids the matcher's blocking finds for one request's person_data."""
    identity = Identity.of(
        first_name=data.get("first_name"),
        last_name=data.get("last_name"),
        date_of_birth=dt.date.fromisoformat(data["date_of_birth"]),
        email=data.get("email"),
        phones=(data.get("mobile_phone"),),
        drivers_license=data.get("drivers_license"),
        street=data.get("street"),
        postcode=data.get("postcode"),
    )
    return set(repository.candidate_ids(session, query_keys(identity)))


@dataclass
class Blocked:
    """Pairs completeness and candidate counts of one data set in one store, one run."""

    duplicates: int = 0
    found: int = 0
    counts: list[int] = field(default_factory=list)
    missed_kinds: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def completeness(self) -> float:
        return self.found / self.duplicates if self.duplicates else float("nan")


def load(url: str, directory: Path, stores: list[Store], people: int, seed: int) -> set[str]:
    """Import ``people`` synthetic people, then the FEBRL originals; the ids stored."""
    engine = build_engine(Settings(database_url=url, log_level="WARNING"))
    try:
        upgrade(engine)
        sessions = session_factory(engine)
        if people:
            from bench.match_perf import CSV_FIELDS, PeopleGenerator

            path = directory / "synthetic.csv"
            with path.open("w", encoding="utf-8", newline="") as handle:
                import csv

                writer = csv.writer(handle)
                writer.writerow(CSV_FIELDS)
                for person in PeopleGenerator(seed).people(people):
                    writer.writerow([person[name] for name in CSV_FIELDS])
            import_csv(sessions, CONTACTS, path)
            path.unlink()
        distinct_ids(stores, seed)
        for number, store in enumerate(stores):
            path = directory / f"febrl-{number}.csv"
            store.write(path)
            import_csv(sessions, CONTACTS, path)
        with session_scope(sessions) as session:
            wanted = {i for store in stores for i in store.ids.values()}
            return {i for i in session.scalars(select(Person.id)) if i in wanted}
    finally:
        engine.dispose()


def distinct_ids(stores: list[Store], seed: int) -> None:
    """Give an original a new id where an earlier set already uses its id.

    Each set's ids come from the same seeded generator, so two sets in one store can
    share ids; the importer then keeps the first and the later set's original is not
    stored, which would count its duplicates as blocking misses.
    """
    rng = random.Random(f"{seed}-distinct")
    taken: set[str] = set()
    for store in stores:
        renamed: dict[str, str] = {}
        for rec_id, person_id in store.ids.items():
            while person_id in taken:
                person_id = make_id(rng, RecordKind.CONTACT)
            renamed[store.ids[rec_id]] = person_id
            store.ids[rec_id] = person_id
            taken.add(person_id)
        for row in store.rows:
            row["id"] = renamed.get(row["id"], row["id"])


def measure(url: str, store: Store, asks: Asks, stored: set[str]) -> dict[str, Blocked]:
    """Run -> Blocked for the licence and no-licence requests."""
    engine = build_engine(Settings(database_url=url, log_level="WARNING"))
    sessions = session_factory(engine)
    results = {}
    try:
        for run in ("licence", "no licence"):
            blocked = Blocked()
            started = time.perf_counter()
            for ask in asks.asks:
                with session_scope(sessions) as session:
                    found = candidates(session, ask.person_data(run == "licence"))
                blocked.counts.append(len(found))
                true_id = store.ids.get(ask.original)
                if ask.stranger or true_id not in stored:
                    continue
                blocked.duplicates += 1
                if true_id in found:
                    blocked.found += 1
                else:
                    for kind in damage.kinds(ask.found):
                        blocked.missed_kinds[kind] = blocked.missed_kinds.get(kind, 0) + 1
            blocked.seconds = time.perf_counter() - started
            results[run] = blocked
    finally:
        engine.dispose()
    return results


def quantile(values: list[int], q: float) -> int:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else 0


def table(rows: list[tuple[str, str, Blocked]]) -> str:
    lines = [
        "| store | data set, run | duplicates | true record a candidate | pairs completeness "
        "| candidates median / p99 / max | ms per query |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for size, label, b in rows:
        lines.append(
            f"| {size} | {label} | {b.duplicates:,} | {b.found:,} | {b.completeness:.4f} | "
            f"{statistics.median(b.counts):g} / {quantile(b.counts, 0.99)} / {max(b.counts)} | "
            f"{b.seconds / max(1, len(b.counts)) * 1000:.2f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.matching.blocking")
    parser.add_argument("--sets", type=int, nargs="+", default=[1, 2, 3], choices=[1, 2, 3])
    parser.add_argument("--people", type=int, default=0, help="synthetic people besides")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--write", action="store_true", help="update bench/README.md")
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.matching.blocking")) is not None:
        raise SystemExit(status)
    data = {}
    for number in args.sets:
        originals, duplicates = febrl_data.load(number)
        store = febrl_data.make_store(originals, args.seed)
        data[number] = (store, febrl_data.make_asks(originals, duplicates, store, args.seed))
    rows: list[tuple[str, str, Blocked]] = []
    with tempfile.TemporaryDirectory(prefix="ridercrm-blocking-") as tmp:
        directory = Path(tmp)
        groups = [list(data)] if args.people else [[n] for n in data]
        for group in groups:
            url = f"sqlite:///{directory / f'store-{group[0]}.db'}"
            started = time.perf_counter()
            stored = load(url, directory, [data[n][0] for n in group], args.people, args.seed)
            size = args.people + sum(len(data[n][0].rows) for n in group)
            print(f"[blocking] loaded {size:,} people in {time.perf_counter() - started:.0f} s",
                  file=sys.stderr, flush=True)  # fmt: skip
            for number in group:
                store, asks = data[number]
                for run, blocked in measure(url, store, asks, stored).items():
                    rows.append((f"{size:,}", f"FEBRL {number}, {run}", blocked))
    info = machine()
    where = (
        f"{args.people:,} synthetic people and the FEBRL originals"
        if args.people
        else "the FEBRL stores"
    )
    out = [
        f"## Matching blocking: pairs completeness, {where}",
        "",
        "In-process on fresh SQLite files loaded by the importer; for each duplicate whose "
        "original is stored, the candidate ids the matcher's blocking returns for its request "
        "(as `find_match` asks them): pairs completeness is the share whose original is among "
        "them, whatever the decision. Candidates per query include the strangers' queries.",
        "",
        f"Machine: {info['cpu']}, {info['nproc']} CPUs (shared); Python {info['python']}, "
        f"SQLite {info['sqlite']}. Date: {dt.date.today().isoformat()}. Code: {code_version()}. "
        f"Command: `.venv/bin/python -m bench.matching.blocking"
        + (f" --people {args.people}" if args.people else "")
        + f"`. Load average {os.getloadavg()[0]:.1f} at the end (shared machine).",
        "",
        table(rows),
        "",
        "The true record not a candidate, by kind of damage (most frequent):",
        "",
    ]
    for _size, label, blocked in rows:
        if blocked.missed_kinds:
            top = sorted(blocked.missed_kinds.items(), key=lambda item: -item[1])[:6]
            out.append(f"- {label}: " + ", ".join(f"{k} {n}" for k, n in top))
    text = "\n".join(out)
    print(text)
    if args.write:
        write_section(text + "\n")


if __name__ == "__main__":
    main()
