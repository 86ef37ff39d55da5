"""Scoring a candidate against a query, and the decision rule (docs/decisions.md, "Operations 3 and 4 (matching)"). Pure.

Each field's comparison level adds its match weight (``matching.model``); the total
is the evidence, in bits, that the two records are one person. A candidate is
accepted when the total reaches the match threshold and the household guard lets it:
people of one household share surname, address, e-mail and phone, but not given
name, date of birth and licence, so

- a given name that differs outright (not a slip, nickname or initial) needs an
  agreeing licence (the same, or one slip from it);
- a given name that only nearly agrees (sounds alike, two slips, an initial) with a
  differing licence is another person (twins share everything else);
- the personal fields (given name, date of birth, licence) must themselves carry
  some evidence: the shared household fields alone never make a match.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from ridercrm.matching import compare
from ridercrm.matching.model import Model, default_model
from ridercrm.people.blocking import Identity

PERSONAL = ("given_name", "date_of_birth", "licence")
# A course the person booked, named in the request (docs/decisions.md, "Operations 3 and 4 (matching)": strong evidence).
ASSET_WEIGHT = 12.0


@dataclass(frozen=True)
class Thresholds:
    """The decision's settings (RIDERCRM_MATCH_*; README, Configuration; the same defaults)."""

    match: float = 18.0
    personal: float = 1.0
    ambiguity: float = 6.0


@dataclass
class Verdict:
    """What a candidate scored, whether it passes the rule, and why."""

    total: float
    accepted: bool
    levels: dict[str, str] = field(default_factory=dict)
    weights: dict[str, float] = field(default_factory=dict)
    rule: str = ""

    @property
    def reasons(self) -> dict[str, str]:
        """One reason per field: its comparison level (never a stored value)."""
        return dict(self.levels)


def levels(query: Identity, stored: Identity) -> dict[str, str]:
    """The comparison level of every field."""
    return {name: level_of(query, stored) for name, level_of in COMPARISONS.items()}


# Each field's comparison, in the order of the explanation (and of the sum).
COMPARISONS: dict[str, Callable[[Identity, Identity], str]] = {
    "given_name": lambda q, s: compare.given_name(q.first, s.first, s.last),
    "family_name": lambda q, s: compare.family_name(q.last, s.last, s.first),
    "date_of_birth": lambda q, s: compare.birth_date(q.date_of_birth, s.date_of_birth),
    "email": lambda q, s: compare.email(q.email, s.email),
    "phone": lambda q, s: compare.phones(q.phones, s.phones),
    "licence": lambda q, s: compare.one_digit(q.licence, s.licence),
    "street": lambda q, s: compare.street(q.street, s.street),
    "postcode": lambda q, s: compare.locality(q.postcode, s.postcode, q.city, s.city),
}
# Compared first when a candidate may not need every field (Scorer.start): equality or
# one edit distance each. The names and the street, the costly comparisons, come after,
# most informative first.
CHEAP = ("date_of_birth", "email", "phone", "licence", "postcode")
COSTLY = ("family_name", "given_name", "street")
# A bound is a sum in another order than the total's and before its rounding to 0.01:
# a candidate is left unscored only when its bound is under the bar by more than this.
BOUND_MARGIN = 0.01


def field_weights(model: Model, query: Identity, stored_levels: dict[str, str]) -> dict[str, float]:
    """The match weight of each field's level, term-frequency adjusted where exact."""
    values = _tf_values(query)
    return {
        name: round(model.weight(name, level, values.get(name)), 2)
        for name, level in stored_levels.items()
    }


def _tf_values(query: Identity) -> dict[str, str | None]:
    """The query's values whose share of the store weighs an exact agreement."""
    return {
        "given_name": "".join(query.first),
        "family_name": "".join(query.last),
        "postcode": query.postcode,
    }


def evaluate(
    query: Identity,
    stored: Identity,
    *,
    model: Model | None = None,
    thresholds: Thresholds | None = None,
    asset: bool = False,
) -> Verdict:
    """Compare field by field, add up the weights and apply the decision rule.

    Without a model or thresholds: the shipped default model and default thresholds.
    """
    model = model or default_model()
    found = levels(query, stored)
    weights = field_weights(model, query, found)
    return _verdict(found, weights, thresholds or Thresholds(), asset=asset)


class Scorer:
    """One query scored against many stored people: ``evaluate``'s verdicts, computed once.

    A level's weight depends only on the query (its names and postcode, for the term
    frequencies) and the level, so each is computed once per query rather than once per
    candidate (a query at a million people has up to a hundred candidates).
    """

    def __init__(
        self, query: Identity, *, model: Model | None = None, thresholds: Thresholds | None = None
    ) -> None:
        self.query = query
        self.model = model or default_model()
        self.thresholds = thresholds or Thresholds()
        self._values = _tf_values(query)
        self._weights: dict[str, dict[str, float]] = {name: {} for name in compare.LEVELS}
        self._bests: dict[str, float] = {}

    def _weight(self, name: str, level: str) -> float:
        known = self._weights[name]
        weight = known.get(level)
        if weight is None:
            weight = known[level] = round(self.model.weight(name, level, self._values.get(name)), 2)
        return weight

    def evaluate(self, stored: Identity, *, asset: bool = False) -> Verdict:
        """The verdict ``evaluate(query, stored, ...)`` gives, with this scorer's model."""
        found = levels(self.query, stored)
        weights = {name: self._weight(name, level) for name, level in found.items()}
        return _verdict(found, weights, self.thresholds, asset=asset)

    def start(self, stored: Identity, *, asset: bool = False) -> Partial:
        """Compare the cheap fields; the costly ones count at their best until compared."""
        query = self.query
        found = {name: COMPARISONS[name](query, stored) for name in CHEAP}
        bound = sum(self._weight(name, level) for name, level in found.items())
        bound += sum(self._best(name) for name in COSTLY)
        return Partial(stored, asset, found, bound + (ASSET_WEIGHT if asset else 0.0))

    def refine(self, partial: Partial) -> None:
        """Compare the next costly field: the bound falls to what it really weighs."""
        name = COSTLY[partial.compared]
        level = COMPARISONS[name](self.query, partial.stored)
        partial.found[name] = level
        partial.bound += self._weight(name, level) - self._best(name)
        partial.compared += 1

    def finish(self, partial: Partial) -> Verdict:
        """The candidate's verdict, every field compared: the same as ``evaluate``'s."""
        while not partial.complete:
            self.refine(partial)
        found = {name: partial.found[name] for name in COMPARISONS}
        weights = {name: self._weight(name, level) for name, level in found.items()}
        return _verdict(found, weights, self.thresholds, asset=partial.asset)

    def _best(self, name: str) -> float:
        """The most a field can weigh against this query (its best level)."""
        best = self._bests.get(name)
        if best is None:
            best = self._bests[name] = max(self._weight(name, lvl) for lvl in compare.LEVELS[name])
        return best


@dataclass(slots=True)
class Partial:
    """A candidate part-way through scoring: what is compared, and the most it can total."""

    stored: Identity
    asset: bool
    found: dict[str, str]
    bound: float  # the total at most (before rounding): compared fields plus the others' best
    compared: int = 0  # how many of COSTLY

    @property
    def complete(self) -> bool:
        return self.compared == len(COSTLY)

    def cannot_reach(self, bar: float) -> bool:
        """Whether the candidate's total is certainly under ``bar``."""
        return self.bound + BOUND_MARGIN < bar


def _verdict(
    found: dict[str, str], weights: dict[str, float], thresholds: Thresholds, *, asset: bool
) -> Verdict:
    if asset:
        found["asset"] = "exact"
        weights["asset"] = ASSET_WEIGHT
    total = round(sum(weights.values()), 2)
    accepted, rule = _decide(found, weights, total, thresholds)
    return Verdict(total=total, accepted=accepted, levels=found, weights=weights, rule=rule)


def _decide(
    found: dict[str, str], weights: dict[str, float], total: float, thresholds: Thresholds
) -> tuple[bool, str]:
    given, licence = found["given_name"], found["licence"]
    # A licence with one slip agrees: a mistyped digit is the commonest error in one.
    licence_agrees = licence in ("exact", "one_digit")
    if given in compare.GIVEN_OUTRIGHT and not licence_agrees and not _not_a_relative(found):
        return False, "the given name differs and no licence agrees (household guard)"
    # Both names swapped between the fields agree crosswise: no twin looks like that.
    names_agree = given in ("exact", "nickname", "close") or (
        given == "swapped" and found["family_name"] == "swapped"
    )
    if licence == compare.DIFFERENT and not names_agree:
        return False, "the given name only nearly agrees and the licence differs (household guard)"
    personal = sum(weights[name] for name in PERSONAL) + weights.get("asset", 0.0)
    if personal < thresholds.personal:
        return False, "given name, date of birth and licence carry too little evidence"
    if total < thresholds.match:
        return False, "the total weight is under the match threshold"
    return True, "the total weight reaches the match threshold"


# Family-name levels under which the two could be relatives sharing the surname.
_SHARED_SURNAME = ("exact", "close", "part", "phonetic", "near", compare.MISSING)


def _not_a_relative(found: dict[str, str]) -> bool:
    """Both names differ, and the date of birth and the street are the same: not the twin
    or sibling the guard is for (they share the surname), but the stored person under
    other names; a co-resident under other names born the very same day is a coincidence
    of about one in ten thousand. The street is required so that wrong names with a
    known e-mail do not tell a right birth date from a wrong one (tests/security)."""
    return (
        found["family_name"] not in _SHARED_SURNAME
        and found["date_of_birth"] == "exact"
        and found["street"] in ("exact", "close")
    )


def same_person(first: Identity, second: Identity) -> bool:
    """Whether two stored records describe one person (e.g. a contact and its lead)."""
    given = compare.given_name(first.first, second.first, ())
    return given in ("exact", "nickname", "close") and first.date_of_birth == second.date_of_birth
