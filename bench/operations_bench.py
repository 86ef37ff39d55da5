"""Benchmark operations 1 and 2 against the real server on SQLite.

Run from the repository root:

    .venv/bin/python bench/operations_bench.py            # print the results
    .venv/bin/python bench/operations_bench.py --write    # also update bench/README.md

Each run makes a fresh SQLite database in a temporary directory (outside the
repository), creates an admin key with the `ridercrm` command, starts
`ridercrm serve` (one worker) on a free port of 127.0.0.1, creates products and
people through the admin API and then measures, with one persistent httpx client:

  a. 200-item new-booking requests to POST /crm/people/rider_courses
     (half the people leads, so every request converts 100 leads);
  b. single-item status updates (booked <-> cancelled on existing courses);
  c. 200-item POST /crm/modify requests (200 distinct people, 3 fields each);
  d. GET /crm/products (five products) as the per-request baseline.

Every response is checked (status 200, every item delivered); any failure aborts
the benchmark. The whole measurement runs twice (two fresh servers and databases)
because the machine may be shared and noisy; both runs are reported side by side.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=operations_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from testkit import serve  # noqa: E402
from testkit.factories import new_booking as booking_item  # noqa: E402
from testkit.serve import BenchError, free_port, running_server  # noqa: E402

from bench import harness  # noqa: E402
from bench.report import code_version, cpu_model, write_section  # noqa: E402

README = ROOT / "bench" / "README.md"
SECTION = "## Operations 1 and 2"
COMMAND = ".venv/bin/python bench/operations_bench.py --write"

BOOKING_PATH = "/crm/people/rider_courses"
MODIFY_PATH = "/crm/modify"
BASELINE_PATH = "/crm/products"
ITEMS = 200
PRODUCTS = 5
CONTACTS = 200
STATUS_ASSETS = 50
TARGET_MS = 300.0
REQUEST_TIMEOUT_S = 60.0
COMMAND_TIMEOUT_S = 120.0
JSON_HEADERS = {"Content-Type": "application/json"}


# --- statistics -------------------------------------------------------------


@dataclass
class Timing:
    """Latencies of one measurement, in seconds, and the wall time of its loop."""

    name: str
    latencies: list[float] = field(default_factory=list)
    wall: float = 0.0
    cpu: float = 0.0  # server CPU seconds spent during the timed requests

    @property
    def cpu_ms(self) -> float:
        """Mean server CPU time per request in ms (clock-tick resolution, summed)."""
        return self.cpu / len(self.latencies) * 1000 if self.latencies else 0.0

    def ms(self, q: float) -> float:
        """The q-quantile (0..1) in milliseconds, linear interpolation between samples."""
        values = sorted(self.latencies)
        if len(values) == 1:
            return values[0] * 1000
        pos = q * (len(values) - 1)
        low = int(pos)
        high = min(low + 1, len(values) - 1)
        return (values[low] + (values[high] - values[low]) * (pos - low)) * 1000

    @property
    def median(self) -> float:
        return statistics.median(self.latencies) * 1000

    @property
    def rps(self) -> float:
        return len(self.latencies) / self.wall if self.wall else 0.0


# --- the ridercrm command (the server: testkit/serve.py) ------------------


def run_cli(args: list[str], env: dict[str, str]) -> str:
    return serve.run_cli(args, env, timeout=COMMAND_TIMEOUT_S)


# --- requests ---------------------------------------------------------------


def expect(response: httpx.Response, status: int, what: str) -> Any:
    if response.status_code != status:
        raise BenchError(f"{what}: HTTP {response.status_code}: {response.text[:500]}")
    return response.json()


def create(client: httpx.Client, path: str, body: dict[str, Any]) -> str:
    return str(expect(client.post(path, json=body), 201, f"POST {path}")["id"])


def person_body(kind: str, n: int) -> dict[str, Any]:
    return {
        "first_name": f"Bench{kind.capitalize()}",
        "last_name": f"Rider{n:05d}",
        "date_of_birth": "1999-04-12",
        "email": f"{kind}{n}@example.com",
        "postcode": "3064",
        "mobile_phone": f"04{n:08d}",
        "drivers_license": f"L{n:07d}",
        "license_type": "CYL",
        "street": "12 Main St",
        "city": "Craigieburn",
        "state": "VIC",
        "country": "Australia",
    }


def new_booking(person_id: str, product_id: str, booking_number: str) -> dict[str, Any]:
    """A complete new-booking item: the test suite's sample of the interface's request."""
    return booking_item(person_id, product_id, booking_number=booking_number)


@dataclass
class World:
    """What the benchmark created through the admin API."""

    products: list[str]
    contacts: list[str]
    leads_made: int = 0
    bookings_made: int = 0
    assets: list[tuple[str, str]] = field(default_factory=list)  # (asset_id, contact_id)


def setup(client: httpx.Client) -> World:
    products = [
        create(
            client,
            "/admin/products",
            {"name": f"Bench course {n}", "code": f"BENCH-{n}", "price": "249.00"},
        )
        for n in range(PRODUCTS)
    ]
    contacts = [
        create(client, "/admin/contacts", person_body("contact", n)) for n in range(CONTACTS)
    ]
    return World(products=products, contacts=contacts)


@dataclass
class Prepared:
    """One request ready to send (built untimed) and the check of its answer."""

    method: str
    path: str
    check: Callable[[Any], None]
    body: dict[str, Any] | None = None


def booking_request(client: httpx.Client, world: World, rep: int) -> Prepared:
    """One 200-item new-booking request: 100 fresh leads and 100 existing contacts."""
    leads = []
    for _ in range(ITEMS // 2):
        leads.append(create(client, "/admin/leads", person_body("lead", world.leads_made)))
        world.leads_made += 1
    items = []
    for i in range(ITEMS):
        if i % 2 == 0:
            person = leads[i // 2]
        else:
            person = world.contacts[(rep * (ITEMS // 2) + i // 2) % len(world.contacts)]
        product = world.products[i % len(world.products)]
        items.append(new_booking(person, product, f"BENCH-{world.bookings_made:07d}"))
        world.bookings_made += 1

    def check(body: Any) -> None:
        details = body.get("details")
        if not isinstance(details, list) or len(details) != ITEMS:
            raise BenchError(f"bookings: expected {ITEMS} details, got {str(details)[:300]}")
        for i, (item, entry) in enumerate(zip(items, details, strict=True)):
            if entry.get("delivery") != "true" or not entry.get("asset_id"):
                raise BenchError(f"bookings: item {i} not delivered: {entry}")
            is_lead = i % 2 == 0
            converted = entry.get("contact_id") != item["person_id"]
            if is_lead != converted or ("converted" in entry.get("receipt", "")) != is_lead:
                raise BenchError(f"bookings: item {i} lead conversion not as expected: {entry}")
            if len(world.assets) < STATUS_ASSETS:
                world.assets.append((entry["asset_id"], entry["contact_id"]))

    return Prepared("POST", BOOKING_PATH, check, {"people_product": items})


def status_request(_client: httpx.Client, world: World, k: int) -> Prepared:
    """One single-item status update; each asset alternates booked -> cancelled -> booked."""
    asset_id, contact_id = world.assets[k % len(world.assets)]
    cancel = (k // len(world.assets)) % 2 == 0
    before, after = ("booked", "cancelled") if cancel else ("cancelled", "booked")
    item = {
        "person_id": contact_id,
        "asset_id": asset_id,
        "course_status": after,
        "course_datetime": "2026-12-05 08:30:00",
        "course_date_end": "2026-12-05 16:30:00",
    }
    expected = f"Course status changed from {before} to {after}."

    def check(body: Any) -> None:
        details = body.get("details")
        if (
            not isinstance(details, list)
            or len(details) != 1
            or details[0].get("delivery") != "true"
            or details[0].get("receipt") != expected
        ):
            raise BenchError(f"status update {k}: expected {expected!r}, got {body}")

    return Prepared("POST", BOOKING_PATH, check, {"people_product": [item]})


def modify_request(_client: httpx.Client, world: World, rep: int) -> Prepared:
    """One 200-item modify request: three fields of 200 distinct people, new values each time."""
    items = [
        {
            "ID": person,
            "city": f"Bench City {rep}",
            "postcode": 3000 + (rep * 7 + i) % 1000,
            "email": f"p{i}.r{rep}@example.com",
        }
        for i, person in enumerate(world.contacts[:ITEMS])
    ]

    def check(body: Any) -> None:
        details = body.get("details")
        if (
            body.get("status") is not True
            or body.get("items_failed") != 0
            or not isinstance(details, list)
            or len(details) != len(items)
            or any(d.get("status") is not True or d.get("fields") != 3 for d in details)
        ):
            raise BenchError(f"modify {rep}: not every item modified: {str(body)[:500]}")

    return Prepared("POST", MODIFY_PATH, check, {"people_data": items})


def baseline_request(_client: httpx.Client, world: World, _k: int) -> Prepared:
    def check(body: Any) -> None:
        if not isinstance(body, list) or len(body) != len(world.products):
            raise BenchError(f"GET {BASELINE_PATH}: expected {len(world.products)} products")

    return Prepared("GET", BASELINE_PATH, check)


Step = Callable[[httpx.Client, World, int], Prepared]


def server_cpu(pid: int) -> Callable[[], float | None]:
    """A probe of the server process's CPU time in seconds (user + system), where /proc exists."""
    stat = Path(f"/proc/{pid}/stat")
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100

    def probe() -> float | None:
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return None
        return (int(fields[11]) + int(fields[12])) / tick

    return probe


def measure(
    client: httpx.Client,
    world: World,
    cpu: Callable[[], float | None],
    name: str,
    step: Step,
    count: int,
    warmup: int,
) -> Timing:
    """``warmup`` untimed requests, then ``count`` timed ones, strictly one after another.

    Each request is built first (untimed: e.g. the fresh leads of a booking request),
    then only its round trip is timed; its answer is checked after the clock stops.
    """
    timing = Timing(name)
    started = 0.0
    for k in range(warmup + count):
        if k == warmup:
            started = time.perf_counter()
        prepared = step(client, world, k)
        content = None if prepared.body is None else json.dumps(prepared.body).encode()
        headers = JSON_HEADERS if content is not None else None
        cpu_before = cpu()
        start = time.perf_counter()
        response = client.request(prepared.method, prepared.path, content=content, headers=headers)
        elapsed = time.perf_counter() - start
        cpu_after = cpu()
        prepared.check(expect(response, 200, f"{prepared.method} {prepared.path}"))
        if k >= warmup:
            timing.latencies.append(elapsed)
            if cpu_before is not None and cpu_after is not None:
                timing.cpu += cpu_after - cpu_before
    timing.wall = time.perf_counter() - started
    return timing


@dataclass
class RunResult:
    baseline: Timing
    bookings: Timing
    status: Timing
    modify: Timing
    load: tuple[float, float] = (0.0, 0.0)  # 1-minute load average before and after

    def all(self) -> list[Timing]:
        return [self.bookings, self.status, self.modify, self.baseline]


def load_average() -> float:
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0


def one_run(args: argparse.Namespace, number: int) -> RunResult:
    with tempfile.TemporaryDirectory(prefix="ridercrm-bench-") as tmp:
        env = dict(os.environ)
        env["RIDERCRM_DATABASE_URL"] = f"sqlite:///{Path(tmp) / 'bench.db'}"
        env["RIDERCRM_LOG_LEVEL"] = "WARNING"
        run_cli(["db", "upgrade"], env)
        key = run_cli(["keys", "create", "--name", "bench", "--scope", "admin"], env)
        key = key.strip().splitlines()[-1].strip()
        port = free_port()
        print(f"run {number}: server on 127.0.0.1:{port}", file=sys.stderr)
        with (
            running_server(env, port, Path(tmp) / "server.log") as (base_url, pid),
            httpx.Client(
                base_url=base_url,
                headers={"Authorization": f"Bearer {key}"},
                timeout=REQUEST_TIMEOUT_S,
                trust_env=False,
            ) as client,
        ):
            world = setup(client)
            load_before = load_average()
            w, cpu = args.warmup, server_cpu(pid)
            baseline = measure(
                client, world, cpu, "baseline", baseline_request, args.requests, 3 * w
            )
            bookings = measure(client, world, cpu, "bookings", booking_request, args.reps, w)
            status = measure(client, world, cpu, "status", status_request, args.requests, 3 * w)
            modify = measure(client, world, cpu, "modify", modify_request, args.reps, w)
            return RunResult(
                baseline=baseline,
                bookings=bookings,
                status=status,
                modify=modify,
                load=(load_before, load_average()),
            )


# --- report -----------------------------------------------------------------

LABELS = {
    "bookings": "(a) 200-item new bookings, `POST /crm/people/rider_courses`",
    "status": "(b) 1-item status update, `POST /crm/people/rider_courses`",
    "modify": "(c) 200-item `POST /crm/modify`",
    "baseline": "(d) baseline `GET /crm/products` (5 products)",
}
TARGETS = {"bookings": TARGET_MS, "modify": TARGET_MS}
SHORT = {"bookings": "(a) 200-item new bookings", "modify": "(c) 200-item modify"}
SEQUENTIAL = ("status", "baseline")  # req/s is meaningful only for these


def f1(value: float) -> str:
    return f"{value:.1f}"


def report(runs: list[RunResult]) -> str:
    names = [t.name for t in runs[0].all()]
    run_heads = " | ".join(f"run {n + 1} median (ms)" for n in range(len(runs)))
    ratio_heads = " | ".join(f"run {n + 1} ratio to (d)" for n in range(len(runs)))
    lines = [
        f"| measurement | n | target | {run_heads} | {ratio_heads} |",
        "|---" * (3 + 2 * len(runs)) + "|",
    ]
    for name in names:
        timings = [getattr(run, name) for run in runs]
        target = f"median < {TARGETS[name]:g} ms" if name in TARGETS else ""
        medians = " | ".join(f1(t.median) for t in timings)
        ratios = " | ".join(
            f"{t.median / run.baseline.median:.1f}" for t, run in zip(timings, runs, strict=True)
        )
        lines.append(
            f"| {LABELS[name]} | {len(timings[0].latencies)} | {target} | {medians} | {ratios} |"
        )
    lines += [
        "",
        "| run | measurement | n | median | p90 | p99 | min | max | req/s | server CPU/req |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for number, run in enumerate(runs, start=1):
        for t in run.all():
            lines.append(
                f"| {number} | {t.name} | {len(t.latencies)} | {f1(t.median)} | {f1(t.ms(0.9))} "
                f"| {f1(t.ms(0.99))} | {f1(t.ms(0))} | {f1(t.ms(1))} "
                f"| {f'{t.rps:.0f}' if t.name in SEQUENTIAL else '—'} | {f1(t.cpu_ms)} |"
            )
    lines.append("")
    loads = "; ".join(
        f"run {n}: {run.load[0]:.1f} -> {run.load[1]:.1f}" for n, run in enumerate(runs, start=1)
    )
    lines += [
        "Times in ms, measured by the client (request sent until response read). req/s: timed"
        " requests over the wall time of the sequential loop, client included. Server CPU/req:"
        " user+system CPU time of the server process during the timed requests, per request"
        " (from /proc, clock-tick resolution, summed over the run); it is much less sensitive to"
        " other load on the machine than the latencies.",
        f"1-minute load average during the measurements: {loads}.",
    ]
    lines.append("")
    for name, target in TARGETS.items():
        medians = [getattr(run, name).median for run in runs]
        figures = ", ".join(f"run {n + 1}: {f1(m)} ms" for n, m in enumerate(medians))
        cpus = [getattr(run, name).cpu_ms for run in runs]
        cpu_figures = " / ".join(f1(c) for c in cpus)
        if all(m < target for m in medians):
            verdict = f"**met** ({figures})"
        elif all(c >= target for c in cpus):
            verdict = (
                f"**NOT met** ({figures}); the server's own CPU time per request"
                f" ({cpu_figures} ms) is itself at or above the target, so the miss is not"
                " only other load on the machine"
            )
        else:
            verdict = (
                f"**NOT met** ({figures}); the server's CPU time per request ({cpu_figures} ms)"
                " is under the target, so at least part of the miss is other load on the machine"
            )
        lines.append(f"- {SHORT[name]} median under {target:g} ms: {verdict}.")
    return "\n".join(lines)


def section(args: argparse.Namespace, runs: list[RunResult], table: str, code: str) -> str:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d")
    return "\n".join(
        [
            SECTION,
            "",
            "`bench/operations_bench.py` starts the real server (`ridercrm serve`, one worker,",
            "`RIDERCRM_LOG_LEVEL=WARNING`) on a fresh SQLite database in a temporary directory,",
            "creates products and people through the admin API, and measures from the same",
            "machine with one persistent httpx client (keep-alive), one request at a time.",
            "Every response is checked (HTTP 200, every item delivered); a failure aborts the run.",
            "",
            f"- (a) {args.reps} requests of 200 new bookings, each with fresh booking numbers;",
            "  even items are 100 fresh leads (each converted to a contact), odd items existing",
            f"  contacts; {PRODUCTS} products. The 100 leads are created (untimed) before each request.",
            f"- (b) {args.requests} single-item requests cancelling or re-booking one of"
            f" {STATUS_ASSETS} booked courses",
            "  (each request changes the status, so a status-history row is written every time).",
            f"- (c) {args.reps} requests modifying city, postcode and e-mail of the same 200 contacts,",
            "  with new values each time.",
            f"- (d) {args.requests} `GET /crm/products` requests: authentication, audit, one query.",
            f"- Untimed warm-up first: {args.warmup} requests for (a) and (c), {3 * args.warmup}"
            " for (b) and (d).",
            f"- The whole measurement ran {len(runs)} times, each on a fresh server and database.",
            "",
            f"Machine: {cpus} CPUs (nproc), {cpu_model()}, Python {platform.python_version()},"
            f" {platform.system()}; load average at the end {load} (shared machine).",
            f"Date: {today}. Code: {code}. Command: `{COMMAND}`",
            "",
            table,
            "",
        ]
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help=f"replace '{SECTION}' in README")
    parser.add_argument("--runs", type=int, default=2, choices=range(1, 6), metavar="1..5")
    parser.add_argument("--reps", type=int, default=30, help="timed 200-item requests (a), (c)")
    parser.add_argument("--requests", type=int, default=300, help="timed requests for (b), (d)")
    parser.add_argument("--warmup", type=int, default=3, help="untimed requests before (a), (c)")
    harness.add_previous(parser)
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.operations_bench")) is not None:
        return status
    if not 1 <= args.reps <= 1000 or not 1 <= args.requests <= 100_000:
        parser.error("--reps must be 1..1000 and --requests 1..100000")
    if not 0 <= args.warmup <= 100:
        parser.error("--warmup must be 0..100")
    code = code_version()
    try:
        runs = [one_run(args, n + 1) for n in range(args.runs)]
    except BenchError as exc:
        print(f"benchmark aborted: {exc}", file=sys.stderr)
        return 1
    table = report(runs)
    print(f"code: {code}")
    print(table)
    if args.write:
        write_section(section(args, runs, table, code))
        print(f"\nwrote section '{SECTION}' of bench/README.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
