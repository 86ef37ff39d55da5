"""Console search speed: ``staff.finder.find_people`` at 100,000 and 1,000,000 people.

    .venv/bin/python bench/console_search.py [--sizes 100000,1000000] [--queries 300]

For each size: a fresh SQLite store in a temporary directory (deleted at the end) filled
with the matching benchmark's generated Australian people through the CSV importer, then
queries typed as staff type them, each kind in turn, one session per query (as a page
does): a phone written ``0412 345 678``, a name with one typo, an e-mail in capitals, a
licence number, a family name with a date of birth, a date of birth alone. Prints
median, p99 and the share of queries whose person is among the results.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=console_search ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import harness  # noqa: E402
from bench.match_perf import CSV_FIELDS, PeopleGenerator, _typo  # noqa: E402
from bench.report import machine  # noqa: E402
from ridercrm.config import Settings  # noqa: E402
from ridercrm.db import build_engine, session_factory, session_scope  # noqa: E402
from ridercrm.migrate import upgrade  # noqa: E402
from ridercrm.staff.finder import find_people  # noqa: E402
from ridercrm.transfer.columns import CONTACTS  # noqa: E402
from ridercrm.transfer.importer import import_csv  # noqa: E402


def _spaced_phone(phone: str) -> str:
    digits = "".join(ch for ch in phone if ch.isdigit())
    if digits.startswith("61"):
        digits = "0" + digits[2:]
    return f"{digits[:4]} {digits[4:7]} {digits[7:]}"


def typed(rng: random.Random, kind: str, person: dict[str, str]) -> str | None:
    if kind == "phone":
        return _spaced_phone(person["mobile_phone"]) if person["mobile_phone"] else None
    if kind == "name typo":
        return f"{person['first_name']} {_typo(rng, person['last_name'])}"
    if kind == "email":
        return person["email"].upper() if person["email"] else None
    if kind == "licence":
        return person["drivers_license"] or None
    if kind == "surname + dob":
        return f"{person['last_name']} {person['date_of_birth']}"
    if kind == "dob":
        return person["date_of_birth"]
    raise AssertionError(kind)


KINDS = ("phone", "name typo", "email", "licence", "surname + dob", "dob")


def run(size: int, queries: int, directory: Path, seed: int) -> None:
    path = directory / f"search-{size}.db"
    settings = Settings(database_url=f"sqlite:///{path}", log_level="WARNING")
    engine = build_engine(settings)
    upgrade(engine)
    rng = random.Random(seed)
    wanted = set(rng.sample(range(size), min(size, queries * 2)))
    kept: list[dict[str, str]] = []
    csv_path = directory / f"search-{size}.csv"
    with csv_path.open("w", encoding="utf-8", newline="") as handle:
        import csv

        writer = csv.writer(handle)
        writer.writerow(CSV_FIELDS)
        for index, person in enumerate(PeopleGenerator(seed).people(size)):
            writer.writerow([person[name] for name in CSV_FIELDS])
            if index in wanted:
                kept.append(person)
    started = time.perf_counter()
    import_csv(session_factory(engine), CONTACTS, csv_path)
    print(f"{size:,} people imported in {time.perf_counter() - started:.0f} s", flush=True)
    sessions = session_factory(engine)
    for kind in KINDS:
        times: list[float] = []
        found = 0
        for person in kept:
            text = typed(rng, kind, person)
            if text is None:
                continue
            begun = time.perf_counter()
            with session_scope(sessions) as session:
                people = find_people(session, text=text)
                hit = any(
                    p.last_name == person["last_name"]
                    and str(p.date_of_birth) == person["date_of_birth"]
                    for p in people
                )
            times.append((time.perf_counter() - begun) * 1000)
            found += hit
            if len(times) >= queries:
                break
        times.sort()
        p99 = times[min(len(times) - 1, int(len(times) * 0.99))]
        print(
            f"| {size:,} | {kind} | {len(times)} | {statistics.median(times):.1f} | {p99:.1f}"
            f" | {found / len(times):.1%} |",
            flush=True,
        )
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="100000,1000000")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--seed", type=int, default=14)
    harness.add_previous(parser)
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.console_search")) is not None:
        raise SystemExit(status)
    print(machine())
    print("| people | query | n | median ms | p99 ms | person found |")
    print("|---|---|---|---|---|---|")
    for size in (int(part) for part in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as directory:
            run(size, args.queries, Path(directory), args.seed)


if __name__ == "__main__":
    main()
