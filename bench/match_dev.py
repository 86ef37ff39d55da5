"""In-process development check of the matcher on FEBRL 1-3 (not the benchmark of record).

The same store and queries as the HTTP benchmark (``bench/matching/febrl_data.py``, the
same seed: held-out originals, streets with their second line, the rows our import
refuses), answered in-process by the service's own keys, comparisons and decision, so a
change to the model can be judged in seconds. The benchmark of record is
``python -m bench.matching.febrl`` over HTTP.

    .venv/bin/python bench/match_dev.py [--sets 1 2 3] [--model model.json] [--misses N]
    .venv/bin/python bench/match_dev.py --generated 20261120   # bench/matching's generator
    .venv/bin/python bench/match_dev.py --verdicts out.txt     # answers and verdicts

Candidates are scored and ranked as the service does it (``score.Scorer``,
``service.rank`` and ``service.decide``); ``--scoring evaluate`` scores each with
``score.evaluate`` and ranks them here, as the service did before (it runs against an
older ``src/`` too: ``PYTHONPATH=OLD/src``). ``--verdicts`` writes every query's answer,
its explained candidates (total, acceptance, rule, levels, weights) and the accepted
ones, so two ways of scoring, or two commits, compare verdict by verdict with ``diff``.

Never FEBRL 4: it is held out.

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=match_dev ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import harness
from bench.matching import damage, febrl_data
from ridercrm.matching import score
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.repository import KEY_CAP
from ridercrm.people.blocking import Identity, query_keys, stored_keys
from ridercrm.people.index import identity_of as person_identity

SEED = 20261122  # bench.matching.febrl's default
SCORING = "service"  # or "evaluate": --scoring
VERDICTS: list[str] = []  # --verdicts: one line per query
EXPLAINED = 10  # the candidates an explanation lists (service.EXPLAINED_CANDIDATES)
UPDATED = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)  # every stored person alike: ties go by id


def _date_of(value: Any) -> dt.date | None:
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def identity_of(data: dict[str, Any]) -> Identity:
    """A stored row or a query's person data, as the import and the endpoint read it."""
    return Identity.of(
        first_name=data.get("first_name") or None,
        last_name=data.get("last_name") or None,
        date_of_birth=_date_of(data.get("date_of_birth")),
        email=data.get("email") or None,
        phones=(data.get("mobile_phone"), data.get("home_phone")),
        drivers_license=data.get("drivers_license") or None,
        street=data.get("street") or None,
        postcode=data.get("postcode") or None,
        city=data.get("city") or None,
    )


@dataclass
class Who:
    """What the service ranks a candidate person by."""

    id: str
    kind: str
    updated_at: dt.datetime = UPDATED


def decide(
    query: Identity,
    ids: set[str],
    stored: dict[str, Identity],
    kinds: dict[str, str],
    model: Model,
    thresholds: score.Thresholds,
) -> tuple[str | None, list[tuple[str, score.Verdict]], bool]:
    """(answer, ranked candidates, ambiguous) as service.match_identity decides.

    ``service``: the service's own scoring and ranking; ``evaluate``: every candidate
    scored by ``score.evaluate`` and ranked here, as the service did before (runs
    against an older ``src/`` too).
    """
    if SCORING == "evaluate":
        verdicts = {
            i: score.evaluate(query, stored[i], model=model, thresholds=thresholds) for i in ids
        }
        ranked = sorted(
            verdicts.items(),
            key=lambda item: (
                not item[1].accepted,
                -item[1].total,
                kinds[item[0]] != "contact",
                item[0],
            ),
        )
        accepted = [(i, v) for i, v in ranked if v.accepted]
        answer, ambiguous = (accepted[0][0], False) if accepted else (None, False)
        for other, verdict in accepted[1:]:
            if accepted[0][1].total - verdict.total >= thresholds.ambiguity:
                break
            if not score.same_person(stored[accepted[0][0]], stored[other]):
                answer, ambiguous = None, True
                break
    else:
        from ridercrm.matching import service

        scorer = score.Scorer(query, model=model, thresholds=thresholds)
        candidates = [(Who(i, kinds[i]), stored[i], False) for i in sorted(ids)]
        scored = service.rank(scorer, candidates)
        person, decision = service.decide(scored, thresholds)
        answer, ambiguous = (person.id if person else None), decision.startswith("ambiguous")
        ranked = [(who.id, verdict) for who, _identity, verdict in scored]
    return answer, ranked, ambiguous


def lookup(
    query: Identity,
    index: dict[int, list[str]],
    stored: dict[str, Identity],
    kinds: dict[str, str],
    model: Model,
    thresholds: score.Thresholds,
) -> set[str]:
    """The ids the service reads for a query, each key's people capped at KEY_CAP: the
    identifiers' keys first, the others only when those people cannot settle the answer
    (``service.settled``); with ``--scoring evaluate`` (an older ``src/``), every key's."""

    def read(keys: set[int]) -> set[str]:
        ids: set[str] = set()
        for key in keys:
            ids.update(index.get(key, [])[:KEY_CAP])
        return ids

    if SCORING == "evaluate":
        return read(query_keys(query))
    from ridercrm.matching import service
    from ridercrm.people.blocking import query_key_tiers

    identifiers, others = query_key_tiers(query)
    ids = read(identifiers)
    if ids and len(ids) < KEY_CAP:
        scorer = score.Scorer(query, model=model, thresholds=thresholds)
        first = [(Who(i, kinds[i]), stored[i], False) for i in sorted(ids) if i in kinds]
        if service.settled(
            service.rank(scorer, first), scorer.ceiling(service.IDENTIFIERS), thresholds
        ):
            return ids
    return ids | read(others)


def note_verdicts(label: str, answer: str | None, ranked: list[tuple[str, score.Verdict]]) -> None:
    """Keep one query's answer, explained candidates and accepted ones for --verdicts."""
    explained = [
        f"{i}:{v.total}:{v.accepted}:{v.rule}:{sorted(v.levels.items())}:{sorted(v.weights.items())}"
        for i, v in ranked[:EXPLAINED]
    ]
    accepted = [i for i, v in ranked if v.accepted]
    VERDICTS.append(f"{label} {answer} | {';'.join(explained)} | accepted {accepted}")


def run(number: int, model: Model, thresholds: score.Thresholds, misses: int) -> None:
    originals, duplicates = febrl_data.load(number)
    store = febrl_data.make_store(originals, SEED)
    asks = febrl_data.make_asks(originals, duplicates, store, SEED)
    # The import refuses a row without a last name.
    stored = {row["id"]: identity_of(row) for row in store.rows if row["last_name"]}
    contacts = dict.fromkeys(stored, "contact")
    index: dict[int, list[str]] = defaultdict(list)
    for pid, ident in stored.items():
        for key in stored_keys(ident):
            index[key].append(pid)
    for licence in (True, False):
        stats: Counter[str] = Counter()
        rules: Counter[str] = Counter()
        kinds_missed: Counter[str] = Counter()
        kinds_all: Counter[str] = Counter()
        shown = 0
        for asked, ask in enumerate(asks.asks):
            truth = None if ask.stranger else store.ids.get(ask.original)
            if not ask.stranger and truth not in stored:
                continue  # its original was refused by the import
            query = identity_of(ask.person_data(licence))
            ids = lookup(query, index, stored, contacts, model, thresholds)
            answer, ranked, ambiguous = decide(query, ids, stored, contacts, model, thresholds)
            note_verdicts(f"FEBRL {number} {licence} {asked}", answer, ranked)
            verdicts = dict(ranked)
            if ask.stranger:
                stats["strangers"] += 1
                stats["false"] += answer is not None
                continue
            stats["queries"] += 1
            stats["pairs_complete"] += truth in ids
            stats["ceiling_any"] += damage.guard_ceiling_case(ask.found, "any")
            for kind in damage.kinds(ask.found):
                kinds_all[kind] += 1
            if answer == truth:
                stats["true"] += 1
                continue
            if answer is not None:
                stats["false"] += 1
            for kind in damage.kinds(ask.found):
                kinds_missed[kind] += 1
            verdict = verdicts.get(truth) if truth else None
            rule = "ambiguous" if ambiguous else verdict.rule if verdict else "not a candidate"
            rules[rule] += 1
            if shown < misses and not damage.guard_ceiling_case(ask.found, "any"):
                shown += 1
                print(
                    "  miss",
                    ask.found,
                    verdict.total if verdict else None,
                    verdict.levels if verdict else None,
                    rule,
                )
        n = stats["queries"]
        true = stats["true"]
        print(
            f"FEBRL {number} {'licence' if licence else 'no licence'}: queries {n},"
            f" strangers {stats['strangers']}, recall {true / n:.4f} (FN {n - true}),"
            f" FP {stats['false']}, precision {true / max(1, true + stats['false']):.4f},"
            f" pairs completeness {stats['pairs_complete'] / n:.4f},"
            f" ceiling (any) {1 - stats['ceiling_any'] / n:.4f}"
        )
        print("   rules:", dict(rules.most_common()))
        print(
            "   missed kinds:",
            {k: f"{v}/{kinds_all[k]}" for k, v in kinds_missed.most_common(12)},
        )


def run_generated(seed: int, model: Model, thresholds: score.Thresholds) -> dict[str, Any]:
    """bench/matching's generator, answered in-process (households, twins, nicknames).

    Precision, recall, FP, FN and family merges are those of the kinds before the
    households of one name (``generate.SAME_NAME_KINDS``), as measured before them; those
    two kinds, and every kind together, are reported beside them."""
    from bench.matching.generate import SAME_NAME_KINDS, generate
    from bench.matching.metrics import evaluate

    data = generate(seed, 20000, 4000)
    stored = {p.id: person_identity(p) for p in data.people}
    kinds = {p.id: p.kind for p in data.people}
    index: dict[int, list[str]] = defaultdict(list)
    for pid, ident in stored.items():
        for key in stored_keys(ident):
            index[key].append(pid)
    predictions: dict[int, str | None] = {}
    leads = {i: kind for i, kind in kinds.items() if kind == "lead"}  # what leads-only ranks
    for q in data.queries:
        d = q.person_data
        query = Identity.of(
            first_name=d.get("first_name"),
            last_name=d.get("last_name"),
            date_of_birth=_date_of(d.get("date_of_birth")),
            email=d.get("email"),
            phones=(d.get("mobile_phone"),),
            drivers_license=d.get("drivers_license"),
            street=d.get("street"),
            postcode=d.get("postcode"),
            city=d.get("city"),
        )
        ids = (
            lookup(query, index, stored, leads, model, thresholds) & leads.keys()
            if "leads" in q.path
            else lookup(query, index, stored, kinds, model, thresholds)
        )
        answer, ranked, _ambiguous = decide(query, ids, stored, kinds, model, thresholds)
        predictions[q.number] = answer
        note_verdicts(f"generated {seed} {q.number}", answer, ranked)
    report = evaluate(data.queries, predictions)
    # The kinds before the households of one name, alone: the figures as they were.
    before = evaluate([q for q in data.queries if q.kind not in SAME_NAME_KINDS], predictions)
    o, b = report.overall, before.overall
    relative, stored_one = (report.by_kind[kind] for kind in SAME_NAME_KINDS)
    kinds_bad = {k: (s.fn, s.fp) for k, s in report.by_kind.items() if s.fn or s.fp}
    return {
        "precision": b.precision,
        "recall": b.recall,
        "fp": b.fp,
        "fn": b.fn,
        "family_merges": b.family_merges,
        "same_name_relative (fp of)": (relative.fp, relative.queries),
        "same_name_stored (recall, fn)": (stored_one.recall, stored_one.fn),
        "all kinds (precision, recall, family merges)": (o.precision, o.recall, o.family_merges),
        "by_kind (fn, fp)": kinds_bad,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", type=int, nargs="+", default=[1, 2, 3], choices=[1, 2, 3])
    parser.add_argument("--model", help="a model JSON file (default: the shipped model)")
    parser.add_argument("--misses", type=int, default=0, help="print this many misses a run")
    parser.add_argument("--generated", type=int, nargs="*", help="bench/matching seeds instead")
    parser.add_argument("--scoring", choices=["service", "evaluate"], default="service")
    parser.add_argument("--verdicts", help="write every query's answer and verdicts here")
    harness.add_previous(parser)
    args = parser.parse_args()
    if (status := harness.compare_with_previous(args, "bench.match_dev")) is not None:
        raise SystemExit(status)
    global SCORING
    SCORING = args.scoring
    model = Model.from_json(Path(args.model).read_text()) if args.model else default_model()
    thresholds = score.Thresholds()
    if args.generated is not None:
        for seed in args.generated or [20261120, 4242]:
            print("generated", seed, run_generated(seed, model, thresholds))
    else:
        for number in args.sets:
            run(number, model, thresholds, args.misses)
    if args.verdicts:
        Path(args.verdicts).write_text("\n".join(VERDICTS) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
