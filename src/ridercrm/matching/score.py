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
- birth dates a generation apart under the household's e-mail or phone need an
  agreeing licence (a father and son of one name: Jr. and Sr.);
- generational suffixes that differ (Jr. and Sr.), or one on one side only without an
  agreeing birth date, need an agreeing licence;
- the personal fields (given name, date of birth, licence) must themselves carry
  some evidence: the shared household fields alone never make a match.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ridercrm.matching import compare
from ridercrm.matching.model import Model, default_model
from ridercrm.people.blocking import Identity

PERSONAL = ("given_name", "date_of_birth", "licence")
# A course the person booked, named in the request (docs/decisions.md, "Operations 3 and 4 (matching)": strong evidence).
ASSET_WEIGHT = 12.0

# The rules' reasons, as the verdict states them.
GUARD_OUTRIGHT = "the given name differs and no licence agrees (household guard)"
GUARD_NEAR = "the given name only nearly agrees and the licence differs (household guard)"
GUARD_GENERATION = (
    "birth dates a generation apart under the household's e-mail or phone, and no licence"
    " agrees (household guard)"
)
GUARD_TYPO = (
    "the given name agrees only as a slip or a truncation, and no e-mail, phone or licence"
    " agrees (household guard)"
)
GUARD_VARIANT = (
    "the given name agrees only as a nickname or by sound at the household's address, and no"
    " e-mail, phone or licence agrees (household guard)"
)
GUARD_NAMESAKE = (
    "only the names and the locality agree: the birth date differs beyond a slip and no"
    " e-mail, phone, street or licence agrees (namesake guard)"
)
GUARD_LICENCE = "licences on both sides differ at the household's address (household guard)"
GUARD_BIRTH_ADDRESS = (
    "birth dates that differ beyond a slip at the household's address, with other contact"
    " details, and no licence agrees (household guard)"
)
GUARD_RELATIVE = (
    "the given name only nearly agrees and the birth date differs in the household, and no"
    " licence agrees (household guard)"
)
GUARD_SUFFIX = (
    "the names' generational suffixes differ (Jr., Sr.), or one has a suffix and the birth"
    " dates do not agree, and no licence agrees (household guard)"
)
GUARD_TWIN_NAMES = (
    "the given names are two names (Antonio/Antonia, Gurpreet/Harpreet), not one mistyped,"
    " in the household, and no licence agrees (household guard)"
)
GUARD_STRANGER = (
    "only the given name, the birth date and the locality agree: the family name, street,"
    " e-mail and phone all differ, and no licence agrees (stranger guard)"
)
TOO_LITTLE = "given name, date of birth and licence carry too little evidence"
UNDER_THRESHOLD = "the total weight is under the match threshold"
REACHES_THRESHOLD = "the total weight reaches the match threshold"
# A licence with one slip agrees: a mistyped digit is the commonest error in one.
_LICENCE_AGREES = ("exact", "one_digit")
_GIVEN_AGREES = ("exact", "nickname", "close")
# Birth-date levels that do not tell one generation of a name from another.
_BIRTH_UNSETTLED = (compare.MISSING, "two_digits", compare.DIFFERENT)
# A given name of the other's name family, or sounding alike: what twins are often named.
_GIVEN_VARIANT = ("nickname", "phonetic", "near")


@dataclass(frozen=True)
class Thresholds:
    """The decision's settings (RIDERCRM_MATCH_*; README, Configuration; the same defaults)."""

    match: float = 18.0
    personal: float = 1.0
    ambiguity: float = 6.0


@dataclass(slots=True)
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
    """The comparison level of every field.

    A stored street or suburb is normalised only when the query has one to compare it
    with (without, the level is ``missing`` whatever the stored value).
    """
    return {
        "given_name": compare.given_name(query.first, stored.first, stored.last),
        "family_name": compare.family_name(query.last, stored.last, stored.first),
        "date_of_birth": compare.birth_date(query.date_of_birth, stored.date_of_birth),
        "email": compare.email(query.email, stored.email),
        "phone": compare.phones(query.phones, stored.phones),
        "licence": compare.one_digit(query.licence, stored.licence),
        "street": compare.street(query.street, stored.street if query.street else None),
        "postcode": compare.locality(
            query.postcode, stored.postcode, query.city, stored.city if query.city else None
        ),
    }


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
    return _verdict(
        found,
        weights,
        thresholds or Thresholds(),
        asset=asset,
        pair=_Pair(query, stored, _suffixes(query, stored)),
    )


def _suffixes(query: Personal, stored: Personal) -> tuple[str | None, str | None]:
    return (
        compare.generation_suffix(query.first, query.last),
        compare.generation_suffix(stored.first, stored.last),
    )


class Personal(Protocol):
    """What ``Scorer.refusal`` reads of a stored person (an ``Identity`` has it all)."""

    @property
    def first(self) -> tuple[str, ...]: ...
    @property
    def last(self) -> tuple[str, ...]: ...
    @property
    def date_of_birth(self) -> dt.date | None: ...
    @property
    def licence(self) -> str | None: ...
    @property
    def street(self) -> str | None: ...
    @property
    def postcode(self) -> str | None: ...
    @property
    def city(self) -> str | None: ...
    @property
    def email(self) -> str | None: ...
    @property
    def phones(self) -> frozenset[str]: ...


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
        self._suffix = compare.generation_suffix(query.first, query.last)
        self._weights: dict[str, dict[str, float]] = {name: {} for name in compare.LEVELS}

    def _weight(self, name: str, level: str) -> float:
        known = self._weights[name]
        weight = known.get(level)
        if weight is None:
            weight = known[level] = round(self.model.weight(name, level, self._values.get(name)), 2)
        return weight

    def evaluate(self, stored: Identity, *, asset: bool = False) -> Verdict:
        """The verdict ``evaluate(query, stored, ...)`` gives, with this scorer's model."""
        found = levels(self.query, stored)
        known = self._weights
        weights: dict[str, float] = {}
        for name, level in found.items():
            weight = known[name].get(level)
            weights[name] = self._weight(name, level) if weight is None else weight
        return _verdict(
            found,
            weights,
            self.thresholds,
            asset=asset,
            pair=_Pair(self.query, stored, self._suffixes(stored)),
        )

    def _suffixes(self, stored: Personal) -> tuple[str | None, str | None]:
        """``_suffixes(query, stored)``, the query's computed once."""
        return self._suffix, compare.generation_suffix(stored.first, stored.last)

    def ceiling(self, unshared: Collection[str]) -> float:
        """The highest total a stored person can score whose ``unshared`` fields do not
        agree exactly with the query's (and who booked no course the query names).

        Each field adds its best weight among the levels it can reach: ``missing`` alone
        when the query has no value, the postcode's levels without a suburb when the
        query has none (``compare.locality``), and not ``exact`` for an unshared field.
        The fields are added in ``evaluate``'s order and rounded as it rounds, so no
        verdict's total exceeds the ceiling.
        """
        query = self.query
        values: dict[str, object] = {
            "given_name": query.first,
            "family_name": query.last,
            "date_of_birth": query.date_of_birth,
            "email": query.email,
            "phone": query.phones,
            "licence": query.licence,
            "street": query.street,
        }
        total = 0.0
        for name, levels in compare.LEVELS.items():
            reachable: Sequence[str]
            if name == "postcode":
                reachable = _locality_levels(query)
            elif values[name]:
                reachable = [level for level in levels if level != "exact" or name not in unshared]
            else:
                reachable = [compare.MISSING]
            total += max(self._weight(name, level) for level in reachable)
        return round(total, 2)

    def refusal(self, stored: Personal) -> str | None:
        """The rule by which ``evaluate(stored)`` refuses before its total counts, or None.

        The household guard and the personal-evidence rule of ``_decide``, in its order,
        from the personal fields' levels alone (the family name, street, e-mail and phones
        only where the guard asks for them): most candidates of a whole-store scan are
        relatives and neighbours, refused here without comparing the other fields.
        None when ``evaluate`` would refuse only for the total, or accept (no course named).
        """
        query = self.query
        given = compare.given_name(query.first, stored.first, stored.last)
        licence = compare.one_digit(query.licence, stored.licence)
        if (
            given in compare.GIVEN_OUTRIGHT
            and licence not in _LICENCE_AGREES
            and (query.date_of_birth is None or query.date_of_birth != stored.date_of_birth)
        ):
            # _guard's first rule, and _not_a_relative fails on the birth date: most
            # pairs of a whole-store scan are refused here, before any other comparison
            return GUARD_OUTRIGHT
        found = _Lazy(
            {"given_name": given, "licence": licence},
            {
                "family_name": lambda: compare.family_name(query.last, stored.last, stored.first),
                "date_of_birth": lambda: compare.birth_date(
                    query.date_of_birth, stored.date_of_birth
                ),
                "email": lambda: compare.email(query.email, stored.email),
                "phone": lambda: compare.phones(query.phones, stored.phones),
                "street": lambda: _street(query, stored),
                "postcode": lambda: compare.locality(
                    query.postcode,
                    stored.postcode,
                    query.city,
                    stored.city if query.city else None,
                ),
            },
        )
        rule = _guard(found, _Pair(query, stored, self._suffixes(stored)))
        if rule is not None:
            return rule
        personal = (
            self._weight("given_name", found["given_name"])
            + self._weight("date_of_birth", found["date_of_birth"])
            + self._weight("licence", found["licence"])
        ) + 0.0  # no course named: _verdict's weights.get("asset", 0.0)
        if personal < self.thresholds.personal:
            return TOO_LITTLE
        return None


class _Lazy(Mapping[str, str]):
    """Comparison levels computed when first read: a refusal compares only the fields
    its rules ask for (most candidates of a whole-store scan are refused on the given
    name and licence alone)."""

    def __init__(self, known: dict[str, str], makers: dict[str, Callable[[], str]]) -> None:
        self._makers = makers
        self._found = known

    def __getitem__(self, name: str) -> str:
        level = self._found.get(name)
        if level is None:
            level = self._found[name] = self._makers[name]()
        return level

    def __iter__(self):  # type: ignore[no-untyped-def]
        return iter({**self._found, **self._makers})

    def __len__(self) -> int:
        return len({**self._found, **self._makers})


def _locality_levels(query: Identity) -> tuple[str, ...]:
    """The levels ``compare.locality`` can give the query's postcode and suburb."""
    if not query.postcode:
        return ("same_city", compare.MISSING) if query.city else (compare.MISSING,)
    if not query.city:
        return ("exact_no_city", "one_digit", compare.DIFFERENT, compare.MISSING)
    return compare.LEVELS["postcode"]


def _street(query: Identity, stored: Personal) -> str:
    """The street's level as ``levels`` compares it."""
    return compare.street(query.street, stored.street if query.street else None)


def _verdict(
    found: dict[str, str],
    weights: dict[str, float],
    thresholds: Thresholds,
    *,
    asset: bool,
    pair: _Pair,
) -> Verdict:
    if asset:
        found["asset"] = "exact"
        weights["asset"] = ASSET_WEIGHT
    total = round(sum(weights.values()), 2)
    accepted, rule = _decide(found, weights, total, thresholds, pair=pair)
    return Verdict(total=total, accepted=accepted, levels=found, weights=weights, rule=rule)


def _decide(
    found: dict[str, str],
    weights: dict[str, float],
    total: float,
    thresholds: Thresholds,
    *,
    pair: _Pair,
) -> tuple[bool, str]:
    """``Scorer.refusal`` applies the rules before the total in this order: a rule added or
    changed here is added or changed there (tests/matching/test_scoring.py compares them).
    """
    rule = _guard(found, pair)
    if rule is not None:
        return False, rule
    personal = (
        weights["given_name"] + weights["date_of_birth"] + weights["licence"]  # PERSONAL
    ) + weights.get("asset", 0.0)
    if personal < thresholds.personal:
        return False, TOO_LITTLE
    if total < thresholds.match:
        return False, UNDER_THRESHOLD
    return True, REACHES_THRESHOLD


@dataclass(frozen=True, slots=True)
class _Pair:
    """What the guard's rules read of the two records beyond their levels: the names,
    birth dates and mailbox, and the generational suffixes (``_suffixes``)."""

    query: Personal
    stored: Personal
    suffixes: tuple[str | None, str | None]

    @property
    def generation(self) -> bool:
        """Birth dates a generation apart, not a keying slip (``compare.generation_apart``)."""
        return compare.generation_apart(self.query.date_of_birth, self.stored.date_of_birth)

    @property
    def decades(self) -> bool:
        """Birth years a generation apart, slip or not (``compare.decades_apart``)."""
        return compare.decades_apart(self.query.date_of_birth, self.stored.date_of_birth)


def _guard(found: Mapping[str, str], pair: _Pair) -> str | None:
    """The household guard (docs/decisions.md, "Matching on real CRM traffic"): the rule
    that refuses the pair whatever its total, or None. ``found`` is read lazily by
    ``Scorer.refusal``: only the levels a rule needs are asked for, in this order.

    1. A given name that differs outright (or a short slip no keyboard or scanner makes,
       Mei/Wei; or it is the stored family name while the family names do not swap)
       needs an agreeing licence, unless ``_not_a_relative``.
    2. A given name that only nearly agrees, with a differing licence: another person.
    3. A given name that agrees only as a keyboard or scanner slip (or, at the
       household's address, only as ``close``: Huong/Phuong) while the query brings an
       e-mail or phone of its own that does not agree, and no licence agrees: the twin
       (Hui/Nui) or the sibling. A truncation (Sukh/Sukhdeep) needs the e-mail, a phone
       or the licence to agree, always.
    3b. A given name that only nearly agrees and a birth date that differs (or by two
       digits) in the household (its e-mail, phone or address), no licence agreeing: two
       personal fields off at once is another member (Anastasia/Anastasios).

    3c. A given name that agrees only as a nickname, variant or sound (Amy/Amelia) at the
       household's address, while the query's own e-mail or phone does not agree (nor the
       e-mail nearly) and no
       licence agrees: a twin or sibling named from one name family.
    3d. Given names that are evidently two names (``compare.two_names``: Antonio/Antonia,
       Gurpreet/Harpreet, John Paul/John Mark) under the household's e-mail or phone, no
       licence agreeing: twins, who share everything else, often a mailbox named after
       one of them.

    Rules 3-5 read the query's e-mail and phones: a query and a stored person with
    neither to compare (FEBRL's records: no e-mail, no phone) are left to the weights
    and rules 1-2, because there a given name, birth date or licence damaged outright is
    the data set's commonest damage, not a relative.
    4. Licences on both sides that differ beyond a slip at the household's address: two
       people, whatever the household shares, unless the person's own fields agree (the
       given name, not a nickname of it, or both names crosswise, and the very birth date: a relative has
       another name or date; the licence was re-issued). A licence that changed with an
       interstate move comes with another address, and is left to the weights.
    4b. A namesake: the birth date differs beyond a slip (``two_digits`` or
       ``different``), the query's e-mail and phone do not agree (nor the e-mail nearly,
       unless the date differs outright), the street
       does not agree and no licence agrees: only the names and the suburb are shared.
    4c. Generational suffixes (``pair.suffixes``: the query's and the stored one's, from
       ``compare.generation_suffix``) that differ (Jr. and Sr.), or one on one side only
       while the birth dates do not agree (missing, or beyond a slip), with no agreeing
       licence: the name is carried by two generations, and only a birth date or a
       licence tells which one this is. With a suffix on one side, years ten or more
       apart (``pair.decades``) are two generations even when one digit tells them apart
       (1965/1995): the suffix says the name has two bearers.
    4d. A stranger: the family name differs outright, the e-mail and phones were
       compared and differ (the e-mail not nearly), the street does not agree and no
       licence agrees: only the given name, the birth date and the locality are shared.
    5. Birth dates a generation apart (``compare.generation_apart``: not a keying slip)
       with no agreeing licence: another person under the household's e-mail or phone;
       birth dates that differ beyond a slip at the household's address, when the query
       carries contact details of its own (each member their own mailbox and mobile).
    """
    given, licence = found["given_name"], found["licence"]
    licence_agrees = licence in _LICENCE_AGREES
    if (
        not licence_agrees
        and (
            given in compare.GIVEN_OUTRIGHT
            or (given == "swapped" and found["family_name"] != "swapped")
        )
        and not _not_a_relative(found, (pair.query.last, pair.stored.last))
    ):
        return GUARD_OUTRIGHT
    # Both names swapped between the fields agree crosswise: no twin looks like that.
    names_agree_crosswise = given == "swapped" and found["family_name"] == "swapped"
    names_agree = given in _GIVEN_AGREES or names_agree_crosswise
    if licence == compare.DIFFERENT and not names_agree:
        return GUARD_NEAR
    if given in compare.GIVEN_TYPO or given == "close":
        contact = _contact(found)
        if not licence_agrees and contact != "agrees":
            if given in compare.GIVEN_PART:  # only where the rest of the evidence is strong
                return GUARD_TYPO
            # a slip in a given name is a typo unless the query brings contact details of
            # its own (without any, FEBRL's records, the weights decide)
            if contact == "differs" and (given != "close" or _same_address(found)):
                return GUARD_TYPO
    if (
        given in _GIVEN_VARIANT
        and not licence_agrees
        and _contact(found) == "differs"
        and found["email"] != "close"  # the person's own mailbox, mistyped
        and _same_address(found)
    ):
        # twins and siblings are often named from one name family (Amy/Amelia, Sam/Sami):
        # at the household's address a variant needs the person's own e-mail, phone or licence
        return GUARD_VARIANT
    if (
        not licence_agrees
        and given not in ("exact", "nickname")
        and not names_agree_crosswise
        and found["date_of_birth"] in (compare.DIFFERENT, "two_digits")
        and _contact(found) != "missing"
        and (_contact(found) == "agrees" or _same_address(found))
    ):
        return GUARD_RELATIVE
    if (
        given != "exact"
        and not licence_agrees
        and _contact(found) == "agrees"
        and compare.two_names(pair.query.first, pair.stored.first)
    ):
        # twins are named as two forms of one name (Antonio/Antonia, Gurpreet/Harpreet,
        # John Paul/John Mark) and share the household's e-mail, phone and address
        return GUARD_TWIN_NAMES
    if (
        licence == compare.DIFFERENT
        and not (
            (given in ("exact", "close") or names_agree_crosswise)
            and found["date_of_birth"] == "exact"
        )
        and _contact(found) != "missing"
        and _same_address(found)
    ):
        return GUARD_LICENCE
    if licence_agrees:
        return None
    suffixes = pair.suffixes
    if suffixes[0] != suffixes[1] and (
        (suffixes[0] and suffixes[1]) or pair.decades or found["date_of_birth"] in _BIRTH_UNSETTLED
    ):
        return GUARD_SUFFIX
    # A namesake: a common name in one suburb, born another day, with a mailbox, mobile and
    # street of their own. The names and the postcode alone never make a match.
    if (
        found["date_of_birth"] in (compare.DIFFERENT, "two_digits")
        and _contact(found) == "differs"
        # a namesake's mailbox is often made of the same name (stefano.rossi@ at another
        # provider): one slip from it is no evidence when the birth date differs outright
        and (found["email"] != "close" or found["date_of_birth"] == compare.DIFFERENT)
        and found["street"] not in ("exact", "close", "partial")
    ):
        return GUARD_NAMESAKE
    # A stranger who shares a given name, a birth date and a suburb: the family name,
    # the street, the e-mail and the phone all differ (a woman who married keeps her
    # phone or her street; one who also moved is not found by the suburb either).
    if (
        found["family_name"] == compare.DIFFERENT
        and _contact(found) == "differs"
        and found["email"] != "close"
        and found["street"] not in ("exact", "close", "partial")
    ):
        return GUARD_STRANGER
    # A parent and a child of one name share the household's e-mail and phone, and the
    # birth date alone tells them apart: a date a generation off is not a slip.
    generation = pair.generation
    if generation and (found["email"] == "exact" or found["phone"] == "exact"):
        return GUARD_GENERATION
    # Each with their own mailbox and mobile at the household's address: a birth date
    # that differs beyond a slip is another member's. Without any e-mail or phone to
    # compare (FEBRL's records) the rule stays out: there a date replaced outright is
    # the commonest damage (docs/decisions.md, "Matching on real CRM traffic").
    if (
        (generation or found["date_of_birth"] == compare.DIFFERENT)
        and found["email"] != "exact"
        and found["phone"] != "exact"
        and (found["email"] != compare.MISSING or found["phone"] != compare.MISSING)
        and _same_address(found)
    ):
        return GUARD_BIRTH_ADDRESS
    return None


def _contact(found: Mapping[str, str]) -> str:
    """The e-mail and phones together: ``agrees`` (either exact), ``differs`` (compared,
    neither exact) or ``missing`` (nothing to compare)."""
    email, phone = found["email"], found["phone"]
    if email == "exact" or phone == "exact":
        return "agrees"
    return "missing" if email == compare.MISSING and phone == compare.MISSING else "differs"


def _same_address(found: Mapping[str, str]) -> bool:
    """The household's address: the street agrees, or with no street the postcode does."""
    street = found["street"]
    if street in ("exact", "close"):
        return True
    return street == compare.MISSING and found["postcode"] in ("exact", "exact_no_city")


# Family-name levels under which the two could be relatives sharing the surname.
_SHARED_SURNAME = ("exact", "close", "part", "phonetic", "near", compare.MISSING)


def _not_a_relative(
    found: Mapping[str, str], surnames: tuple[Sequence[str], Sequence[str]]
) -> bool:
    """Both names differ, and the date of birth and the street are the same: not the twin
    or sibling the guard is for (they share the surname), but the stored person under
    other names; a co-resident under other names born the very same day is a coincidence
    of about one in ten thousand. The street is required so that wrong names with a
    known e-mail do not tell a right birth date from a wrong one (tests/security).

    A short family name one slip from the other (Lee/Lse, Ng/Gn, Ho/To: ``different`` as
    a level, since one letter of two or three is as likely another name) is the shared
    surname mistyped: the twin, born the same day at the same street, not a stranger.

    The query's own e-mail and phones must not differ from the stored ones (they agree,
    or there is none to compare, as in FEBRL): someone else at the street, born that day,
    brings a mailbox and mobile of their own."""
    # the birth date first: the cheapest to compare, and it settles most pairs of a
    # whole-store scan (Scorer.refusal reads the levels lazily, in this order)
    return (
        found["date_of_birth"] == "exact"
        and found["family_name"] not in _SHARED_SURNAME
        and found["street"] in ("exact", "close")
        and _contact(found) != "differs"
        and not compare.one_slip_apart(*surnames)
    )


def same_person(first: Identity, second: Identity) -> bool:
    """Whether two stored records describe one person (e.g. a contact and its lead)."""
    given = compare.given_name(first.first, second.first, ())
    return given in ("exact", "nickname", "close") and first.date_of_birth == second.date_of_birth
