"""Import benchmark: people per second that `ridercrm import contacts` writes into SQLite.

Generates N people (the demo data generator, seeded) into a CSV file in a temporary
directory, then imports it into a fresh, migrated SQLite file: ``--repeats`` times
in-process through ``ridercrm.transfer.importer.import_csv`` (what the command calls),
and once through the ``ridercrm`` command in a subprocess (start-up included).
Nothing generated is kept.

    .venv/bin/python bench/import_bench.py [--people 100000] [--repeats 5] [--with-ids]
        [--rerun]

``--rerun`` also imports the same file a second time (``force``, rows matching a stored
person skipped: what `ridercrm import contacts FILE --force` does) into each run's
database, which then holds the N people: the cost of looking every row up in the matcher.

``--floor`` measures the import against the database's own bulk loader instead (issue 23's
floor): in each of ``--rounds`` rounds, interleaved, the same CSV is loaded by
`sqlite3 .import` into a fresh file, imported by this checkout's code and by the previous
commit's (``--previous``, its checkout or that checkout's src/: ``git worktree add
--detach DIR REV``),
each in a fresh process and a fresh, migrated database, the import timed from the
``import_csv`` call (start-up and migration not included), workers as the command chooses
them; then the same on PostgreSQL against psql's `copy` meta-command (a fresh database each time) when
RIDERCRM_TEST_POSTGRES_URL is set. It prints each round's times and the median ratios,
and the store each import left against the CSV's size (the issue's "store at most 3 times its data":
SQLite's file after a checkpoint, PostgreSQL's growth of ``pg_database_size``).

    .venv/bin/python bench/import_bench.py --floor [--people 100000] [--rounds 3]
        [--previous /tmp/prev-import/src]
    make bench NAME=import_bench ARGS="--floor --people 1000 --rounds 1 --previous DIR"
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from sqlalchemy import create_engine, make_url, text  # noqa: E402
from sqlalchemy.pool import NullPool  # noqa: E402

from bench.report import cpu_model  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.db import build_engine, session_factory  # noqa: E402
from ridercrm.demo import demo_people  # noqa: E402
from ridercrm.ids import RecordKind, new_id  # noqa: E402
from ridercrm.migrate import upgrade  # noqa: E402
from ridercrm.transfer.checks import default_workers  # noqa: E402
from ridercrm.transfer.columns import CONTACTS  # noqa: E402
from ridercrm.transfer.importer import import_csv  # noqa: E402

TARGET = 20_000  # people per second


def write_people(path: Path, count: int, *, with_ids: bool, seed: int) -> None:
    """Write ``count`` generated people as a contacts CSV with our column names."""
    header = CONTACTS.header("ours")
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        for _kind, values in demo_people(count, seed=seed):
            if with_ids:
                values = {**values, "id": new_id(RecordKind.CONTACT)}
            writer.writerow([values.get(name, "") for name in header])


def fresh_database(path: Path) -> str:
    """A new SQLite file with the schema, and its URL."""
    url = f"sqlite:///{path}"
    engine = build_engine(Settings(database_url=url))
    upgrade(engine)
    engine.dispose()
    return url


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the checking workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def import_in_process(
    url: str, csv_path: Path, count: int, workers: int | None
) -> tuple[float, float]:
    """Wall and CPU seconds to import the file through the importer function."""
    engine = build_engine(Settings(database_url=url))
    sessions = session_factory(engine)
    started, cpu = time.perf_counter(), cpu_seconds()
    result = import_csv(sessions, CONTACTS, csv_path, workers=workers)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    engine.dispose()
    if (result.imported, result.bad_rows) != (count, 0):
        raise SystemExit(f"unexpected result: {result.summary()}")
    return elapsed, cpu


def rerun_in_process(url: str, csv_path: Path, count: int) -> tuple[float, float, int]:
    """Wall and CPU seconds to import the same file again (forced), and rows skipped."""
    engine = build_engine(Settings(database_url=url))
    sessions = session_factory(engine)
    started, cpu = time.perf_counter(), cpu_seconds()
    result = import_csv(sessions, CONTACTS, csv_path, workers=0, force=True)
    elapsed, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    engine.dispose()
    if result.bad_rows or result.imported + result.skipped != count:
        raise SystemExit(f"unexpected re-run result: {result.summary()}")
    return elapsed, cpu, result.skipped


def import_by_command(url: str, csv_path: Path, count: int) -> float:
    """Seconds for `ridercrm import contacts FILE` in a subprocess, start-up included."""
    command = Path(sys.executable).with_name("ridercrm")
    argv = [str(command)] if command.exists() else [sys.executable, "-m", "ridercrm.cli"]
    env = {**os.environ, "RIDERCRM_DATABASE_URL": url}
    started = time.perf_counter()
    done = subprocess.run(
        [*argv, "import", "contacts", str(csv_path)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - started
    expected = f"imported {count} contacts, 0 bad rows"
    if done.returncode != 0 or expected not in done.stdout:
        raise SystemExit(f"the command failed ({done.returncode}): {done.stdout}{done.stderr}")
    return elapsed


# Run by a fresh interpreter with PYTHONPATH on the code under test: migrate the empty
# database, then time import_csv (what `ridercrm import contacts` calls) alone.
_CHILD = """
import json, resource, sys, time
from pathlib import Path
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory
from ridercrm.migrate import upgrade
try:  # a build before the unit of work (issue 23): the keys' own listeners
    from ridercrm.people.index import keep_keys as install
except ImportError:  # session_factory installs the unit of work
    install = lambda factory: factory  # noqa: E731
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv
url, csv_path, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
engine = build_engine(Settings(database_url=url))
upgrade(engine)
from sqlalchemy import text
def size():
    if engine.dialect.name != "postgresql":
        return 0
    with engine.connect() as connection:
        return connection.scalar(text("SELECT pg_database_size(current_database())"))
empty = size()
sessions = install(session_factory(engine))
def cpu():
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime
started, cpu_started = time.perf_counter(), cpu()
result = import_csv(sessions, CONTACTS, csv_path)
seconds = time.perf_counter() - started
assert (result.imported, result.bad_rows) == (count, 0), result.summary()
cpu_used = cpu() - cpu_started
grown = size() - empty
engine.dispose()
print(json.dumps({"seconds": seconds, "cpu": cpu_used, "grown": grown}))
"""


def import_child(source: Path, url: str, csv_path: Path, count: int) -> tuple[float, float, float]:
    """Wall and CPU seconds (its checking workers' included) the code in ``source`` takes
    to import the file into ``url`` (migrated first), and on PostgreSQL the MB the database
    grew by (0 on SQLite: its file says)."""
    env = {**os.environ, "PYTHONPATH": str(source), "RIDERCRM_DATABASE_URL": url}
    done = subprocess.run(
        ["nice", "-n", "10", sys.executable, "-c", _CHILD, url, str(csv_path), str(count)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"the import in {source} failed: {done.stderr[-2000:]}")
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    return float(figures["seconds"]), float(figures["cpu"]), float(figures["grown"]) / 1e6


def sqlite_import(db_path: Path, csv_path: Path) -> float:
    """Seconds for `sqlite3 FILE .import` of the CSV into a new table (header as columns)."""
    started = time.perf_counter()
    subprocess.run(
        ["nice", "-n", "10", "sqlite3", str(db_path), ".mode csv", f".import {csv_path} people"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def _libpq(url: str) -> str:
    return url.replace("postgresql+psycopg://", "postgresql://", 1)


def postgres_database(url: str, name: str) -> str:
    """A fresh, empty database beside ``url``'s, and its URL."""
    admin = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    return make_url(url).set(database=name).render_as_string(hide_password=False)


def drop_postgres_database(url: str, name: str) -> None:
    admin = create_engine(url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


def psql_copy(url: str, csv_path: Path, header: list[str]) -> float:
    """Seconds for psql's `\\copy` of the CSV into a new table of text columns."""
    columns = ", ".join(f'"{name}" text' for name in header)
    subprocess.run(
        ["psql", "-q", _libpq(url), "-c", f"CREATE TABLE people_copy ({columns})"],
        check=True,
        capture_output=True,
    )
    started = time.perf_counter()
    subprocess.run(
        ["nice", "-n", "10", "psql", "-q", _libpq(url), "-c",
         f"\\copy people_copy FROM '{csv_path}' CSV HEADER"],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return time.perf_counter() - started


def floor(args: argparse.Namespace, root: Path, csv_path: Path) -> None:
    """The import against `sqlite3 .import` and psql's `\\copy`, this commit and the previous."""
    here = Path(args.source)
    previous = Path(args.previous)
    if (previous / "src" / "ridercrm").is_dir():  # a checkout of the previous commit
        previous = previous / "src"
    if not (previous / "ridercrm").is_dir():
        raise SystemExit(
            f"no previous source at {previous} (git worktree add /tmp/prev-import REV)"
        )
    header = CONTACTS.header("ours")
    backends = ["sqlite"]
    postgres = os.environ.get("RIDERCRM_TEST_POSTGRES_URL")
    if postgres:
        backends.append("postgresql")
    table: dict[str, dict[str, list[float]]] = {
        b: {"loader": [], "new": [], "previous": []} for b in backends
    }
    cpus: dict[str, dict[str, list[float]]] = {b: {"new": [], "previous": []} for b in backends}
    # The store each import left, in MB (SQLite: the file after a checkpoint; PostgreSQL:
    # pg_database_size less that of the empty, migrated database).
    stores: dict[str, dict[str, list[float]]] = {b: {"new": [], "previous": []} for b in backends}
    for round_ in range(1, args.rounds + 1):
        for backend in backends:
            times = table[backend]
            for what in ("loader", "new", "previous"):
                name = f"ridercrm_import_floor_{os.getpid()}_{round_}_{what}"
                if backend == "sqlite":
                    path = root / f"{name}.db"
                    if what == "loader":
                        seconds = sqlite_import(path, csv_path)
                    else:
                        source = here if what == "new" else previous
                        seconds, cpu, _grown = import_child(
                            source, f"sqlite:///{path}", csv_path, args.people
                        )
                        cpus[backend][what].append(cpu)
                        stores[backend][what].append(sqlite_store_mb(path))
                    for leftover in root.glob(f"{name}.db*"):
                        leftover.unlink()
                else:
                    assert postgres is not None
                    url = postgres_database(postgres, name)
                    try:
                        if what == "loader":
                            seconds = psql_copy(url, csv_path, header)
                        else:
                            source = here if what == "new" else previous
                            seconds, cpu, grown = import_child(source, url, csv_path, args.people)
                            cpus[backend][what].append(cpu)
                            stores[backend][what].append(grown)
                    finally:
                        drop_postgres_database(postgres, name)
                times[what].append(seconds)
            print(
                f"round {round_} {backend}: loader {times['loader'][-1]:.2f} s, this commit "
                f"{times['new'][-1]:.2f} s (CPU {cpus[backend]['new'][-1]:.2f} s), previous "
                f"{times['previous'][-1]:.2f} s (CPU {cpus[backend]['previous'][-1]:.2f} s); "
                f"load average {os.getloadavg()[0]:.2f}",
                flush=True,
            )
    csv_mb = csv_path.stat().st_size / 1e6
    loader_name = {"sqlite": "sqlite3 .import", "postgresql": "psql \\copy"}
    print(f"\n{args.people} people; medians of {args.rounds} interleaved rounds")
    print(
        "| database | loader | loader s | this commit s | ratio | CPU s | previous s | ratio "
        "| CPU s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for backend in backends:
        times = table[backend]
        loader = statistics.median(times["loader"])
        new = statistics.median(times["new"])
        old = statistics.median(times["previous"])
        print(
            f"| {backend} | {loader_name[backend]} | {loader:.2f} | {new:.2f} | "
            f"{loader / new:.3f} | {statistics.median(cpus[backend]['new']):.2f} | {old:.2f} | "
            f"{loader / old:.3f} | {statistics.median(cpus[backend]['previous']):.2f} |"
        )
    print(f"\nStore left by the import, MB (the CSV: {csv_mb:.1f} MB); medians")
    print("| database | this commit MB | / CSV | previous MB | / CSV |")
    print("|---|---|---|---|---|")
    for backend in backends:
        new = statistics.median(stores[backend]["new"])
        old = statistics.median(stores[backend]["previous"])
        print(f"| {backend} | {new:.1f} | {new / csv_mb:.1f} | {old:.1f} | {old / csv_mb:.1f} |")
    print(f"load average at the end {os.getloadavg()[0]:.2f}")


def sqlite_store_mb(path: Path) -> float:
    """The SQLite file's size once its write-ahead log is checkpointed into it, in MB."""
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--with-ids", action="store_true", help="rows bring their own ids")
    parser.add_argument(
        "--workers", type=int, default=None, help="checking processes (default: automatic)"
    )
    parser.add_argument("--no-command", action="store_true", help="skip the subprocess run")
    parser.add_argument("--rerun", action="store_true", help="also time a forced re-import")
    parser.add_argument("--floor", action="store_true", help="against sqlite3 .import, psql \\copy")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (--floor)")
    parser.add_argument(
        "--previous",
        default="/tmp/prev-import/src",
        help="a checkout of the previous commit, or its src (--floor)",
    )
    parser.add_argument("--source", default=str(ROOT / "src"), help="src under test (--floor)")
    args = parser.parse_args()

    print(
        f"machine: {os.cpu_count()} CPUs, {cpu_model()}; Python {platform.python_version()}; "
        f"SQLite {sqlite3.sqlite_version}; load average {os.getloadavg()[0]:.2f}"
    )
    with tempfile.TemporaryDirectory(prefix="ridercrm-import-bench-") as directory:
        root = Path(directory)
        csv_path = root / "people.csv"
        started = time.perf_counter()
        write_people(csv_path, args.people, with_ids=args.with_ids, seed=args.seed)
        size = csv_path.stat().st_size / 1e6
        workers = default_workers(csv_path) if args.workers is None else args.workers
        ids = "given" if args.with_ids else "made on import"
        print(
            f"generated {args.people} people ({size:.1f} MB, ids {ids}) in "
            f"{time.perf_counter() - started:.1f} s; checking workers: {workers}"
        )
        if args.floor:
            floor(args, root, csv_path)
            return
        rates, reruns = [], []
        for run in range(1, args.repeats + 1):
            url = fresh_database(root / f"run{run}.db")
            seconds, cpu = import_in_process(url, csv_path, args.people, args.workers)
            rates.append(args.people / seconds)
            print(
                f"run {run}: {seconds:.2f} s, {rates[-1]:,.0f} people/s "
                f"(CPU {cpu:.2f} s, {cpu / args.people * 1e6:.0f} µs per person)"
            )
            if args.rerun:
                seconds, cpu, skipped = rerun_in_process(url, csv_path, args.people)
                reruns.append(args.people / seconds)
                print(
                    f"  re-run: {seconds:.2f} s, {reruns[-1]:,.0f} rows/s, {skipped} skipped as "
                    f"matched (CPU {cpu / args.people * 1e6:.0f} µs per row)"
                )
            (root / f"run{run}.db").unlink()
        median = statistics.median(rates)
        print(
            f"in-process: median {median:,.0f} people/s "
            f"(min {min(rates):,.0f}, max {max(rates):,.0f}, {args.repeats} runs)"
        )
        if reruns:
            print(f"re-run (every row matched): median {statistics.median(reruns):,.0f} rows/s")
        if not args.no_command:
            url = fresh_database(root / "command.db")
            seconds = import_by_command(url, csv_path, args.people)
            print(
                f"ridercrm import contacts (subprocess, start-up included): {seconds:.2f} s, "
                f"{args.people / seconds:,.0f} people/s"
            )
    verdict = "met" if median >= TARGET else "NOT met"
    print(
        f"target {TARGET:,} people/s: {verdict}; load average at the end {os.getloadavg()[0]:.2f}"
    )


if __name__ == "__main__":
    main()
