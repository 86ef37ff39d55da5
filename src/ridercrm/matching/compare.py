"""Field comparisons that tolerate the ways real data goes wrong. Pure functions.

Each returns a Comparison: a score from 0 to 1 and a short reason for the audit trail.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import jellyfish
from rapidfuzz.distance import DamerauLevenshtein, JaroWinkler

from ridercrm.matching.nicknames import same_name_family


@dataclass(frozen=True)
class Comparison:
    score: float
    reason: str

    @property
    def agrees(self) -> bool:
        return self.score > 0


MISSING = Comparison(0.0, "missing")
DIFFERS = Comparison(0.0, "differs")


def _typo_distance(first: str, second: str) -> int:
    """How many single-character slips (Damerau: transpositions count one) a typo may be."""
    shortest = min(len(first), len(second))
    if shortest < 4:
        return 0
    return 2 if shortest >= 9 else 1


def _is_typo(first: str, second: str) -> bool:
    allowed = _typo_distance(first, second)
    return (
        allowed > 0 and DamerauLevenshtein.distance(first, second, score_cutoff=allowed) <= allowed
    )


SHORT_TYPO = "typo in a short name"


def _is_short_typo(first: str, second: str) -> bool:
    """One slip in a name too short for the ordinary typo rule (Li/Il, Dan/Dna, Pham/Pam)."""
    return (
        min(len(first), len(second)) < 4
        and DamerauLevenshtein.distance(first, second, score_cutoff=1) <= 1
    )


def given_names(query: tuple[str, ...], stored: tuple[str, ...]) -> Comparison:
    """Given names: exact, a nickname of each other, an initial, a middle name, or a typo."""
    if not query or not stored:
        return MISSING
    q, s = "".join(query), "".join(stored)
    if q == s:
        return Comparison(1.0, "exact")
    if query[0] == stored[0]:
        return Comparison(0.93, "same first word")
    if same_name_family(query[0], stored[0]):
        # The reason never quotes the stored name: explanations reach API clients.
        return Comparison(0.92, "nickname")
    if _is_typo(q, s):
        return Comparison(0.88, "typo")
    if len(query[0]) == 1 and stored[0].startswith(query[0]):
        return Comparison(0.75, "initial")
    if len(stored[0]) == 1 and query[0].startswith(stored[0]):
        return Comparison(0.75, "initial")
    if _is_short_typo(q, s):
        return Comparison(0.7, SHORT_TYPO)
    return DIFFERS


def family_names(query: tuple[str, ...], stored: tuple[str, ...]) -> Comparison:
    """Family names: exact, part of a compound name, a typo, or the same sound."""
    if not query or not stored:
        return MISSING
    q, s = "".join(query), "".join(stored)
    if q == s:
        return Comparison(1.0, "exact")
    if _is_typo(q, s):
        return Comparison(0.9, "typo")
    query_words, stored_words = set(query), set(stored)
    if query_words <= stored_words or stored_words <= query_words:
        return Comparison(0.88, "part of a compound name")
    if jellyfish.metaphone(q) == jellyfish.metaphone(s) and JaroWinkler.similarity(q, s) >= 0.85:
        return Comparison(0.86, "sounds the same")
    if _is_short_typo(q, s):
        return Comparison(0.7, SHORT_TYPO)
    return DIFFERS


def birth_dates(query: dt.date | None, stored: dt.date | None) -> Comparison:
    """Dates of birth: exact, day and month swapped, or one digit wrong."""
    if query is None or stored is None:
        return MISSING
    if query == stored:
        return Comparison(1.0, "exact")
    if query.day == stored.month and query.month == stored.day:
        return Comparison(0.8, "day and month swapped")
    q, s = query.strftime("%Y%m%d"), stored.strftime("%Y%m%d")
    if sum(a != b for a, b in zip(q, s, strict=True)) == 1:
        return Comparison(0.8, "one digit differs")
    return DIFFERS


def same_value(query: str | None, stored: str | None) -> Comparison:
    """Identifiers that either are the same (after normalisation) or are not."""
    if not query or not stored:
        return MISSING
    return Comparison(1.0, "same") if query == stored else DIFFERS


def any_same(query: frozenset[str], stored: frozenset[str]) -> Comparison:
    if not query or not stored:
        return MISSING
    return Comparison(1.0, "same") if query & stored else DIFFERS
