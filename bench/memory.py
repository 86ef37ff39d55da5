"""A worker's memory over many distinct requests (issue 23, "Bounded memory").

Run from the repository root (``make bench NAME=memory``):

    .venv/bin/python bench/memory.py                                  # 100k requests
    .venv/bin/python bench/memory.py --requests 30000 --warm 10000
    .venv/bin/python bench/memory.py --previous ../prev               # side by side

A store of ``--people`` generated contacts is imported into a fresh SQLite database per
build; one ``ridercrm serve`` worker per build answers ``--requests`` requests from 4
client threads: nine in ten ``POST /crm/people/match`` with a new, never-repeated
identity (a stored rider with a slip, or a stranger), one in ten ``GET /crm/products``.
Builds take turns in blocks of 1,000 requests, so a noisy neighbour slows both alike.
The resident memory of the server (its process and children, ``/proc``; anonymous and
file-backed apart) is read after
start, after ``--warm`` requests and at the end; the figure is the growth from the warm
mark to the end, which the issue bounds at 5 MiB for 20k -> 100k requests. The server's
CPU time (user + system, ``/proc/<pid>/stat``) per request is printed beside it, so a
smaller cache's cost in CPU shows in the same run; every 10,000 requests each build's
memory and CPU so far go to stderr.

``--previous DIR`` runs the ridercrm of ``DIR/src`` (``git worktree add DIR <commit>``)
with this checkout's installed packages. ``--variant NAME=VALUE`` adds this build with
one environment variable set (repeatable), e.g. ``MALLOC_ARENA_MAX=2``.
"""

from __future__ import annotations

import argparse
import csv
import os
import random
import shutil
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testkit.serve import free_port, run_cli, running_server

from bench import match_perf
from bench.harness import fresh_database

BLOCK = 1000
THREADS = 4


@dataclass
class Build:
    label: str
    env: dict[str, str]
    base: str = ""
    key: str = ""
    pid: int = 0
    rss: dict[str, tuple[float, float]] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    errors: int = 0


def _process_tree(pid: int) -> Iterator[int]:
    """``pid`` and its descendants still running."""
    todo = [pid]
    while todo:
        each = todo.pop()
        try:
            children = Path(f"/proc/{each}/task/{each}/children").read_text().split()
        except OSError:
            continue
        yield each
        todo.extend(int(child) for child in children)


def rss_mib(pid: int) -> tuple[float, float]:
    """Resident memory of ``pid`` and its descendants, MiB: (anonymous, file-backed).

    File-backed pages are mostly SQLite's memory-mapped reads of the database file
    (``RIDERCRM_SQLITE_MMAP_MB``): shared with the page cache and given back under
    pressure. Anonymous pages are the process's own heap.
    """
    anon, files = 0, 0
    for each in _process_tree(pid):
        try:
            status = Path(f"/proc/{each}/status").read_text()
        except OSError:
            continue
        for line in status.splitlines():
            if line.startswith("RssAnon"):
                anon += int(line.split()[1])
            elif line.startswith(("RssFile", "RssShmem")):
                files += int(line.split()[1])
    return anon / 1024, files / 1024


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) that ``pid`` and its descendants have used, seconds."""
    ticks = 0
    for each in _process_tree(pid):
        try:
            stat = Path(f"/proc/{each}/stat").read_text()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        ticks += int(fields[11]) + int(fields[12])  # utime, stime
    return ticks / os.sysconf("SC_CLK_TCK")


def load_store(env: dict[str, str], directory: Path, size: int, seed: int) -> list[dict[str, str]]:
    """Import ``size`` generated contacts with the build's own ``ridercrm``; return 2,000."""
    path = directory / "people.csv"
    kept = []
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(match_perf.CSV_FIELDS)
        for index, person in enumerate(match_perf.PeopleGenerator(seed).people(size)):
            writer.writerow([person[name] for name in match_perf.CSV_FIELDS])
            if index % max(1, size // 2000) == 0:
                kept.append(person)
    run_cli(["import", "contacts", str(path)], env, timeout=1800)
    path.unlink()
    return kept


def requests(seed: int, stored: list[dict[str, str]], count: int) -> Iterator[tuple[str, Any]]:
    """``count`` requests, each match with an identity not sent before."""
    rng = random.Random(seed)
    strangers = match_perf.PeopleGenerator(seed + 1).people(count)
    for index in range(count):
        if index % 10 == 9:
            yield "GET", None
            continue
        if rng.random() < 0.5:
            data = match_perf._request_data(rng, stored[index % len(stored)])
            data["first_name"] = match_perf._typo(rng, data["first_name"]) + f"{index:x}"[-2:]
            data["email"] = f"m{index}@example.net"
        else:
            data = match_perf._request_data(rng, next(strangers))
        yield "POST", {"person_data": data}


def send(client: httpx.Client, work: tuple[str, Any]) -> bool:
    """One request; False when it failed (a non-200 answer or no answer in 60 s)."""
    method, body = work
    try:
        if method == "GET":
            answer = client.get("/crm/products")
        else:
            answer = client.post(match_perf.MATCH_PATH, json=body)
    except httpx.HTTPError as exc:
        print(f"request failed: {exc!r}", file=sys.stderr, flush=True)
        return False
    return answer.status_code == 200


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--people", type=int, default=20_000)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--warm", type=int, default=20_000)
    parser.add_argument("--previous", type=Path, help="a checkout of the previous commit")
    parser.add_argument("--seed", type=int, default=2311)
    parser.add_argument("--logs", type=Path, help="copy the servers' logs here at the end")
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="also measure this build with an environment variable set",
    )
    args = parser.parse_args()
    builds = [Build("this", dict(os.environ))]
    if args.previous is not None:
        src = str((args.previous / "src").resolve())
        builds.append(Build("previous", {**os.environ, "PYTHONPATH": src}))
    for variant in args.variant:
        name, _, value = variant.partition("=")
        builds.append(Build(f"this, {name}={value}", {**os.environ, name: value}))
    with tempfile.TemporaryDirectory(prefix="ridercrm-memory-") as tmp, ExitStack() as stack:
        directory = Path(tmp)
        clients: dict[str, httpx.Client] = {}
        stored: list[dict[str, str]] = []
        for build in builds:
            url = stack.enter_context(
                fresh_database("sqlite", f"memory_build{len(clients)}", directory)
            )
            env = {**build.env, "RIDERCRM_DATABASE_URL": url, "RIDERCRM_LOG_LEVEL": "WARNING"}
            run_cli(["db", "upgrade"], env, timeout=300)
            place = directory / f"build{len(clients)}"
            place.mkdir()
            stored = load_store(env, place, args.people, args.seed)
            out = run_cli(
                ["keys", "create", "--name", "memory", "--scope", "match", "--scope", "products"],
                env,
                timeout=60,
            )
            build.key = out.strip().splitlines()[-1]
            log = directory / f"build{len(clients)}.log"
            build.base, build.pid = stack.enter_context(running_server(env, free_port(), log))
            build.rss["start"] = rss_mib(build.pid)
            build.cpu["start"] = cpu_seconds(build.pid)
            clients[build.label] = stack.enter_context(
                httpx.Client(
                    base_url=build.base,
                    headers={"Authorization": f"Bearer {build.key}"},
                    timeout=60,
                    limits=httpx.Limits(max_connections=THREADS),
                )
            )
        work = list(requests(args.seed, stored, args.requests))
        with ThreadPoolExecutor(THREADS) as pool:
            for start in range(0, len(work), BLOCK):
                for build in builds:
                    client = clients[build.label]
                    answers = pool.map(lambda w, c=client: send(c, w), work[start : start + BLOCK])
                    build.errors += sum(1 for ok in answers if not ok)
                    done = start + BLOCK
                    if done == args.warm or done >= len(work):
                        mark = "warm" if done == args.warm else "end"
                        build.rss[mark] = rss_mib(build.pid)
                        build.cpu[mark] = cpu_seconds(build.pid)
                done = min(start + BLOCK, len(work))
                if done % 10_000 == 0:
                    for build in builds:
                        anon, _ = rss_mib(build.pid)
                        print(
                            f"{done} requests: {build.label}: anonymous {anon:.1f} MiB, "
                            f"CPU {cpu_seconds(build.pid):.1f} s, failed {build.errors}",
                            file=sys.stderr,
                            flush=True,
                        )
                else:
                    print(f"{done} requests", file=sys.stderr, flush=True)
        if args.logs is not None:
            args.logs.mkdir(parents=True, exist_ok=True)
            for log in directory.glob("*.log"):
                shutil.copy(log, args.logs / log.name)
    print(
        f"| build | memory | after start | after {args.warm:,} requests "
        f"| after {args.requests:,} | growth {args.warm // 1000}k -> {args.requests // 1000}k "
        "| failed requests |"
    )
    print("|---|---|---|---|---|---|---|")
    for build in builds:
        start, warm, end = build.rss["start"], build.rss["warm"], build.rss["end"]
        for index, kind in enumerate(("anonymous", "file-backed (mmap)")):
            print(
                f"| {build.label} | {kind} | {start[index]:.1f} MiB | {warm[index]:.1f} MiB "
                f"| {end[index]:.1f} MiB | {end[index] - warm[index]:+.1f} MiB | {build.errors} |"
            )
    print()
    print(
        f"| build | server CPU per request, first {args.warm:,} "
        f"| server CPU per request, {args.warm:,} -> {args.requests:,} |"
    )
    print("|---|---|---|")
    for build in builds:
        first = (build.cpu["warm"] - build.cpu["start"]) / args.warm
        rest = (build.cpu["end"] - build.cpu["warm"]) / (len(work) - args.warm)
        print(f"| {build.label} | {first * 1000:.2f} ms | {rest * 1000:.2f} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
