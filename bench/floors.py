"""The write path's floors (issue 23), each a ratio of two things measured interleaved.

Run from the repository root (``make bench NAME=floors``):

    .venv/bin/python bench/floors.py                          # SQLite and PostgreSQL
    .venv/bin/python bench/floors.py --db sqlite --rounds 5
    .venv/bin/python bench/floors.py --previous ../prev       # side by side with another
                                                              # build: a checkout of the
                                                              # previous commit

``--variant NAME=VALUE`` adds this build with a setting changed (repeatable).

``--figure booking``: a 200-item booking over HTTP (half of it leads it converts)
against the same INSERTs and UPDATEs replayed with the raw driver in one transaction,
and the bytes that booking writes (bench/booking_floor.py says how); ``--store N``
fills the store with N people first.

``--figure weeks``: single-item bookings of one site and week against bookings of
different weeks, 8 clients (bench/weeks_floor.py says how); ``--workers N`` serves
with N worker processes.

Measured so far: ``GET /crm/products`` throughput / ``/healthz`` throughput and
``POST /crm/people/match`` throughput / ``/healthz`` throughput at concurrency 8
(``wrk -t2 -c8``), one ``ridercrm serve`` worker, the demo's store (``ridercrm demo``).
The match requests cycle through ``MATCH_BODIES`` generated identities (half with a slip
in the first name), the same for every build; they are strangers to the demo's store,
so each is searched for in full and answered ``Match not found.``. Each
build gets its own fresh database and server; the rounds alternate builds and, within
a round, healthz, products and match, so a noisy neighbour slows every side of a ratio
alike. Printed: per database and build, the medians of the requests per second and of
the per-round ratios, and the server process's CPU (user and system, from /proc) per
request of healthz and of products, with their ratio: the throughput ratio as the
server's CPU alone would set it, steadier on a shared machine than throughput.

``--previous DIR`` runs the ridercrm of ``DIR/src`` (a worktree of the previous
commit, ``git worktree add DIR <commit>``) with this checkout's installed packages.
PostgreSQL: ``--pg-url`` or ``$RIDERCRM_TEST_POSTGRES_URL`` (only 127.0.0.1).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testkit.serve import free_port, run_cli, running_server

from bench import booking_floor, match_perf, weeks_floor
from bench.harness import fresh_database, previous_build_env, slug

CONCURRENCY = 8
REQUESTS_PER_SECOND = re.compile(r"Requests/sec:\s+([0-9.]+)")
REQUESTS = re.compile(r"(\d+) requests in")
TICKS = os.sysconf("SC_CLK_TCK")


def _cpu_seconds(pid: int) -> float:
    """User and system CPU of process ``pid`` so far (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


MATCH_BODIES = 500


@dataclass
class Build:
    label: str
    env: dict[str, str]
    base: str = ""
    key: str = ""
    pid: int = 0
    healthz: list[float] = field(default_factory=list)
    products: list[float] = field(default_factory=list)
    match: list[float] = field(default_factory=list)
    match_script: Path | None = None
    # The server's CPU (user and system, every thread) per request, µs, per round.
    healthz_cpu: list[float] = field(default_factory=list)
    products_cpu: list[float] = field(default_factory=list)

    def ratios(self, of: list[float]) -> list[float]:
        return [p / h for h, p in zip(self.healthz, of, strict=True)]

    def cpu_ratios(self) -> list[float]:
        """healthz's CPU a request / products', per round: what the throughput ratio
        would be if the server's CPU alone set it."""
        return [h / p for h, p in zip(self.healthz_cpu, self.products_cpu, strict=True)]


def wrk(
    url: str,
    seconds: float,
    headers: dict[str, str] | None = None,
    script: Path | None = None,
    cpu: tuple[int, list[float]] | None = None,
) -> float:
    """Requests per second ``wrk`` measured against ``url``; errors abort the run.
    ``cpu``: a server's pid and a list to append its CPU µs per request to."""
    command = ["wrk", "-t2", f"-c{CONCURRENCY}", f"-d{seconds:g}s"]
    for name, value in (headers or {}).items():
        command += ["-H", f"{name}: {value}"]
    if script is not None:
        command += ["-s", str(script)]
    before = _cpu_seconds(cpu[0]) if cpu else 0.0
    done = subprocess.run([*command, url], capture_output=True, text=True, check=True)
    if cpu:
        served = REQUESTS.search(done.stdout)
        if served is None:
            raise SystemExit(f"no request count in wrk's output:\n{done.stdout}")
        cpu[1].append((_cpu_seconds(cpu[0]) - before) * 1e6 / int(served.group(1)))
    if "Non-2xx" in done.stdout or "Socket errors" in done.stdout:
        raise SystemExit(f"wrk saw failed requests against {url}:\n{done.stdout}")
    found = REQUESTS_PER_SECOND.search(done.stdout)
    if found is None:
        raise SystemExit(f"no throughput in wrk's output:\n{done.stdout}")
    return float(found.group(1))


@contextmanager
def serving(build: Build, url: str, directory: Path) -> Iterator[None]:
    env = {**build.env, "RIDERCRM_DATABASE_URL": url, "RIDERCRM_LOG_LEVEL": "WARNING"}
    run_cli(["db", "upgrade"], env, timeout=300)
    run_cli(["demo"], env, timeout=600)
    out = run_cli(
        ["keys", "create", "--name", "floors", "--scope", "products", "--scope", "match"],
        env,
        timeout=60,
    )
    build.key = out.strip().splitlines()[-1]
    name = slug(build.label)
    build.match_script = match_script(directory / f"match_{name}.lua", build.key)
    log = directory / f"{name}.log"
    with running_server(env, free_port(), log) as (base, pid):
        build.base = base
        build.pid = pid
        yield


def match_bodies() -> list[str]:
    """``MATCH_BODIES`` match requests of generated people, half with a slip in the first
    name (the same for every build and run)."""
    rng = random.Random(23)
    people = list(match_perf.PeopleGenerator(23).people(MATCH_BODIES))
    bodies = []
    for index, person in enumerate(people):
        data = match_perf._request_data(rng, person)
        if index % 2:
            data["first_name"] = match_perf._typo(rng, data["first_name"])
        bodies.append(json.dumps({"person_data": data}, ensure_ascii=False))
    return bodies


def match_script(path: Path, key: str) -> Path:
    """A wrk script that POSTs the match bodies in turn."""
    listed = ",\n".join(match_perf._lua_long_string(body) for body in match_bodies())
    path.write_text(
        f"local bodies = {{\n{listed}\n}}\n"
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'wrk.headers["Authorization"] = "Bearer {key}"\n'
        "local counter = 0\n"
        "function request()\n"
        "  counter = counter + 1\n"
        "  return wrk.format(nil, nil, nil, bodies[(counter % #bodies) + 1])\n"
        "end\n",
        encoding="utf-8",
    )
    return path


def measure(kind: str, builds: list[Build], rounds: int, seconds: float, pg_url: str | None):
    with tempfile.TemporaryDirectory(prefix="ridercrm-floors-") as tmp, ExitStack() as stack:
        for index, build in enumerate(builds):
            url = stack.enter_context(fresh_database(kind, f"floors_{index}", Path(tmp), pg_url))
            stack.enter_context(serving(build, url, Path(tmp)))
        for build in builds:  # warm-up
            wrk(f"{build.base}/crm/products", 1, {"Authorization": f"Bearer {build.key}"})
            wrk(f"{build.base}/crm/people/match", 1, script=build.match_script)
        for _ in range(rounds):
            for build in builds:
                build.healthz.append(
                    wrk(f"{build.base}/healthz", seconds, cpu=(build.pid, build.healthz_cpu))
                )
                build.products.append(
                    wrk(
                        f"{build.base}/crm/products",
                        seconds,
                        {"Authorization": f"Bearer {build.key}"},
                        cpu=(build.pid, build.products_cpu),
                    )
                )
                build.match.append(
                    wrk(f"{build.base}/crm/people/match", seconds, script=build.match_script)
                )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--previous", type=Path, help="a checkout of the previous commit")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also measure this build with a setting changed, e.g. RIDERCRM_SQLITE_SYNCHRONOUS=NORMAL",
    )
    parser.add_argument("--pg-url")
    parser.add_argument("--figure", choices=("products", "booking", "weeks"), default="products")
    parser.add_argument("--store", type=int, default=0, help="people in the store (booking)")
    parser.add_argument("--workers", type=int, default=1, help="server workers (weeks)")
    args = parser.parse_args()
    if args.figure == "booking":
        return booking(args)
    if args.figure == "weeks":
        return weeks(args)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is needed (apt-get install wrk)")
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    print(
        f"| database | build | /healthz req/s | /crm/products req/s | products / healthz "
        f"| /crm/people/match req/s | match / healthz "
        f"| server CPU µs a request, healthz / products | CPU ratio "
        f"(medians of {args.rounds} interleaved rounds, {args.seconds:g} s each, c={CONCURRENCY}) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for kind in kinds:
        builds = [Build(label, env) for label, env in _builds(args)]
        measure(kind, builds, args.rounds, args.seconds, args.pg_url)
        for build in builds:
            print(
                f"| {kind} | {build.label} | {statistics.median(build.healthz):,.0f} | "
                f"{statistics.median(build.products):,.0f} | "
                f"{statistics.median(build.ratios(build.products)):.3f} | "
                f"{statistics.median(build.match):,.0f} | "
                f"{statistics.median(build.ratios(build.match)):.3f} | "
                f"{statistics.median(build.healthz_cpu):,.0f} / "
                f"{statistics.median(build.products_cpu):,.0f} | "
                f"{statistics.median(build.cpu_ratios()):.3f} |"
            )
    return 0


def _builds(args: argparse.Namespace) -> list[tuple[str, dict[str, str]]]:
    """The builds to compare, labelled: this one, ``--previous``, each ``--variant``."""
    builds = [("this", dict(os.environ))]
    if args.previous is not None:
        builds.append(("previous", previous_build_env(args.previous)))
    for variant in args.variant:
        name, _, value = variant.partition("=")
        builds.append((f"this, {name}={value}", {**os.environ, name: value}))
    return builds


def booking(args: argparse.Namespace) -> int:
    """The 200-item booking against its replayed writes, and what it writes."""
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    for kind in kinds:
        builds = [booking_floor.Build(label, env) for label, env in _builds(args)]
        booking_floor.measure(kind, builds, args.rounds, args.store, args.pg_url)
        booking_floor.report(kind, builds, args.rounds)
    return 0


def weeks(args: argparse.Namespace) -> int:
    """Bookings of one site and week against bookings of different weeks."""
    kinds = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    weeks_floor.header(args.rounds, args.seconds, args.workers)
    for kind in kinds:
        builds = [weeks_floor.Build(label, env) for label, env in _builds(args)]
        weeks_floor.measure(kind, builds, args.rounds, args.seconds, args.workers, args.pg_url)
        weeks_floor.report(kind, builds, args.workers)
    return 0


if __name__ == "__main__":
    sys.exit(main())
