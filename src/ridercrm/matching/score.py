"""Scoring a candidate against a query, and the decision rule (DESIGN §8). Pure.

A match needs agreement on who the person is (given and family names, allowing
nicknames, initials and typos, in either order) and on the date of birth (exact, or
one plausible slip), backed by at least one more identifier. A slipped date of birth
or a given name known only by its initial needs a strong identifier (e-mail, phone,
licence, street address, a booked course); an exact date may rest on the postcode.
A one-letter slip in a short name (under four letters) is accepted only when the other
name and the date of birth are exact and two strong identifiers agree. A given name that
only nearly agrees (a typo, an initial) is refused when the licence numbers differ:
twins share everything in a household but their licences.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ridercrm.matching import compare
from ridercrm.matching.compare import Comparison
from ridercrm.matching.keys import Identity

GIVEN_NAME_MIN = 0.75
FAMILY_NAME_MIN = 0.85
# Two accepted candidates closer than this, who look like different people, are
# not told apart: the answer is no match rather than a guess (the family guard).
AMBIGUITY_MARGIN = 0.08
SWAPPED_PENALTY = 0.97

WEIGHTS = {
    "given_name": 0.3,
    "family_name": 0.3,
    "date_of_birth": 0.25,
    "email": 0.05,
    "phone": 0.05,
    "licence": 0.05,
    "street": 0.03,
    "postcode": 0.02,
    "asset": 0.2,
}
STRONG = ("email", "phone", "licence", "street", "asset")


@dataclass
class Verdict:
    """What a candidate scored, whether it passes the rule, and why."""

    score: float
    accepted: bool
    reasons: dict[str, str] = field(default_factory=dict)
    rule: str = ""


def _names(query: Identity, stored: Identity) -> tuple[Comparison, Comparison, bool]:
    given = compare.given_names(query.first, stored.first)
    family = compare.family_names(query.last, stored.last)
    swapped_given = compare.given_names(query.last, stored.first)
    swapped_family = compare.family_names(query.first, stored.last)
    direct = given.score + family.score
    swapped = (swapped_given.score + swapped_family.score) * SWAPPED_PENALTY
    if swapped > direct:
        return swapped_given, swapped_family, True
    return given, family, False


def evaluate(query: Identity, stored: Identity, *, asset: bool = False) -> Verdict:
    """Compare field by field and apply the decision rule."""
    given, family, swapped = _names(query, stored)
    street = compare.same_value(query.street, stored.street)
    postcode = compare.same_value(query.postcode, stored.postcode)
    checks: dict[str, Comparison] = {
        "given_name": given,
        "family_name": family,
        "date_of_birth": compare.birth_dates(query.date_of_birth, stored.date_of_birth),
        "email": compare.same_value(query.email, stored.email),
        "phone": compare.any_same(query.phones, stored.phones),
        "licence": compare.same_value(query.licence, stored.licence),
        # a street counts when the postcode agrees too: "1 Main Street" is in every town
        "street": street
        if postcode.agrees
        else compare.MISSING
        if not street.agrees
        else compare.DIFFERS,
        "postcode": postcode,
        "asset": Comparison(1.0, "a course in the request belongs to this person")
        if asset
        else compare.MISSING,
    }
    score = sum(WEIGHTS[name] * check.score for name, check in checks.items())
    if swapped:
        score *= SWAPPED_PENALTY
    reasons = {name: check.reason for name, check in checks.items()}
    if swapped:
        reasons["names"] = "given and family names swapped"
    accepted, rule = _decide(checks)
    return Verdict(score=round(score, 4), accepted=accepted, reasons=reasons, rule=rule)


def _decide(checks: dict[str, Comparison]) -> tuple[bool, str]:
    given, family, dob = checks["given_name"], checks["family_name"], checks["date_of_birth"]
    strong = [name for name in STRONG if checks[name].agrees]
    near_given = given.reason in ("typo", "initial", compare.SHORT_TYPO)
    if near_given and checks["licence"].reason == "differs":
        # Household members share e-mail, phone and address but never a licence; a
        # given name that only nearly agrees (Mei, Wei) with another licence is another person.
        return False, "the given name only nearly agrees and the licence differs"
    if compare.SHORT_TYPO in (given.reason, family.reason):
        # A slip in a two- or three-letter name is as likely another name (Tom, Tim),
        # so everything else must agree: the other name, the date, two identifiers.
        other = family if given.reason == compare.SHORT_TYPO else given
        if other.reason == "exact" and dob.reason == "exact" and len(strong) >= 2:
            return True, f"one slip in a short name; all else agrees, backed by {', '.join(strong)}"
        return (
            False,
            "a slip in a short name needs the other name, the date of birth and two identifiers",
        )
    if given.score < GIVEN_NAME_MIN or family.score < FAMILY_NAME_MIN:
        return False, "names do not agree"
    initial_only = given.reason == "initial"
    if dob.reason == "exact":
        if strong:
            return True, f"names and date of birth agree, backed by {', '.join(strong)}"
        if checks["postcode"].agrees and not initial_only:
            return True, "names and date of birth agree, backed by postcode"
        return False, "no identifier backs the names and date of birth"
    if dob.agrees:
        if strong and not initial_only:
            return (
                True,
                f"names agree, date of birth slipped ({dob.reason}), backed by {', '.join(strong)}",
            )
        return False, "a slipped date of birth needs a strong identifier"
    if dob.reason == "missing":
        if len(strong) >= 1 and not initial_only and given.score >= 0.85:
            return True, f"names agree, no date of birth to compare, backed by {', '.join(strong)}"
        return False, "without a date of birth the names need a strong identifier"
    return False, "date of birth differs"


def same_person_signature(first: Identity, second: Identity) -> bool:
    """Whether two stored records describe one person (e.g. a contact and its lead)."""
    return compare.given_names(first.first, second.first).score >= 0.92 and (
        first.date_of_birth == second.date_of_birth
    )
