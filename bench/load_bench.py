"""Sustained mixed load, match-heavy as a booking website sends it, on SQLite and PostgreSQL.

Run from the repository root:

    .venv/bin/python bench/load_bench.py                 # 60 s per database, print
    .venv/bin/python bench/load_bench.py --write         # also replace "## Load" in bench/README.md
    .venv/bin/python bench/load_bench.py --short         # CI form: 10 s per database

For each database (a fresh SQLite file in a temporary directory; a fresh PostgreSQL
database ``ridercrm_load_<pid>`` next to $RIDERCRM_TEST_POSTGRES_URL, dropped at the
end): an admin key and a store of generated people (``match_perf.PeopleGenerator``,
loaded with ``ridercrm import contacts``), then ``ridercrm serve --workers 2`` with the
per-key rate limit off (``RIDERCRM_RATE_LIMIT=off``), products, contacts and leads for
the write side (disjoint from the people the matches look for) and booked courses for
the status updates, made through the admin API and operation 1.

The load is wrk (``-tN -cN``: one connection per wrk thread, so each thread's
requests and answers alternate and the Lua script times each request itself with
``clock_gettime``). Every thread cycles a fixed pattern of 20 slots: 14 matches
(``POST /crm/people/match``, the ``match_perf`` query mix: exact, typos, swapped
day and month, changed e-mail, people not stored), 3 new bookings (a fresh booking
number each, for a contact or a lead, which converts on its first booking), 2 status
updates (booked <-> cancelled on a booked course) and 1 modify (one person, three
fields): 70 / 15 / 10 / 5 %. An untimed warm-up run comes first.

Errors (must be 0): transport errors and timeouts, non-2xx answers, and answers whose
receipt says failure where the request was meant to succeed (an item not delivered, a
modify with failed items, an exact match not found, or a stranger found).
Only 127.0.0.1 is used; every server runs in try/finally; every wait is bounded.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=load_bench ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import harness, match_perf, report  # noqa: E402
from bench.crash_safety import person_body  # noqa: E402
from bench.operations_bench import new_booking  # noqa: E402

README = ROOT / "bench" / "README.md"
SECTION = "## Load"
BOOK_PATH = "/crm/people/rider_courses"
MODIFY_PATH = "/crm/modify"
MATCH_PATH = "/crm/people/match"
OPS = {"match": "matches", "book": "new bookings", "status": "status updates", "modify": "modifies"}
# 20 slots: 14 matches, 3 new bookings, 2 status updates, 1 modify.
PATTERN = "mmmbmmsmmmbmmsmmbmdm"
SLOT_OP = {"m": "match", "b": "book", "s": "status", "d": "modify"}
PLACEHOLDER = "@@BOOKING@@"
WORKERS = 2


class LoadError(Exception):
    """The benchmark could not run (not a finding about the service)."""


# --------------------------------------------------------------------------- data


@dataclass
class Bodies:
    matches: list[tuple[str, str]]  # (JSON body, expectation: found | absent | any)
    bookings: list[tuple[str, str]]  # JSON split at the booking number
    statuses: list[str]
    modifies: list[str]


def load_store(url: str, directory: Path, size: int, seed: int) -> list[dict[str, str]]:
    """Generate ``size`` people into a CSV file, import it, return a sample of them."""
    path = directory / "people.csv"
    rng = random.Random(seed)
    wanted = set(rng.sample(range(size), min(size, 2000)))
    kept = []
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(match_perf.CSV_FIELDS)
        for index, person in enumerate(match_perf.PeopleGenerator(seed).people(size)):
            writer.writerow([person[name] for name in match_perf.CSV_FIELDS])
            if index in wanted:
                kept.append(person)
    done = subprocess.run(
        [str(match_perf.RIDERCRM), "import", "contacts", str(path)],
        env=match_perf.server_env(url),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise LoadError(f"ridercrm import failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    path.unlink()
    return kept


def prepare(server: harness.Server, kept: list[dict[str, str]], args: argparse.Namespace) -> Bodies:
    """Write-side records through the API, and every request body the load will send."""
    rng = random.Random(args.seed)
    absent = match_perf.PeopleGenerator(args.seed + 7919).people(10**9)
    queries = match_perf.build_queries(rng, kept, absent, args.match_bodies)
    matches = [
        (
            json.dumps({"person_data": q.data}, ensure_ascii=False),
            "found" if q.kind == "exact" else "absent" if q.kind == "absent" else "any",
        )
        for q in queries
    ]
    with httpx.Client(base_url=server.base, headers=server.headers(), timeout=120) as http:

        def create(path: str, body: dict[str, Any]) -> str:
            response = http.post(path, json=body)
            if response.status_code != 201:
                raise LoadError(f"POST {path}: HTTP {response.status_code} {response.text[:300]}")
            return str(response.json()["id"])

        products = [
            create("/admin/products", {"name": f"Load {n}", "code": f"LOAD-{n}", "price": "249.00"})
            for n in range(3)
        ]
        contacts = [
            create("/admin/contacts", person_body(rng, f"LoadC{n}")) for n in range(args.writers)
        ]
        leads = [create("/admin/leads", person_body(rng, f"LoadL{n}")) for n in range(args.writers)]
        items = [
            new_booking(contact, products[n % 3], f"LOAD-SETUP-{n}")
            for n, contact in enumerate(contacts)
        ]
        assets: list[str] = []
        for start in range(0, len(items), 100):  # within the 200-item limit
            response = http.post(BOOK_PATH, json={"people_product": items[start : start + 100]})
            details = response.json().get("details", []) if response.status_code == 200 else []
            assets += [d["asset_id"] for d in details if d.get("delivery") == "true"]
        if len(assets) != len(items):
            raise LoadError(f"setup bookings: {response.status_code} {response.text[:300]}")
    bookings = []
    people = contacts + leads
    rng.shuffle(people)
    for n, person in enumerate(people):
        text = json.dumps({"people_product": [new_booking(person, products[n % 3], PLACEHOLDER)]})
        prefix, suffix = text.split(PLACEHOLDER)
        bookings.append((prefix, suffix))
    statuses = [
        json.dumps({"people_product": [{"asset_id": asset, "course_status": status}]})
        for status in ("cancelled", "booked")
        for asset in assets
    ]
    modifies = [
        json.dumps(
            {
                "people_data": [
                    {
                        "ID": contacts[n % len(contacts)],
                        "city": rng.choice(("Kilsyth", "Somerton", "Epping")),
                        "postcode": str(rng.randint(3000, 3999)),
                        "email": f"load{n}.{rng.randrange(10**6)}@example.com",
                    }
                ]
            }
        )
        for n in range(4 * len(contacts))
    ]
    return Bodies(matches=matches, bookings=bookings, statuses=statuses, modifies=modifies)


# --------------------------------------------------------------------------- wrk

LUA_TEMPLATE = r"""
local ffi = require("ffi")
ffi.cdef[[
typedef struct { long tv_sec; long tv_nsec; } rc_timespec;
int clock_gettime(int clk_id, rc_timespec *tp);
]]
local ts = ffi.new("rc_timespec")
local function now_us()
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) * 1000000 + tonumber(ts.tv_nsec) / 1000
end

local matches = {
%(matches)s
}
local expect = {
%(expect)s
}
local book_prefix = {
%(book_prefix)s
}
local book_suffix = {
%(book_suffix)s
}
local statuses = {
%(statuses)s
}
local modifies = {
%(modifies)s
}
local pattern = "%(pattern)s"
local slot_op = { m = "match", b = "book", s = "status", d = "modify" }
local auth = "Bearer %(key)s"
local run = "%(run)s"

local threads = {}
local counter = 0
function setup(thread)
  counter = counter + 1
  thread:set("id", counter)
  table.insert(threads, thread)
end

function init(args)
  n = 0
  -- Flat globals only: wrk's thread:get() cannot copy nested tables.
  lat_match, lat_book, lat_status, lat_modify = {}, {}, {}, {}
  non2xx_match, non2xx_book, non2xx_status, non2xx_modify = 0, 0, 0, 0
  failed_match, failed_book, failed_status, failed_modify = 0, 0, 0, 0
  example = {}
  current = nil
  wanted = nil
  started = 0
  offset = id * 7919
end

local headers = { ["Content-Type"] = "application/json", ["Authorization"] = auth }

function request()
  n = n + 1
  local k = n + offset
  local slot = pattern:sub((n - 1) %% #pattern + 1, (n - 1) %% #pattern + 1)
  current = slot_op[slot]
  local path, body
  if current == "match" then
    local i = k %% #matches + 1
    path, body, wanted = "%(match_path)s", matches[i], expect[i]
  elseif current == "book" then
    local i = k %% #book_prefix + 1
    path = "%(book_path)s"
    body = book_prefix[i] .. "L" .. run .. "-" .. id .. "-" .. n .. book_suffix[i]
  elseif current == "status" then
    path, body = "%(book_path)s", statuses[k %% #statuses + 1]
  else
    path, body = "%(modify_path)s", modifies[k %% #modifies + 1]
  end
  started = now_us()
  return wrk.format("POST", path, headers, body)
end

local function note(kind, body)
  if example[current .. kind] == nil then
    example[current .. kind] = string.sub(string.gsub(body or "", "[\r\n]", " "), 1, 300)
  end
end

function response(status, hdrs, body)
  local op = current
  local list = _G["lat_" .. op]
  list[#list + 1] = math.floor(now_us() - started)
  if status < 200 or status > 299 then
    _G["non2xx_" .. op] = _G["non2xx_" .. op] + 1
    note(":" .. status, body)
    return
  end
  local bad = false
  if op == "book" or op == "status" then
    bad = string.find(body, '"delivery":"false"', 1, true) ~= nil
  elseif op == "modify" then
    bad = string.find(body, '"items_failed":0', 1, true) == nil
  else
    local found = string.find(body, '"delivery":"true"', 1, true) ~= nil
    bad = string.find(body, '"receipt":"', 1, true) == nil
      or (wanted == "found" and not found) or (wanted == "absent" and found)
  end
  if bad then
    _G["failed_" .. op] = _G["failed_" .. op] + 1
    note(":receipt", body)
  end
end

function done(summary, latency, requests)
  local out = assert(io.open("%(output)s", "w"))
  local e = summary.errors
  out:write(string.format("SUMMARY %%d %%d %%d %%d %%d %%d %%d\n", summary.requests,
    summary.duration, e.connect, e.read, e.write, e.status, e.timeout))
  for _, op in ipairs({ "match", "book", "status", "modify" }) do
    local bad2xx, badreceipt, values = 0, 0, {}
    for _, thread in ipairs(threads) do
      bad2xx = bad2xx + thread:get("non2xx_" .. op)
      badreceipt = badreceipt + thread:get("failed_" .. op)
      for _, v in ipairs(thread:get("lat_" .. op)) do
        values[#values + 1] = v
      end
    end
    out:write(string.format("OP %%s %%d %%d\n", op, bad2xx, badreceipt))
    out:write("LAT " .. op .. " " .. table.concat(values, " ") .. "\n")
  end
  for _, thread in ipairs(threads) do
    for k, v in pairs(thread:get("example")) do
      out:write("EXAMPLE " .. k .. " " .. v .. "\n")
    end
  end
  out:close()
end
"""


def _lua_strings(values: list[str]) -> str:
    return ",\n".join(match_perf._lua_long_string(v) for v in values)


def wrk_script(directory: Path, key: str, bodies: Bodies, run: str) -> tuple[Path, Path]:
    output = directory / f"wrk-{run}.out"
    script = LUA_TEMPLATE % {
        "matches": _lua_strings([body for body, _e in bodies.matches]),
        "expect": ",\n".join(f'"{e}"' for _b, e in bodies.matches),
        "book_prefix": _lua_strings([p for p, _s in bodies.bookings]),
        "book_suffix": _lua_strings([s for _p, s in bodies.bookings]),
        "statuses": _lua_strings(bodies.statuses),
        "modifies": _lua_strings(bodies.modifies),
        "pattern": PATTERN,
        "key": key,
        "run": run,
        "output": str(output),
        "match_path": MATCH_PATH,
        "book_path": BOOK_PATH,
        "modify_path": MODIFY_PATH,
    }
    path = directory / f"load-{run}.lua"
    path.write_text(script, encoding="utf-8")
    return path, output


@dataclass
class OpResult:
    latencies_ms: list[float] = field(default_factory=list)
    non2xx: int = 0
    failed: int = 0

    def q(self, fraction: float) -> float:
        return match_perf.percentile(self.latencies_ms, fraction)


@dataclass
class LoadResult:
    db: str
    seconds: float
    requests: int
    socket_errors: dict[str, int]
    ops: dict[str, OpResult]
    examples: list[str]
    load_before: float = 0.0
    load_after: float = 0.0
    retried: int = 0
    server_errors: list[str] = field(default_factory=list)

    @property
    def errors(self) -> int:
        return (
            sum(self.socket_errors.values())
            + sum(o.non2xx + o.failed for o in self.ops.values())
            + len(self.server_errors)
        )

    @property
    def overall(self) -> OpResult:
        merged = OpResult()
        for op in self.ops.values():
            merged.latencies_ms.extend(op.latencies_ms)
            merged.non2xx += op.non2xx
            merged.failed += op.failed
        return merged

    @property
    def rate(self) -> float:
        return self.requests / self.seconds if self.seconds else 0.0


def run_wrk(base: str, script: Path, output: Path, seconds: int, connections: int) -> LoadResult:
    command = [
        "wrk", f"-t{connections}", f"-c{connections}", f"-d{seconds}s", "--timeout", "30s",
        "-s", str(script), base + MATCH_PATH,
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=seconds + 120, check=False
    )
    if done.returncode != 0 or not output.exists():
        raise LoadError(f"wrk failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    ops: dict[str, OpResult] = {op: OpResult() for op in OPS}
    examples: list[str] = []
    summary: list[int] = []
    for line in output.read_text(encoding="utf-8", errors="replace").splitlines():
        kind, _, rest = line.partition(" ")
        if kind == "SUMMARY":
            summary = [int(x) for x in rest.split()]
        elif kind == "OP":
            op, non2xx, failed = rest.split()
            ops[op].non2xx, ops[op].failed = int(non2xx), int(failed)
        elif kind == "LAT":
            op, _, values = rest.partition(" ")
            ops[op].latencies_ms = [int(v) / 1000 for v in values.split()]
        elif kind == "EXAMPLE":
            examples.append(rest)
    if len(summary) != 7:
        raise LoadError(f"wrk wrote no summary:\n{done.stdout}\n{done.stderr}")
    requests, duration_us, connect, read, write, status, timeout = summary
    del status  # wrk's status count is the non-2xx counted per operation above
    return LoadResult(
        db="",
        seconds=duration_us / 1e6,
        requests=requests,
        socket_errors={"connect": connect, "read": read, "write": write, "timeout": timeout},
        ops=ops,
        examples=examples,
    )


def measure(db: str, args: argparse.Namespace, directory: Path) -> LoadResult:
    work = directory / db
    work.mkdir()
    with harness.fresh_database(db, "load", work, args.pg_url) as url:
        key = harness.admin_key(url)
        started = time.monotonic()
        kept = load_store(url, work, args.people, args.seed)
        print(
            f"  {db}: {args.people} people imported in {time.monotonic() - started:.1f} s",
            flush=True,
        )
        server = harness.Server(url, key, work, workers=WORKERS, name=f"load-{db}")
        try:
            server.start()
            bodies = prepare(server, kept, args)
            warm, warm_out = wrk_script(work, key, bodies, f"W{db[0]}")
            run_wrk(server.base, warm, warm_out, args.warmup, args.connections)
            script, output = wrk_script(work, key, bodies, f"M{db[0]}")
            load_before = os.getloadavg()[0]
            result = run_wrk(server.base, script, output, args.duration, args.connections)
            result.load_before, result.load_after = load_before, os.getloadavg()[0]
        finally:
            server.stop()
        result.db = db
        events = server.log_events()
        result.retried = events.get("transaction retried", 0)
        result.server_errors = server.log_errors()
    return result


# --------------------------------------------------------------------------- report


def _f(value: float) -> str:
    return f"{value:,.1f}"


def table(results: list[LoadResult]) -> str:
    lines = [
        "| database | requests/s | requests | median ms | p90 ms | p99 ms | max ms | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        o = r.overall
        lines.append(
            f"| {r.db} | {r.rate:,.0f} | {r.requests:,} | {_f(o.q(0.5))} | {_f(o.q(0.9))}"
            f" | {_f(o.q(0.99))} | {_f(o.q(1.0))} | {r.errors} |"
        )
    lines += [
        "",
        "| database | operation | requests | share | median ms | p90 ms | p99 ms | max ms | non-2xx | failed receipts |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        total = sum(len(o.latencies_ms) for o in r.ops.values()) or 1
        for name, label in OPS.items():
            o = r.ops[name]
            lines.append(
                f"| {r.db} | {label} | {len(o.latencies_ms):,} | {len(o.latencies_ms) / total:.0%}"
                f" | {_f(o.q(0.5))} | {_f(o.q(0.9))} | {_f(o.q(0.99))} | {_f(o.q(1.0))}"
                f" | {o.non2xx} | {o.failed} |"
            )
    return "\n".join(lines)


def details(results: list[LoadResult]) -> list[str]:
    lines = []
    for r in results:
        lines.append(
            f"- {r.db}: socket errors {r.socket_errors}; transactions retried by the server"
            f" {r.retried}; server errors logged {len(r.server_errors)}; 1-minute load average"
            f" {r.load_before:.2f} before, {r.load_after:.2f} after."
        )
        lines.extend(f"  - example failure: `{e[:200]}`" for e in r.examples[:5])
        lines.extend(f"  - server error: `{e[:300]}`" for e in r.server_errors[:5])
    return lines


def section(args: argparse.Namespace, results: list[LoadResult]) -> str:
    m = report.machine()
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    code = report.code_version()
    command = " ".join([".venv/bin/python bench/load_bench.py", *args.argv])
    return "\n".join(
        [
            SECTION,
            "",
            f"Measured {today} on {m['nproc']} CPUs ({m['cpu']}), Python {m['python']},"
            f" SQLite {m['sqlite']}, PostgreSQL {_pg_version(args)}, {m['system']}; the load"
            " generator runs on the same CPUs (the machine is shared). Code: " + code + ".",
            "",
            f"Command: `{command}`",
            "",
            f"`bench/load_bench.py` loads {args.people:,} generated people (`ridercrm import"
            " contacts`) into a fresh database, starts `ridercrm serve --workers 2` with the"
            f" per-key rate limit off, creates {args.writers} contacts, {args.writers} leads and"
            f" {args.writers} booked courses for the write side, then runs wrk with"
            f" {args.connections} connections (one per wrk thread) for {args.duration} s after a"
            f" {args.warmup} s warm-up. Every wrk thread cycles 14 matches (the `match_perf`"
            " query mix: 40% exact, 10% typo in the first name, 10% in the last name, 10%"
            " day and month swapped, 10% changed e-mail, 20% people not stored), 3 new"
            " bookings (a fresh booking number each; a lead converts on its first booking), 2"
            " status updates (booked <-> cancelled) and 1 modify (one person, three fields)"
            " out of every 20 requests. Latencies are measured per request inside wrk's Lua"
            " script (`clock_gettime`), from sending to the whole answer read. Errors: socket"
            " errors and timeouts, non-2xx answers, and receipts that say failure where the"
            " request was meant to succeed (an item not delivered, a modify with failed items,"
            " an exact match not found, a stranger found).",
            "",
            table(results),
            "",
            *details(results),
            "",
        ]
    )


def _pg_version(args: argparse.Namespace) -> str:
    try:
        engine = harness._admin_engine(harness.postgres_base_url(args.pg_url))
        with engine.connect() as connection:
            version = str(connection.exec_driver_sql("SHOW server_version").scalar())
        engine.dispose()
        return version.split()[0]
    except Exception:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--short", action="store_true", help="CI form: 10 s per database")
    parser.add_argument("--duration", type=int, choices=range(5, 601), metavar="5..600")
    parser.add_argument("--warmup", type=int, choices=range(1, 61), metavar="1..60")
    parser.add_argument(
        "--connections", type=int, default=16, choices=range(1, 129), metavar="1..128"
    )
    parser.add_argument("--people", type=int, choices=range(100, 1_000_001), metavar="100..1000000")
    parser.add_argument("--writers", type=int, choices=range(10, 2001), metavar="10..2000")
    parser.add_argument("--seed", type=int, default=20261121)
    parser.add_argument("--pg-url", help="PostgreSQL to create the database on (127.0.0.1)")
    parser.add_argument("--write", action="store_true", help=f"replace '{SECTION}' in README")
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.load_bench")) is not None:
        return status
    args.argv = list(sys.argv[1:] if argv is None else argv)
    args.duration = args.duration or (10 if args.short else 60)
    args.warmup = args.warmup or (2 if args.short else 5)
    args.people = args.people or (2_000 if args.short else 10_000)
    args.writers = args.writers or (100 if args.short else 300)
    args.match_bodies = 300 if args.short else 1000
    databases = ["sqlite", "postgresql"] if args.db == "both" else [args.db]
    results = []
    with tempfile.TemporaryDirectory(prefix="ridercrm-load-") as directory:
        try:
            for db in databases:
                print(
                    f"load on {db}: {args.duration} s after a {args.warmup} s warm-up", flush=True
                )
                results.append(measure(db, args, Path(directory)))
        except (LoadError, harness.HarnessError) as exc:
            print(f"load benchmark aborted: {exc}", file=sys.stderr)
            return 2
    print(table(results))
    print("\n".join(details(results)))
    if args.write:
        report.write_section(section(args, results))
        print(f"wrote section '{SECTION}' of bench/README.md", file=sys.stderr)
    errors = sum(r.errors for r in results)
    if errors:
        print(f"{errors} error(s): the load must run without any", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
