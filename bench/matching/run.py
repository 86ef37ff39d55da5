"""Matching-quality harness: our matcher over HTTP beside the Salesforce standard rule.

Run from the repository root:

    .venv/bin/python -m bench.matching                  # print the results
    .venv/bin/python -m bench.matching --write          # also update bench/README.md
    .venv/bin/python -m bench.matching --baseline-only  # no server: the baseline alone
    make bench NAME=matching ARGS="--previous DIR"      # and a checkout of the previous commit

One run: generate a store of Australian people (``--people``, default 20,000; contacts
and leads 75/25, about one in eight in a two-person household) and ``--queries``
(default 4,000) corrupted match requests with their ground truth, all from ``--seed``;
write the store as CSV into a temporary directory (outside the repository) and load
it into a fresh SQLite database with ``ridercrm import contacts|leads``; create an
admin key with ``ridercrm keys create``; start ``ridercrm serve`` on a free port of
127.0.0.1; send every query to ``POST /crm/people/match`` or ``POST
/crm/leads/match`` (one keep-alive httpx client, sequential unless ``--workers``);
stop the server. The baseline, Salesforce's standard contact matching rule
(``baseline.py``), answers the same queries in-process from the same people. Then
precision, recall, F1 and family false merges for both, overall and per corruption
kind, the latency of the match requests, the verdict on each target, and the list of
our failures (re-asked with ``"explain": true`` so each shows the matcher's reasons).
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
from pathlib import Path
from typing import Any

if __package__ in (None, ""):  # run as a script: make `bench` importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import harness
from bench.matching import service
from bench.matching.baseline import run_baseline
from bench.matching.generate import KINDS, NAMESAKES, DataSet, Query, generate, summarise
from bench.matching.metrics import Report, comparison_table, evaluate
from bench.report import write_section

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "bench" / "README.md"
SECTION = "## Matching quality"

TARGET_PRECISION = 0.9995
TARGET_RECALL = 0.97


# --- running --------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.matching", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--people", type=int, default=20_000, help="people in the store")
    parser.add_argument("--queries", type=int, default=4_000, help="match requests")
    parser.add_argument("--seed", type=int, default=20261120, help="seed of the generator")
    parser.add_argument(
        "--namesakes",
        type=int,
        default=NAMESAKES,
        help=f"households of a parent and a child of one given name (default {NAMESAKES})",
    )
    parser.add_argument("--workers", type=int, default=1, help="client threads (default 1)")
    parser.add_argument(
        "--baseline-only", action="store_true", help="score the baseline alone; no server"
    )
    parser.add_argument("--write", action="store_true", help="update bench/README.md")
    parser.add_argument(
        "--show", type=int, default=15, help="failures to print per kind (default 15)"
    )
    parser.add_argument(
        "--failures", type=Path, default=None, help="write every failure of ours as JSON here"
    )
    parser.add_argument("--no-explain", action="store_true", help="don't re-ask failures")
    parser.add_argument(
        "--previous",
        default=None,
        help="a checkout of the previous commit (git worktree add --detach DIR HEAD~1), or"
        " another build's ridercrm command: the previous matcher, asked the same way",
    )
    args = parser.parse_args(argv)
    if args.people < 10 or args.queries < 1 or args.workers < 1 or args.namesakes < 0:
        parser.error(
            "--people must be at least 10, --queries and --workers at least 1, --namesakes 0 or more"
        )
    return args


class Run:
    """Everything one run measured."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.data: DataSet
        self.baseline_predictions: dict[int, str | None] = {}
        self.baseline_seconds = 0.0
        self.ours: service.Answers | None = None
        self.previous: service.Answers | None = None
        self.ours_unavailable: str | None = None
        self.loaded: service.Loaded | None = None
        self.explanations: dict[int, Any] = {}
        self.generate_seconds = 0.0
        self.keys_after_import: int | None = None

    def go(self) -> None:
        args = self.args
        started = time.perf_counter()
        self.data = generate(args.seed, args.people, args.queries, args.namesakes)
        self.generate_seconds = time.perf_counter() - started
        log(
            f"generated {args.people} people and {args.queries} queries ({self.generate_seconds:.1f} s)"
        )
        started = time.perf_counter()
        self.baseline_predictions = run_baseline(self.data.people, self.data.queries)
        self.baseline_seconds = time.perf_counter() - started
        log(f"baseline answered in {self.baseline_seconds:.1f} s")
        if not args.baseline_only:
            self.ask_service()
            if args.previous:
                self.ask_previous(args.previous)

    def ask_previous(self, previous: str) -> None:
        """The previous build's matcher: its own fresh database, import and server. A
        checkout of the previous commit runs its src/ with this venv's ``ridercrm``;
        anything else is that build's ``ridercrm`` command."""
        command, extra = harness.previous_command(previous)
        with tempfile.TemporaryDirectory(prefix="ridercrm-matching-previous-") as tmp:
            directory = Path(tmp)
            env = {**service.environment(directory / "bench.db"), **extra}
            service.run_cli(["db", "upgrade"], env, command)
            service.load_store(self.data.people, directory, env, command)
            key = service.create_key(env, command)
            with service.running_server(env, directory / "server.log", command) as base_url:
                self.previous = service.ask_all(base_url, key, self.data.queries, self.args.workers)
                log(f"previous matcher answered {len(self.data.queries)} queries")

    def ask_service(self) -> None:
        with tempfile.TemporaryDirectory(prefix="ridercrm-matching-") as tmp:
            directory = Path(tmp)
            env = service.environment(directory / "bench.db")
            service.run_cli(["db", "upgrade"], env)
            self.loaded = service.load_store(self.data.people, directory, env)
            log(
                f"imported {self.loaded.contacts} contacts and {self.loaded.leads} leads "
                f"({self.loaded.seconds:.1f} s)"
            )
            self.keys_after_import = service.stored_key_rows(directory / "bench.db")
            if not self.keys_after_import:
                log(
                    f"the import wrote {self.keys_after_import} match-key rows "
                    "for the people it imported"
                )
            key = service.create_key(env)
            with service.running_server(env, directory / "server.log") as base_url:
                problem = service.endpoints_available(base_url, key)
                if problem is not None:
                    self.ours_unavailable = problem
                    log(f"match endpoints not available: {problem}")
                    return
                self.ours = service.ask_all(base_url, key, self.data.queries, self.args.workers)
                log(f"asked {len(self.data.queries)} queries over HTTP ({self.ours.wall:.1f} s)")
                if not self.args.no_explain:
                    failed = [q for q in self.data.queries if self.failed(q)]
                    self.explanations = service.explain(base_url, key, failed)

    def failed(self, query: Query) -> bool:
        assert self.ours is not None
        return self.ours.predictions.get(query.number) != query.expected


def log(message: str) -> None:
    print(f"[matching] {message}", file=sys.stderr, flush=True)


# --- reporting ----------------------------------------------------------------------


def quantile_ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    pos = q * (len(ordered) - 1)
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return (ordered[low] + (ordered[high] - ordered[low]) * (pos - low)) * 1000


def verdicts(ours: Report | None, base: Report) -> list[tuple[str, str, bool | None]]:
    """(target, measured, met) for each target; met None when ours was not measured."""
    if ours is None:
        return [
            (f"precision ≥ {TARGET_PRECISION}", "not measured", None),
            (f"recall ≥ {TARGET_RECALL}", "not measured", None),
            ("0 family false merges", "not measured", None),
            ("better recall than the baseline at equal or better precision", "not measured", None),
        ]
    o, b = ours.overall, base.overall
    p, r = o.precision, o.recall or 0.0
    bp, br = b.precision, b.recall or 0.0
    shown_p = "— (no id answered)" if p is None else f"{p:.4f}"
    shown_bp = "—" if bp is None else f"{bp:.4f}"
    return [
        (f"precision ≥ {TARGET_PRECISION}", shown_p, p is not None and p >= TARGET_PRECISION),
        (f"recall ≥ {TARGET_RECALL}", f"{r:.4f}", r >= TARGET_RECALL),
        ("0 family false merges", str(o.family_merges), o.family_merges == 0),
        (
            "better recall than the baseline at equal or better precision",
            f"recall {r:.4f} vs {br:.4f}, precision {shown_p} vs {shown_bp}",
            r > br and p is not None and (bp is None or p >= bp),
        ),
    ]


def machine() -> str:
    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    memory = ""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                memory = f", {int(line.split()[1]) / 1024 / 1024:.0f} GiB RAM"
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} CPUs{memory}; {platform.system()} {platform.release()}; "
        f"Python {platform.python_version()}"
    )


def describe_person(person: Any) -> str:
    if person is None:
        return "—"
    return (
        f"{person.id} {person.kind} {person.first_name} {person.last_name} b. {person.date_of_birth} "
        f"{person.email} {person.mobile_phone or '-'} {person.postcode}"
        + (f" household {person.household} ({person.role})" if person.household else "")
    )


def failures(run: Run, ours: Report) -> list[dict[str, Any]]:
    """Every query ours got wrong, with the stored people concerned."""
    people = run.data.by_id()
    found = []
    assert run.ours is not None
    for query in run.data.queries:
        outcome = ours.outcomes[query.number]
        if outcome not in ("fp", "fn", "fp+fn"):
            continue
        answer = run.ours.by_query[query.number]
        found.append(
            {
                "query": query.number,
                "kind": query.kind,
                "endpoint": query.path,
                "outcome": outcome,
                "family_merge": answer.id is not None and answer.id in query.relatives,
                "note": query.note,
                "person_data": query.person_data,
                "expected": describe_person(people.get(query.expected or "")),
                "answered": describe_person(people.get(answer.id or "")) if answer.id else None,
                "baseline_answered": run.baseline_predictions.get(query.number),
                "problem": answer.problem,
                "explanation": run.explanations.get(query.number),
            }
        )
    return found


def print_failures(items: list[dict[str, Any]], show: int) -> None:
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        by_kind.setdefault(item["kind"], []).append(item)
    print(f"\n### Our failures ({len(items)})\n")
    for kind in KINDS:
        group = by_kind.get(kind, [])
        if not group:
            continue
        print(f"- `{kind}`: {len(group)}")
        for item in group[:show]:
            merge = " FAMILY MERGE" if item["family_merge"] else ""
            print(
                f"  - q{item['query']} {item['outcome']}{merge} [{item['endpoint']}] {item['note']}"
            )
            print(f"    expected: {item['expected']}")
            if item["answered"]:
                print(f"    answered: {item['answered']}")
            if item["problem"]:
                print(f"    problem: {item['problem']}")
            print(f"    sent: {json.dumps(item['person_data'], ensure_ascii=False)}")
            if item["explanation"] is not None:
                text = json.dumps(item["explanation"], ensure_ascii=False)
                print(f"    explain: {text[:600]}{'…' if len(text) > 600 else ''}")
        if len(group) > show:
            print(f"  - … {len(group) - show} more")


def command(args: argparse.Namespace) -> str:
    """The command that reproduces this run (with --write)."""
    parts = [".venv/bin/python -m bench.matching --write"]
    defaults = parse_args([])
    for name in ("people", "queries", "seed", "namesakes", "workers"):
        if getattr(args, name) != getattr(defaults, name):
            parts.append(f"--{name} {getattr(args, name)}")
    if args.previous:
        parts.append("--previous PREVIOUS")
    return " ".join(parts)


def result_markdown(
    run: Run, ours: Report | None, base: Report, previous: Report | None = None
) -> str:
    args = run.args
    summary = summarise(run.data)
    lines = []
    lines.append(
        f"Machine: {machine()}. Date: {dt.date.today().isoformat()}. "
        f"Command: `{command(args)}` (seed {args.seed}, {args.people:,} people, {args.queries:,} queries"
        f" and {run.data.namesakes:,} households of one name"
        f"{', ' + str(args.workers) + ' client threads' if args.workers > 1 else ''})."
    )
    lines.append("")
    lines.append(
        f"Store: {summary.contacts:,} contacts and {summary.leads:,} leads, "
        f"{summary.households:,} two-person households (parent and child, siblings, twins) "
        f"sharing e-mail, phones, address and last name, and {run.data.namesakes:,} people "
        f"whose parent or child of the same given name is not stored; loaded with "
        f"`ridercrm import`. "
        f"Queries by kind: " + ", ".join(f"`{k}` {summary.by_kind.get(k, 0)}" for k in KINDS) + "."
    )
    lines.append("")
    lines.append(
        "P precision, R recall, F1, FP false positives (for `absent` and `same_name_relative` "
        "every answer is one); "
        "ours through HTTP, base = the Salesforce standard contact matching rule "
        "(`bench/matching/baseline.py`) in-process on the same data."
    )
    lines.append("")
    lines.append(comparison_table(ours, base, previous))
    lines.append("")
    o_merges = "—" if ours is None else str(ours.overall.family_merges)
    p_merges = "" if previous is None else f", previous {previous.overall.family_merges}"
    lines.append(
        f"Family false merges (an answer that is a stored household relative of the person "
        f"asked for, any kind): ours {o_merges}{p_merges}, baseline {base.overall.family_merges}."
    )
    if run.ours is not None:
        lat = run.ours.latencies
        lines.append(
            f"Latency of the match requests seen by the harness (one keep-alive client, "
            f"sequential, 1 server worker, SQLite): median {statistics.median(lat) * 1000:.1f} ms, "
            f"p99 {quantile_ms(lat, 0.99):.1f} ms, over {len(lat):,} requests. "
            f"HTTP errors or malformed answers: {len(run.ours.problems)}."
        )
    elif run.ours_unavailable:
        lines.append(
            f"Ours not measured: the match endpoints are not available ({run.ours_unavailable})."
        )
    if run.keys_after_import == 0:
        lines.append(
            "**The import wrote no rows of the matcher's keys (`person_keys`)**, so the "
            "matcher could find none of the imported people."
        )
    per_query = run.baseline_seconds / max(1, len(run.data.queries)) * 1000
    lines.append(f"The baseline took {per_query:.2f} ms per query in-process (with blocking).")
    lines.append("")
    lines.append("Targets:")
    lines.append("")
    for target, measured, met in verdicts(ours, base):
        mark = "not measured" if met is None else ("met" if met else "**not met**")
        lines.append(f"- {target}: {measured} — {mark}")
    return "\n".join(lines)


def readme_section(
    run: Run, ours: Report | None, base: Report, previous: Report | None = None
) -> str:
    intro = (
        "`bench/matching/` generates a store of Australian people and corrupted match "
        "requests with a known answer, loads the store through `ridercrm import`, asks "
        "`POST /crm/people/match` and `POST /crm/leads/match` on a running server, and scores "
        "the answers beside a baseline: Salesforce's Standard Contact Matching Rule (first name "
        "fuzzy and last name fuzzy with one of e-mail exact, phone, or street with city or "
        "postcode), implemented in the harness as documented (`baseline.py` says what and "
        "from where). Corruption kinds: `exact`; `typo` and `transposition` (one letter in "
        "first or last name); `nickname` (either way); `initial`; `swapped_names`; "
        "`missing_optional` (mobile, licence, street, city, state dropped; also the date of "
        "birth in half of those sent to leads/match, where it is optional); `changed_email`; "
        "`changed_phone`; `moved_house`; `dob_swap` (day and month); `dob_digit` (one digit, "
        "still a real date); `case_punct` (case, accents, spacing, punctuation, phone format, "
        "street abbreviation, postcode as a number); `absent` (people not stored: strangers, "
        "namesakes, and unstored parents, children, siblings and twins of stored people, "
        "sharing their e-mail, phone and address); `family` (one member of a stored household, "
        "sometimes with a light corruption; the other member is the wrong answer). After "
        "those, from households of a parent and a child of one given name (Jr. and Sr.: "
        "surname, address, e-mail and phone shared, born 18-45 years apart), one member "
        "stored: `same_name_relative` (the unstored one, the licence left out of seven in "
        "ten; every answer is a false positive and a family merge) and `same_name_stored` "
        "(the stored one with one corruption of the kinds above)."
    )
    heading = SECTION
    if run.args.seed != parse_args([]).seed:
        heading = f"{SECTION} (held-out seed)"
        intro = (
            f"The same harness on seed {run.args.seed}, which the matcher was not developed "
            "on (its misses are not used to tune anything); the kinds are those above."
        )
    return f"{heading}\n\n{intro}\n\n{result_markdown(run, ours, base, previous)}\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    run = Run(args)
    try:
        run.go()
    except service.BenchError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    base = evaluate(run.data.queries, run.baseline_predictions)
    ours = evaluate(run.data.queries, run.ours.predictions) if run.ours is not None else None
    previous = None
    if run.previous is not None:
        previous = evaluate(run.data.queries, run.previous.predictions)
    print(result_markdown(run, ours, base, previous))
    if ours is not None:
        items = failures(run, ours)
        print_failures(items, args.show)
        if args.failures is not None:
            args.failures.write_text(json.dumps(items, indent=1, ensure_ascii=False, default=str))
        if run.ours is not None and run.ours.problems:
            print(f"\n{len(run.ours.problems)} requests failed or answered oddly; first:")
            for number, problem in list(run.ours.problems.items())[:10]:
                print(f"  q{number}: {problem}")
    if args.write:
        if ours is None:
            print(
                "error: --write needs our matcher's figures (not --baseline-only)", file=sys.stderr
            )
            return 2
        write_section(readme_section(run, ours, base, previous), README)
        log(f"updated {README.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
