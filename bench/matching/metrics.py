"""Precision, recall, F1 and family false merges of one system's answers.

A query's prediction is an id or none. True positive: the expected id. False
positive: any other id (every id answered to an `absent` query included). False
negative: none, or a wrong id, when an id was expected (a wrong id is both a false
positive and a false negative). Precision = TP / (TP + FP); recall = TP / (queries
with an expected id); F1 their harmonic mean. A family false merge is an answer that
is a stored household relative of the person the query was made from (or of the
stored person an unstored relative was made from) -- counted over every kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from bench.matching.generate import KINDS, Query


@dataclass
class Score:
    queries: int = 0
    expected: int = 0  # queries with an expected id
    tp: int = 0
    fp: int = 0
    fn: int = 0
    family_merges: int = 0

    @property
    def precision(self) -> float | None:
        answered = self.tp + self.fp
        return self.tp / answered if answered else None

    @property
    def recall(self) -> float | None:
        return self.tp / self.expected if self.expected else None

    @property
    def f1(self) -> float | None:
        p, r = self.precision, self.recall
        if p is None or r is None or p + r == 0:
            return None
        return 2 * p * r / (p + r)

    def add(self, query: Query, predicted: str | None) -> str:
        """Count one answer; return its outcome: tp, fp, fn, fp+fn or tn."""
        self.queries += 1
        if predicted is not None and predicted in query.relatives:
            self.family_merges += 1
        if query.expected is not None:
            self.expected += 1
            if predicted == query.expected:
                self.tp += 1
                return "tp"
            self.fn += 1
            if predicted is not None:
                self.fp += 1
                return "fp+fn"
            return "fn"
        if predicted is not None:
            self.fp += 1
            return "fp"
        return "tn"


@dataclass
class Report:
    overall: Score = field(default_factory=Score)
    by_kind: dict[str, Score] = field(default_factory=dict)
    outcomes: dict[int, str] = field(default_factory=dict)  # query number -> outcome


def evaluate(queries: Sequence[Query], predictions: Mapping[int, str | None]) -> Report:
    report = Report(by_kind={kind: Score() for kind in KINDS})
    for query in queries:
        predicted = predictions.get(query.number)
        outcome = report.overall.add(query, predicted)
        report.by_kind.setdefault(query.kind, Score()).add(query, predicted)
        report.outcomes[query.number] = outcome
    return report


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def comparison_table(ours: Report | None, baseline: Report, previous: Report | None = None) -> str:
    """A Markdown table: per kind and overall, ours beside the previous matcher (when
    measured) and the baseline."""
    systems = ["ours"] + (["prev"] if previous is not None else []) + ["base"]
    header = (
        "| kind | queries | "
        + " | ".join(f"{s} {m}" for s in systems for m in ("P", "R", "F1", "FP"))
        + " |\n|---|---:|"
        + "---:|" * (4 * len(systems))
    )
    rows = [header]

    def line(label: str, mine: Score | None, base: Score, prev: Score | None) -> str:
        cells = [label, str(base.queries)]
        scores = (mine, prev, base) if previous is not None else (mine, base)
        for score in scores:
            if score is None:
                cells += ["—"] * 4
                continue
            cells += [fmt(score.precision), fmt(score.recall), fmt(score.f1), str(score.fp)]
        return "| " + " | ".join(cells) + " |"

    for kind in KINDS:
        base = baseline.by_kind.get(kind)
        if base is None or base.queries == 0:
            continue
        mine = ours.by_kind.get(kind) if ours else None
        prev = previous.by_kind.get(kind) if previous else None
        rows.append(line(f"`{kind}`", mine, base, prev))
    rows.append(
        line(
            "**all**",
            ours.overall if ours else None,
            baseline.overall,
            previous.overall if previous else None,
        )
    )
    return "\n".join(rows)
