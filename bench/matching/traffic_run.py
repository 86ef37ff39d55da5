"""Run ``bench/matching/traffic.py``'s benchmark: ours through operation 3, Splink and
``recordlinkage`` on the same data in the same run.

    .venv/bin/python -m bench.matching.traffic_run                 # dev seed, over HTTP
    .venv/bin/python -m bench.matching.traffic_run --in-process    # dev seed, seconds
    .venv/bin/python -m bench.matching.traffic_run --train         # `ridercrm match train` first
    .venv/bin/python -m bench.matching.traffic_run --anchors splink recordlinkage
    .venv/bin/python -m bench.matching.traffic_run --seed held-out # once, at the end

Over HTTP (the benchmark of record): the store is written as CSV into a temporary
directory, loaded into a fresh SQLite database with ``ridercrm import``, and every query
is sent to ``POST /crm/people/match`` of ``ridercrm serve`` (``bench/matching/service.py``,
as ``python -m bench.matching`` does it). ``--in-process`` answers with the service's own
keys, scorer and decision (``bench/match_dev.py``), for iterating. Splink and
``recordlinkage`` are the ``bench`` extra (``pip install -e '.[bench]'``); each links the
queries to the store with its own EM-trained model, and a query's answer is its best
stored pair at or above the threshold (Splink: match probability 0.9; recordlinkage:
the ECM classifier's matches).

Precision = right answers / answers; recall = right answers / queries with a stored
person, per damage category; false matches per negative category (any answer to a
query for someone not stored is false).

With ``--previous DIR``, a checkout of the previous commit (``git worktree add --detach
DIR HEAD~1``), the same runs on this build and on DIR's, alternately
(``--previous-rounds N``), and both builds' lines are printed side by side:

    make bench NAME=matching.traffic_run ARGS="... --previous DIR"
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from bench import harness
from bench.matching import traffic
from bench.matching.generate import Query

Answers = dict[int, str | None]


def _identity(data: dict[str, Any]) -> Any:
    from bench.match_dev import identity_of

    return identity_of(data)


EXPLAINED: dict[int, list[Any]] = {}
NOT_CANDIDATES: list[int] = []  # stored riders the keys did not find (in-process only)


def in_process(data: traffic.Traffic, train: bool) -> Answers:
    """The service's keys, scorer and decision, without HTTP or a database."""
    from bench.match_dev import decide, lookup
    from ridercrm.matching import score
    from ridercrm.matching.model import default_model
    from ridercrm.people.blocking import stored_keys
    from ridercrm.people.index import identity_of

    stored = {p.id: identity_of(p) for p in data.people}
    kinds = {p.id: p.kind for p in data.people}
    model = default_model()
    if train:
        from ridercrm.matching.training import train as train_model

        model = train_model(list(stored.values()))
    thresholds = score.Thresholds()
    index: dict[int, list[str]] = defaultdict(list)
    for pid, ident in stored.items():
        for key in stored_keys(ident):
            index[key].append(pid)
    answers: Answers = {}
    for q in data.queries:
        query = _identity(q.person_data)
        ids = lookup(query, index, stored, kinds, model, thresholds)
        answers[q.number], ranked, _ambiguous = decide(query, ids, stored, kinds, model, thresholds)
        if q.expected is not None and q.expected not in ids:
            NOT_CANDIDATES.append(q.number)
        if answers[q.number] != q.expected:
            EXPLAINED[q.number] = [
                (i == q.expected, v.total, v.accepted, v.rule, v.levels) for i, v in ranked[:3]
            ]
    return answers


def over_http(data: traffic.Traffic, train: bool) -> tuple[Answers, list[float]]:
    from bench.matching import service

    with tempfile.TemporaryDirectory(prefix="ridercrm-traffic-") as tmp:
        directory = Path(tmp)
        env = service.environment(directory / "bench.db")
        service.run_cli(["db", "upgrade"], env)
        service.load_store(data.people, directory, env)
        if train:
            service.run_cli(["match", "train"], env)
        key = service.create_key(env)
        with service.running_server(env, directory / "server.log") as base_url:
            answers = service.ask_all(base_url, key, data.queries)
    return answers.predictions, answers.latencies


# --- anchors ------------------------------------------------------------------------


def _frames(data: traffic.Traffic) -> tuple[Any, Any]:
    import pandas as pd

    from ridercrm.people import normalize

    def row(uid: str, d: dict[str, Any]) -> dict[str, Any]:
        def name(value: Any) -> str | None:
            text = normalize.name(value) if value else ""
            return text.replace(" ", "") or None

        phone = d.get("mobile_phone") or d.get("home_phone")
        digits = "".join(ch for ch in str(phone or "") if ch.isdigit())
        if digits.startswith("61"):
            digits = "0" + digits[2:]
        return {
            "unique_id": uid,
            "first_name": name(d.get("first_name")),
            "surname": name(d.get("last_name")),
            "dob": str(d.get("date_of_birth") or "") or None,
            "email": (str(d.get("email") or "").strip().lower()) or None,
            "phone": digits or None,
            "licence": (str(d.get("drivers_license") or "").upper().replace(" ", "")) or None,
            "postcode": str(d.get("postcode") or "") or None,
            "street": (str(d.get("street") or "").strip().lower()) or None,
        }

    stored = pd.DataFrame([row(p.id, p.csv_row()) for p in data.people])
    asked = pd.DataFrame([row(f"q{q.number}", q.person_data) for q in data.queries])
    return stored, asked


def splink_answers(data: traffic.Traffic, threshold: float = 0.9) -> Answers:
    import splink.comparison_library as cl
    from splink import DuckDBAPI, Linker, SettingsCreator, block_on

    stored, asked = _frames(data)
    settings = SettingsCreator(
        link_type="link_only",
        comparisons=[
            cl.NameComparison("first_name"),
            cl.NameComparison("surname"),
            cl.DateOfBirthComparison("dob", input_is_string=True),
            cl.EmailComparison("email"),
            cl.ExactMatch("phone"),
            cl.LevenshteinAtThresholds("licence", [1]),
            cl.PostcodeComparison("postcode"),
            cl.JaroWinklerAtThresholds("street", [0.9]),
        ],
        blocking_rules_to_generate_predictions=[
            block_on("email"),
            block_on("phone"),
            block_on("licence"),
            block_on("dob"),
            block_on("surname", "postcode"),
            block_on("first_name", "surname"),
            block_on("street", "postcode"),
        ],
        retain_intermediate_calculation_columns=False,
    )
    db = DuckDBAPI()  # Splink 5: tables are registered with the backend first
    linker = Linker([db.register(stored), db.register(asked)], settings)
    linker.training.estimate_probability_two_random_records_match(
        [block_on("email"), block_on("first_name", "surname", "dob")], recall=0.8
    )
    linker.training.estimate_u_using_random_sampling(max_pairs=2_000_000)
    linker.training.estimate_parameters_using_expectation_maximisation(block_on("dob"))
    linker.training.estimate_parameters_using_expectation_maximisation(
        block_on("surname", "postcode")
    )
    frame = linker.inference.predict(threshold_match_probability=threshold).as_pandas_dataframe()
    return _best(frame, "unique_id_l", "unique_id_r", "match_probability", data)


def _best(frame: Any, left: str, right: str, column: str, data: traffic.Traffic) -> Answers:
    best: dict[int, tuple[float, str]] = {}
    for a, b, value in zip(frame[left], frame[right], frame[column], strict=True):
        query, person = (a, b) if str(a).startswith("q") else (b, a)
        number = int(str(query)[1:])
        if number not in best or value > best[number][0]:
            best[number] = (float(value), str(person))
    return {q.number: best[q.number][1] if q.number in best else None for q in data.queries}


def recordlinkage_answers(data: traffic.Traffic) -> Answers:
    import pandas as pd
    import recordlinkage

    stored, asked = _frames(data)
    stored, asked = stored.set_index("unique_id"), asked.set_index("unique_id")
    pairs = None
    for fields in (["email"], ["phone"], ["licence"], ["dob"], ["surname", "postcode"],
                   ["first_name", "surname"]):  # fmt: skip
        indexer = recordlinkage.Index()
        indexer.block(fields if len(fields) > 1 else fields[0])
        found = indexer.index(asked, stored)
        pairs = found if pairs is None else pairs.union(found)
    compare = recordlinkage.Compare()
    compare.string("first_name", "first_name", method="jarowinkler", threshold=0.85, label="g")
    compare.string("surname", "surname", method="jarowinkler", threshold=0.85, label="f")
    compare.exact("dob", "dob", label="d")
    compare.exact("email", "email", label="e")
    compare.exact("phone", "phone", label="p")
    compare.exact("licence", "licence", label="l")
    compare.exact("postcode", "postcode", label="pc")
    compare.string("street", "street", method="jarowinkler", threshold=0.9, label="s")
    features = compare.compute(pairs, asked, stored)
    classifier = recordlinkage.ECMClassifier(binarize=None)
    classifier.fit(features)
    probability = classifier.prob(features)
    matched = probability[probability >= 0.5]
    frame = pd.DataFrame(
        {
            "q": matched.index.get_level_values(0),
            "p": matched.index.get_level_values(1),
            "v": matched.values,
        }
    )
    return _best(frame, "q", "p", "v", data)


# --- scoring ------------------------------------------------------------------------


def scores(queries: Sequence[Query], answers: Answers) -> dict[str, Any]:
    right = wrong = positives = 0
    by_damage: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    by_negative: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    wrong_person = 0
    for q in queries:
        answer = answers.get(q.number)
        if q.expected is None:
            by_negative[q.kind][1] += 1
            if answer is not None:
                wrong += 1
                by_negative[q.kind][0] += 1
            continue
        positives += 1
        by_damage[q.kind][1] += 1
        if answer == q.expected:
            right += 1
            by_damage[q.kind][0] += 1
        elif answer is not None:
            wrong += 1
            wrong_person += 1
    return {
        "precision": right / max(1, right + wrong),
        "recall": right / max(1, positives),
        "false": wrong,
        "wrong_person": wrong_person,
        "damage": dict(by_damage),
        "negative": dict(by_negative),
    }


def table(results: dict[str, dict[str, Any]]) -> str:
    names = list(results)
    lines = ["| | " + " | ".join(names) + " |", "|---" * (len(names) + 1) + "|"]

    def add(label: str, cell: Any) -> None:
        lines.append(f"| {label} | " + " | ".join(cell(results[n]) for n in names) + " |")

    add("precision", lambda r: f"{r['precision']:.4f}")
    add("recall", lambda r: f"{r['recall']:.4f}")
    add("false matches (all)", lambda r: str(r["false"]))
    add("of them, a stored rider's query answered with another", lambda r: str(r["wrong_person"]))
    first = results[names[0]]
    for kind in sorted(first["negative"]):
        n = first["negative"][kind][1]
        add(f"false matches: {kind} ({n})", lambda r, k=kind: str(r["negative"][k][0]))
    for kind in traffic.DAMAGE:
        if kind in first["damage"]:
            n = first["damage"][kind][1]
            add(
                f"recall: {kind} ({n})",
                lambda r, k=kind: f"{r['damage'][k][0] / r['damage'][k][1]:.3f}",
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", default="dev", help="dev, held-out, or a number")
    parser.add_argument("--people", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=5_000)
    parser.add_argument("--in-process", action="store_true")
    parser.add_argument("--train", action="store_true", help="train the model on the store")
    parser.add_argument("--anchors", nargs="*", default=[], choices=["splink", "recordlinkage"])
    parser.add_argument("--misses", type=int, default=0, help="print this many of our failures")
    harness.add_previous(parser)
    args = parser.parse_args(argv)
    if (status := harness.compare_with_previous(args, "bench.matching.traffic_run")) is not None:
        raise SystemExit(status)
    seed = {"dev": traffic.DEV_SEED, "held-out": traffic.HELD_OUT_SEED}.get(args.seed)
    seed = seed if seed is not None else int(args.seed)
    data = traffic.generate(seed, args.people, args.queries)
    print(f"seed {seed}: {len(data.people)} people, {len(data.queries)} queries", flush=True)
    results: dict[str, dict[str, Any]] = {}
    started = time.perf_counter()
    if args.in_process:
        ours = in_process(data, args.train)
    else:
        ours, latencies = over_http(data, args.train)
        latencies.sort()
        print(f"HTTP median {latencies[len(latencies) // 2] * 1000:.1f} ms", flush=True)
    label = "ridercrm" + (" (trained)" if args.train else "")
    results[label] = scores(data.queries, ours)
    print(f"{label}: {time.perf_counter() - started:.0f} s", flush=True)
    for anchor in args.anchors:
        started = time.perf_counter()
        try:
            found = splink_answers(data) if anchor == "splink" else recordlinkage_answers(data)
        except ImportError as exc:
            print(f"{anchor}: not installed ({exc})")
            continue
        results["Splink (p ≥ 0.9)" if anchor == "splink" else "recordlinkage (ECM)"] = scores(
            data.queries, found
        )
        print(f"{anchor}: {time.perf_counter() - started:.0f} s", flush=True)
    print(table(results))
    if args.in_process:
        print(f"stored riders not found by the blocking keys: {len(NOT_CANDIDATES)}")
    if args.misses:
        shown: Counter[str] = Counter()
        for q in data.queries:
            answer = ours.get(q.number)
            if answer != q.expected and shown[q.kind] < args.misses:
                shown[q.kind] += 1
                print(q.kind, q.note, "expected", q.expected, "answered", answer, q.person_data)
                for line in EXPLAINED.get(q.number, []):
                    print("    ", line)


if __name__ == "__main__":
    main()
