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
"""

from __future__ import annotations

import argparse
import csv
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

from bench.report import cpu_model  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.db import build_engine, session_factory  # noqa: E402
from ridercrm.demo import demo_people  # noqa: E402
from ridercrm.ids import RecordKind, new_id  # noqa: E402
from ridercrm.migrate import upgrade  # noqa: E402
from ridercrm.people.index import keep_keys  # noqa: E402
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
    sessions = keep_keys(session_factory(engine))
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
    sessions = keep_keys(session_factory(engine))
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
