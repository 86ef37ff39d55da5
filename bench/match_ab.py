"""Matching latency side by side: a previous commit's matcher and this checkout's, one process.

The machine these benchmarks run on is shared, so two runs at different times measure
different loads. This script measures both matchers in ONE process on the same stores
and queries (``bench/match_perf.py``'s, built or reused with ``--store-dir``),
alternating blocks of 50 queries between them, so they see the same noise:

    .venv/bin/python bench/match_ab.py --previous f22b228 --sizes 10000,1000000 \\
        --queries 1000 --store-dir /tmp/match-stores

The previous commit's ``src/ridercrm`` is extracted with ``git archive`` into a
temporary directory as the package ``ridercrm_prev`` (its imports rewritten), so its
``match_identity`` runs with its own scoring, keys and models against the same
database; each answer of the two is compared: the person found and the decision, and
apart from them the explanation (every explained candidate's score, rule, levels and
weights, and which candidates are listed).
Reports wall-clock and CPU-time (this thread's) median and p99 per matcher and store.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import match_perf  # noqa: E402
from bench.report import machine  # noqa: E402
from ridercrm.db import build_engine, session_factory, session_scope  # noqa: E402
from ridercrm.matching.service import match_identity  # noqa: E402

BLOCK = 50
PACKAGE = "ridercrm_prev"


def previous_matcher(commit: str, directory: Path) -> Callable[..., Any]:
    """The ``match_identity`` of ``commit``, imported as ``ridercrm_prev``."""
    archive = subprocess.run(
        ["git", "archive", commit, "src/ridercrm"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(directory, filter="data")
    package = directory / PACKAGE
    (directory / "src" / "ridercrm").rename(package)
    pattern = re.compile(r"\bridercrm(?=[.\s])")
    for path in package.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        path.write_text(pattern.sub(PACKAGE, text), encoding="utf-8")
    sys.path.insert(0, str(directory))
    service = importlib.import_module(f"{PACKAGE}.matching.service")
    return service.match_identity  # type: ignore[no-any-return]


@dataclass
class Times:
    wall: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)

    def line(self) -> str:
        p99 = match_perf.percentile
        return (
            f"median {statistics.median(self.wall):.2f} / p99 {p99(self.wall, 0.99):.2f} ms"
            f" (CPU median {statistics.median(self.cpu):.2f} / p99 {p99(self.cpu, 0.99):.2f})"
        )


def one(
    matcher: Callable[..., Any], sessions: Any, query: match_perf.Query
) -> tuple[float, float, Any]:
    identity = query.identity()
    cpu = time.thread_time()
    started = time.perf_counter()
    with session_scope(sessions) as session:
        result = matcher(session, query=identity, assets=[], leads_only=False)
    wall = (time.perf_counter() - started) * 1000
    cpu = (time.thread_time() - cpu) * 1000
    return wall, cpu, result.explanation()  # the person, the decision, the explained verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--previous", required=True, help="the commit to compare with")
    parser.add_argument("--sizes", default="10000,1000000")
    parser.add_argument("--queries", type=int, default=1000)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--seed", type=int, default=20261120)
    parser.add_argument("--store-dir", required=True, help="as bench/match_perf.py's")
    args = parser.parse_args()
    perf_args = match_perf.build_parser().parse_args(
        ["--queries", str(args.queries), "--warmup", str(args.warmup), "--seed", str(args.seed),
         "--store-dir", args.store_dir]
    )  # fmt: skip
    sizes = sorted(int(size) for size in args.sizes.split(","))
    info = machine()
    print(f"{info}; started {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC", flush=True)
    print(f"load average at the start: {os.getloadavg()}", flush=True)
    stores = [
        match_perf.build_store(size, Path(args.store_dir), args.seed, perf_args) for size in sizes
    ]
    with tempfile.TemporaryDirectory(prefix="ridercrm-prev-") as tmp:
        matchers = {"previous": previous_matcher(args.previous, Path(tmp)), "new": match_identity}
        times = {(name, store.size): Times() for name in matchers for store in stores}
        differ: dict[int, int] = dict.fromkeys(sizes, 0)  # the person or the decision
        explained: dict[int, int] = dict.fromkeys(sizes, 0)  # anything in the explanation
        engines = {store.size: build_engine(match_perf.settings_for(store.url)) for store in stores}
        sessions = {size: session_factory(engine) for size, engine in engines.items()}
        try:
            for store in stores:
                for query in store.queries[: args.warmup]:
                    for matcher in matchers.values():
                        one(matcher, sessions[store.size], query)
            for start in range(args.warmup, args.warmup + args.queries, BLOCK):
                # Alternate which matcher goes first, block by block.
                order = list(matchers.items())
                if (start // BLOCK) % 2:
                    order.reverse()
                for store in stores:
                    block = store.queries[start : start + BLOCK]
                    answers: dict[str, list[Any]] = {}
                    for name, matcher in order:
                        answers[name] = []
                        for query in block:
                            wall, cpu, answer = one(matcher, sessions[store.size], query)
                            times[(name, store.size)].wall.append(wall)
                            times[(name, store.size)].cpu.append(cpu)
                            answers[name].append(answer)
                    for a, b in zip(answers["previous"], answers["new"], strict=True):
                        differ[store.size] += (a["id"], a["decision"]) != (b["id"], b["decision"])
                        explained[store.size] += a != b
        finally:
            for engine in engines.values():
                engine.dispose()
    print(f"load average at the end: {os.getloadavg()}")
    for store in stores:
        for name in matchers:
            print(f"{store.size:>9,} {name:>8}: {times[(name, store.size)].line()}")
        print(f"{store.size:>9,} answers that differ (person or decision): {differ[store.size]}")
        print(
            f"{store.size:>9,} explanations that differ (any candidate's score, rule, levels,"
            f" weights, or which are listed): {explained[store.size]}"
        )
    if len(stores) > 1:
        for name in matchers:
            small, large = times[(name, stores[0].size)], times[(name, stores[-1].size)]
            print(
                f"{name}: median {stores[-1].size:,} / {stores[0].size:,} ="
                f" {statistics.median(large.wall) / statistics.median(small.wall):.2f}x wall,"
                f" {statistics.median(large.cpu) / statistics.median(small.cpu):.2f}x CPU"
            )


if __name__ == "__main__":
    main()
