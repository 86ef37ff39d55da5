import datetime as dt
import itertools
import random
from typing import Any

import pytest

from ridercrm.matching import compare, score
from ridercrm.matching.model import default_model
from ridercrm.matching.nicknames import same_name_family
from ridercrm.matching.score import Thresholds, Verdict
from ridercrm.matching.score import evaluate as evaluate_with
from ridercrm.people import normalize
from ridercrm.people.blocking import Identity, query_keys, stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.normalize import name_tokens

ANN: dict[str, Any] = {
    "first_name": "Ann",
    "last_name": "Nguyen",
    "date_of_birth": dt.date(1999, 4, 12),
    "email": "ann.nguyen@example.com",
    "phones": ("0412 345 678",),
    "drivers_license": "L1234567",
    "street": "12 Main St",
    "postcode": "3064",
}
MODEL = default_model()


def person(**changes: Any) -> Identity:
    values = {**ANN, **changes}
    return Identity.of(**values)


def evaluate(query: Identity, stored: Identity) -> Verdict:
    return evaluate_with(query, stored, model=MODEL, thresholds=Thresholds())


@pytest.mark.parametrize(
    ("query", "stored", "level"),
    [
        ("William", "william", "exact"),
        ("Bill", "William", "nickname"),
        ("Kate", "Katherine", "nickname"),
        ("Katherine", "Kathrine", "close"),
        ("Micheal", "Michael", "close"),
        ("Mary Ann", "Mary", "nickname"),
        ("Satte Rley", "Satterley", "exact"),
        ("Jakob", "Jacob", "close"),
        ("Kristofer", "Christopher", "phonetic"),
        ("J", "John", "initial"),
        ("Wei", "Mei", "short_slip"),
        ("Joh", "John", "close"),
        ("Miaq", "Mia", "close"),
        ("Nguyen", "Ann", "swapped"),
        ("Jack", "Jake", "phonetic"),
        ("Ann", "Bob", "different"),
        ("", "Bob", "missing"),
    ],
)
def test_given_name_levels(query: str, stored: str, level: str) -> None:
    assert compare.given_name(name_tokens(query), name_tokens(stored), ("nguyen",)) == level


@pytest.mark.parametrize(
    ("query", "stored", "level"),
    [
        ("Nguyen", "nguyen", "exact"),
        ("Ngyuen", "Nguyen", "close"),
        ("Nguyen-Tran", "Nguyen", "part"),
        ("Tompson", "Thompson", "close"),
        ("Smyth", "Smith", "close"),
        ("Ann", "Nguyen", "swapped"),
        ("Smith", "Jones", "different"),
    ],
)
def test_family_name_levels(query: str, stored: str, level: str) -> None:
    assert compare.family_name(name_tokens(query), name_tokens(stored), ("ann",)) == level


@pytest.mark.parametrize(
    ("query", "level"),
    [
        (dt.date(1999, 4, 12), "exact"),
        (dt.date(1999, 12, 4), "day_month_swapped"),
        (dt.date(1999, 4, 13), "one_digit"),
        (dt.date(1998, 4, 12), "one_digit"),
        (dt.date(2000, 4, 12), "year_off"),
        (dt.date(1999, 5, 22), "two_digits"),
        (dt.date(1975, 1, 1), "different"),
        (None, "missing"),
    ],
)
def test_birth_date_levels(query: dt.date | None, level: str) -> None:
    assert compare.birth_date(query, dt.date(1999, 4, 12)) == level


@pytest.mark.parametrize(
    ("query", "apart"),
    [
        (dt.date(1968, 5, 2), False),
        (dt.date(1996, 11, 23), True),  # 28 years
        (dt.date(1954, 1, 30), True),  # 14 years
        (dt.date(1955, 12, 31), True),  # 13 years: a step-parent's and a child's
        (dt.date(1958, 1, 1), True),  # 10 years
        (dt.date(1959, 12, 31), False),  # 9 years
        (dt.date(1998, 5, 2), False),  # one digit: a slip, not a son
        (dt.date(1948, 5, 2), False),  # one digit, twenty years before
        (dt.date(1998, 5, 3), True),  # two digits
        (None, False),
    ],
)
def test_birth_dates_a_generation_apart(query: dt.date | None, apart: bool) -> None:
    assert compare.generation_apart(query, dt.date(1968, 5, 2)) is apart


def test_identifier_levels() -> None:
    assert compare.one_digit("L1234567", "L1234567") == "exact"
    assert compare.one_digit("L1234568", "L1234567") == "one_digit"
    assert compare.one_digit("Q7712000", "L1234567") == "different"
    assert compare.one_digit("3064", "3046") == "one_digit"
    assert compare.street("6 meredith c ircuit", "6 meredith circuit") == "close"
    assert compare.street("biffin sreet", "biffin street") == "close"
    assert compare.street("meredith circuit", "6 meredith circuit") == "close"
    assert compare.street("1 main street", "99 other road") == "different"


def test_street_lines_swapped_or_one_replaced() -> None:
    """FEBRL's two address lines: swapped is close; one replaced or dropped is partial."""

    def street(query: str, stored: str) -> str:
        return compare.street(normalize.street(query), normalize.street(stored))

    assert (
        street("15 Tathra Est Hawkesbury Crescent", "15 Hawkesbury Crescent Tathra East") == "close"
    )
    assert street("10 Minora Sumner Alace", "10 Sumner Place Minora") == "close"
    assert street("3 Corona Place Sweet W Atdrs", "3 Spinifex Street Sweet Waters") == "partial"
    assert street("Goodman Street", "32 Goodman Street Yambira") == "partial"
    # a shared street type or another number says nothing
    assert street("12 Park Street", "40 Park Road") == "different"
    assert street("3 Corona Place", "3 Spinifex Place") == "different"
    assert street("7 Bay Road Sweet Waters", "3 Corona Place Sweet Waters") == "different"


def test_a_neighbours_house_number_is_another_street_address() -> None:
    """12 and 18 Main St are as alike as strings as a typo, but they are two houses: the
    numbers are compared before the strings are."""
    assert compare.street(normalize.street("14 Main St"), normalize.street("12 Main St")) == (
        "different"
    )
    assert compare.street("18 main street", "12 main street") == "different"
    assert compare.street("unit 3 12 main street", "unit 4 12 main street") == "different"
    # the number missing on one side is still the same street
    assert compare.street("main street", "12 main street") == "close"


@pytest.mark.parametrize(
    ("first", "second"),
    [("bill", "william"), ("davo", "david"), ("shazza", "sharon"), ("gazza", "gary"),
     ("bazza", "barry"), ("robbo", "robert"), ("lachie", "lachlan"), ("jono", "jonathan")],
)  # fmt: skip
def test_nicknames_from_the_data_set_and_australian_diminutives(first: str, second: str) -> None:
    assert same_name_family(first, second)
    assert same_name_family(second, first)


def test_unrelated_names_are_no_nicknames() -> None:
    assert not same_name_family("ann", "bob")
    assert not same_name_family("gary", "sharon")


def test_each_field_adds_its_weight_to_the_total() -> None:
    verdict = evaluate(person(first_name="Anne"), person())
    assert verdict.levels["given_name"] == "nickname"
    assert verdict.total == pytest.approx(sum(verdict.weights.values()), abs=0.05)
    assert verdict.weights["date_of_birth"] > 0
    damaged = evaluate(person(date_of_birth=dt.date(1975, 1, 1)), person())
    assert damaged.weights["date_of_birth"] < 0
    assert damaged.total < verdict.total


def test_a_common_value_is_weaker_evidence_than_a_rare_one() -> None:
    from ridercrm.matching.model import Model, TermFrequencies

    model = Model.from_json(default_model().to_json())  # a copy: the default is shared
    model.tf["family_name"] = TermFrequencies(values={"smith": 0.01}, rare=0.00001)
    assert model.weight("family_name", "exact", "smith") < model.weight(
        "family_name", "exact", "tschitrpig"
    )


@pytest.mark.parametrize(
    "query",
    [
        person(first_name="Anne"),
        person(first_name="A"),
        person(last_name="Ngyuen"),
        person(first_name="Nguyen", last_name="Ann"),
        person(date_of_birth=dt.date(1999, 12, 4)),
        person(date_of_birth=dt.date(2000, 4, 12)),
        person(email="new@example.com"),
        person(phones=()),
        person(street="99 Other Rd", postcode="4000"),
        person(first_name="ANN", last_name="nguyen", phones=("+61 412 345 678",)),
        # a family name replaced outright, the rest agreeing
        person(last_name="Smith", email="new@example.com"),
        # two fields damaged at once
        person(last_name="Ngyuen", date_of_birth=dt.date(1999, 4, 21), email="x@example.com"),
    ],
)
def test_damaged_queries_are_accepted(query: Identity) -> None:
    verdict = evaluate(query, person())
    assert verdict.accepted, verdict


def test_a_replaced_given_name_needs_an_agreeing_licence() -> None:
    replaced = person(first_name="Chloe", email="x@example.com", phones=())
    assert evaluate(replaced, person()).accepted
    verdict = evaluate(person(first_name="Chloe", drivers_license=None), person())
    assert not verdict.accepted
    assert verdict.rule == "the given name differs and no licence agrees (household guard)"


def test_a_parent_and_child_sharing_every_contact_detail_are_two_people() -> None:
    parent = person(drivers_license=None)
    child = person(first_name="Tom", date_of_birth=dt.date(2012, 3, 9), drivers_license=None)
    assert not evaluate(child, parent).accepted
    assert not evaluate(parent, child).accepted
    # a father and son of one name: the shared household fields alone never match
    son = person(first_name="Ann", date_of_birth=dt.date(2012, 3, 9), drivers_license="X99")
    assert not evaluate(son, person()).accepted


GENERATION_RULE = (
    "birth dates a generation apart under the household's e-mail or phone, and no licence"
    " agrees (household guard)"
)


def test_a_father_and_son_of_one_name_are_two_people() -> None:
    """Jr. and Sr.: one given name, surname, address, e-mail and phone, and no licence to
    tell them apart; the birth dates, a generation apart, do."""
    father = person(first_name="John", last_name="Smith", date_of_birth=dt.date(1968, 5, 2))
    son: dict[str, Any] = {
        "first_name": "John", "last_name": "Smith", "date_of_birth": dt.date(1996, 11, 23),
        "drivers_license": None,
    }  # fmt: skip
    for query, stored in ((person(**son), father), (father, person(**son))):
        verdict = evaluate(query, stored)
        assert verdict.levels["given_name"] == verdict.levels["email"] == "exact"
        assert verdict.total >= Thresholds().match  # the evidence alone would match
        assert not verdict.accepted
        assert verdict.rule == GENERATION_RULE
    # the phone alone is the household's too
    assert evaluate(person(**son, email="john@example.com"), father).rule == GENERATION_RULE
    # a licence that agrees says the date was mistyped: the father himself
    assert evaluate(person(**{**son, "drivers_license": "L1234567"}), father).accepted


@pytest.mark.parametrize(
    "born",
    [
        dt.date(1995, 3, 12),  # one digit: the decade, thirty years off
        dt.date(1965, 3, 21),  # day digits swapped
        dt.date(1966, 3, 12),  # a year off
        dt.date(1967, 4, 12),  # two digits, two years apart
        dt.date(1965, 12, 3),  # day and month swapped
    ],
)
def test_a_slip_in_the_birth_date_is_still_the_same_person(born: dt.date) -> None:
    stored = person(first_name="John", last_name="Smith", date_of_birth=dt.date(1965, 3, 12))
    query = person(first_name="John", last_name="Smith", date_of_birth=born, drivers_license=None)
    assert not compare.generation_apart(born, dt.date(1965, 3, 12))
    assert evaluate(query, stored).accepted


def test_a_date_a_generation_off_without_a_shared_contact_is_left_to_the_weights() -> None:
    """Without the household's e-mail or phone the rule does not apply: FEBRL's
    duplicates, whose birth dates are often replaced outright, stay found."""
    stored = person(date_of_birth=dt.date(1965, 3, 12), email=None, phones=())
    replaced = person(
        date_of_birth=dt.date(1993, 8, 27), email="new@example.com", phones=(),
        drivers_license=None,
    )  # fmt: skip
    verdict = evaluate(replaced, stored)
    assert compare.generation_apart(dt.date(1993, 8, 27), dt.date(1965, 3, 12))
    assert verdict.accepted, verdict


def test_a_stranger_is_refused() -> None:
    stranger = Identity.of(
        first_name="Bob", last_name="Jones", date_of_birth=dt.date(1980, 1, 1),
        email="bob@example.com", phones=(), drivers_license=None, street="1 High St",
        postcode="2000",
    )  # fmt: skip
    assert not evaluate(stranger, person()).accepted


def test_a_licence_with_one_slip_agrees_and_swapped_names_are_no_twin() -> None:
    renamed = person(first_name="Caitlin", drivers_license="L1243567", email="x@example.com")
    assert evaluate(renamed, person()).accepted
    swapped = person(first_name="Nguyen", last_name="Ann", drivers_license="Z9999999")
    assert evaluate(swapped, person()).accepted
    # a given name replaced and another licence: a sibling, not a typo
    sibling = person(first_name="Caitlin", drivers_license="Z9999999")
    assert not evaluate(sibling, person()).accepted


def test_an_unstored_twin_with_a_near_name_and_own_licence_is_not_merged() -> None:
    mei = person(first_name="Mei", last_name="Li", drivers_license="U50432")
    wei = person(first_name="Wei", last_name="Li", drivers_license="Q77120")
    assert not evaluate(wei, mei).accepted
    # without licences, one letter apart in a short name is as likely a twin
    assert not evaluate(
        person(first_name="Wei", last_name="Li", drivers_license=None),
        person(first_name="Mei", last_name="Li", drivers_license=None),
    ).accepted
    # the same slip with the same licence is Mei mistyped
    assert evaluate(
        person(first_name="Wei", last_name="Li", drivers_license="U50432"), mei
    ).accepted


def _damaged(field: str) -> dict[str, Any]:
    return {
        "first_name": {"first_name": "Zebedee"},
        "last_name": {"last_name": "Oyelaran"},
        "date_of_birth": {"date_of_birth": dt.date(1961, 10, 30)},
        "postcode": {"postcode": "7250"},
        "street": {"street": "77 Quorn Parade"},
        "licence": {"drivers_license": "Z9999999"},
    }[field]


@pytest.mark.parametrize(
    "fields",
    list(itertools.combinations(
        ("first_name", "last_name", "date_of_birth", "postcode", "street", "licence"), 2
    )),
)  # fmt: skip
def test_any_two_damaged_fields_leave_a_shared_blocking_key(fields: tuple[str, str]) -> None:
    # E-mail and phone are never shared here: the keys must come from the rest.
    changes: dict[str, Any] = {"email": "other@example.com", "phones": ()}
    for field in fields:
        changes.update(_damaged(field))
    assert query_keys(person(**changes)) & stored_keys(person())


def test_a_slip_in_a_short_name_that_makes_no_name_is_a_typo() -> None:
    """Letters swapped (Wil/Wli) or the only vowel hit (Max/Msx): no twin is named so."""
    for stored, typed in (("Wil", "Wli"), ("Max", "Msx"), ("Zac", "Zqc"), ("Ka", "Kz")):
        query = person(first_name=typed, last_name="Li", drivers_license=None)
        assert compare.given_name(name_tokens(typed), name_tokens(stored), ()) == "close"
        assert evaluate(query, person(first_name=stored, last_name="Li")).accepted
    # Ben/Ken and Mei/Wei are both names: the household guard still wants the licence
    assert compare.given_name(("ken",), ("ben",), ()) == "short_slip"
    assert compare.given_name(("wei",), ("mei",), ()) == "short_slip"


def test_postcode_and_suburb_are_one_comparison() -> None:
    """The suburb refines the postcode's level; it is never a second, independent field."""
    assert compare.locality("3064", "3064", "craigieburn", "craigieburn") == "exact"
    assert compare.locality("3064", "3064", "craigieburn", "craigeburn") == "exact"
    assert compare.locality("3064", "3064", None, "craigieburn") == "exact_no_city"
    assert compare.locality("3064", "3064", "mickleham", "craigieburn") == "exact_other_city"
    assert compare.locality("3046", "3064", "craigieburn", "craigieburn") == "one_digit_same_city"
    assert compare.locality("3046", "3064", "mickleham", "craigieburn") == "one_digit"
    assert compare.locality("2000", "3064", "craigieburn", "craigieburn") == "same_city"
    assert compare.locality("2000", "3064", "sydney", "craigieburn") == "different"
    assert compare.locality("2000", None, "sydney", None) == "missing"
    assert normalize.city("Mt Isa") == normalize.city("mount isa") == "mountisa"
    query = person(city="Craigieburn", email="other@example.com", phones=())
    verdict = evaluate(query, person(city="Craigieburn"))
    assert verdict.levels["postcode"] == "exact"
    assert "city" not in verdict.levels


def test_a_household_member_in_the_same_suburb_is_still_refused() -> None:
    sister = person(first_name="Linh", drivers_license=None, city="Epping")
    assert not evaluate(sister, person(city="Epping")).accepted


def test_a_person_who_moved_is_found_by_names_and_birth_date() -> None:
    """New street, postcode and suburb, no shared identifier: FEBRL has no movers, people do."""
    moved = person(
        street="9 Banksia Cres", postcode="2250", city="Gosford", email="new@example.com",
        phones=(), drivers_license=None,
    )  # fmt: skip
    verdict = evaluate(moved, person(city="Epping", email=None))
    assert verdict.levels["postcode"] == "different"
    assert verdict.accepted


def test_both_names_other_and_the_same_birth_date_is_no_relative() -> None:
    """The household guard is for relatives, who share the surname (twins: the birth date too)."""
    renamed = person(first_name="Caitlin", last_name="Okafor", drivers_license=None)
    verdict = evaluate(renamed, person())
    assert verdict.levels["given_name"] == "different"
    assert verdict.levels["family_name"] == "different"
    assert verdict.accepted
    # a sister under the same surname still needs the licence
    assert not evaluate(person(first_name="Caitlin", drivers_license=None), person()).accepted
    # a partner under other names, born another day, is another person
    partner = person(
        first_name="Caitlin", last_name="Okafor", date_of_birth=dt.date(1997, 8, 30),
        drivers_license=None,
    )  # fmt: skip
    assert not evaluate(partner, person()).accepted
    # wrong names with the e-mail and the birth date, but not the street: no oracle for
    # the birth date (tests/security/test_explain.py)
    probe = person(first_name="Mallory", last_name="Probe", street=None, drivers_license=None)
    assert not evaluate(probe, person()).accepted


# --- Scoring many candidates for one query (score.Scorer, service.rank) -----------------

GIVEN = [
    "Ann",
    "Anne",
    "Annie",
    "Anna",
    "Ana",
    "Hannah",
    "Liam",
    "Lia",
    "Mei",
    "Wei",
    "A",
    "Christopher",
    "Kristopher",
    "Chris",
    "Nguyen",
    "Tom",
    "Tim",
    "Elizabeth",
    "Liz",
    "Christina",
    "Christos",
    "Gurpreet",
    "Harpreet",
    "Ann Maree",
    "Ann Louise",
    "",
]
FAMILY = [
    "Nguyen",
    "Ngyuen",
    "Nguyen-Tran",
    "Tran",
    "Smith",
    "Smyth",
    "Ann",
    "Liam",
    "Schmidt",
    "Oconnor",
    "O'Connor",
    "Nguyen Jr",
    "Nguyen Snr",
]
STREETS = [
    "12 Main St",
    "12 Main Street",
    "Unit 3 12 Main St",
    "14 Main St",
    "12 Mian St",
    "Kings Court 12 Main St",
    "7 Biffin Sreet",
    "",
]
CITIES = ["Craigieburn", "Craigeburn", "Roxburgh Park", ""]
POSTCODES = ["3064", "3046", "3065", "2000", ""]
DATES = [
    dt.date(1999, 4, 12),
    dt.date(1999, 12, 4),
    dt.date(1999, 4, 13),
    dt.date(1998, 4, 12),
    dt.date(1989, 4, 12),
    dt.date(1975, 1, 1),
    None,
]
EMAILS = ["ann.nguyen@example.com", "ann.nguyen@exmaple.com", "a.tran@example.com", ""]
PHONES = ["0412 345 678", "0412 345 679", ""]
LICENCES = ["L1234567", "L1234568", "L7654321", ""]  # fmt: skip


def _random_identity(rng: Any) -> Identity:
    return Identity.of(
        first_name=rng.choice(GIVEN) or None,
        last_name=rng.choice(FAMILY),
        date_of_birth=rng.choice(DATES),
        email=rng.choice(EMAILS) or None,
        phones=(rng.choice(PHONES) or None, rng.choice(PHONES) or None),
        drivers_license=rng.choice(LICENCES) or None,
        street=rng.choice(STREETS) or None,
        postcode=rng.choice(POSTCODES) or None,
        city=rng.choice(CITIES) or None,
    )


def _trained_model() -> Any:
    """The default model with term frequencies, as a trained store's (exact names vary)."""
    from ridercrm.matching.model import Model, TermFrequencies

    model = Model.from_json(default_model().to_json())
    model.tf["given_name"] = TermFrequencies(values={"ann": 0.02, "liam": 0.01}, rare=0.0001)
    model.tf["family_name"] = TermFrequencies(values={"nguyen": 0.03, "smith": 0.01}, rare=1e-5)
    model.tf["postcode"] = TermFrequencies(values={"3064": 0.004}, rare=0.0002)
    return model


@pytest.mark.parametrize("model", [MODEL, _trained_model()], ids=["default", "trained"])
def test_a_scorer_gives_evaluates_verdicts(model: Any) -> None:
    """Scorer (weights once per query, as the service scores many candidates) gives
    score.evaluate's verdict, field for field, on varied pairs and with term frequencies."""
    import random

    from ridercrm.matching.score import Scorer

    rng = random.Random(20261122)
    thresholds = Thresholds()
    levels_seen: set[tuple[str, str]] = set()
    for _query in range(150):
        query = _random_identity(rng)
        scorer = Scorer(query, model=model, thresholds=thresholds)
        for _stored in range(40):
            stored = _random_identity(rng)
            asset = rng.random() < 0.1
            expected = evaluate_with(query, stored, model=model, thresholds=thresholds, asset=asset)
            assert scorer.evaluate(stored, asset=asset) == expected
            levels_seen.update(expected.levels.items())
    assert len(levels_seen) > 40  # the pairs reach most levels of most fields


def _variants(value: Any) -> list[Any]:
    """The value, slips of it, other values and none: the levels a field can reach."""
    if isinstance(value, dt.date):
        return [value, value.replace(day=value.month, month=value.day), value.replace(year=value.year + 1),
                value.replace(day=value.day + 1), dt.date(1950, 1, 1), None]  # fmt: skip
    if isinstance(value, tuple):
        return [value, ("0412 345 679",), ()]
    if value.isdigit():  # a postcode
        return [value, value[:-1] + "5", "2000", None]
    return [value, value[:-1] + "x", value[1:], "Zyx Qwv 9", None]


@pytest.mark.parametrize("unshared", [("email", "phone", "licence"), ()])
def test_no_stored_person_whose_unshared_fields_differ_scores_above_the_ceiling(
    unshared: tuple[str, ...],
) -> None:
    """Scorer.ceiling is what lets the matcher leave the broad keys unread (service.settled):
    no stored person whose unshared fields (e-mail, phones, licence) are not the query's
    scores above it, for queries with and without each field."""
    from ridercrm.matching.score import Scorer

    rng = random.Random(11)
    empty = {"phones": ()}
    checked = 0
    for _ in range(60):
        query = Identity.of(
            **{name: rng.choice([value, empty.get(name)]) for name, value in ANN.items()},
            city=rng.choice(["Craigieburn", None]),
        )
        scorer = Scorer(query, model=MODEL, thresholds=Thresholds())
        ceiling = scorer.ceiling(unshared)
        for _ in range(400):
            stored = Identity.of(
                **{name: rng.choice(_variants(value)) for name, value in ANN.items()},
                city=rng.choice(["Craigieburn", "Craigeburn", "Epping", None]),
            )
            verdict = scorer.evaluate(stored)
            if any(verdict.levels[name] == "exact" for name in unshared):
                continue
            assert verdict.total <= ceiling
            checked += 1
    assert checked > 10000


# --- Refusing before the total (score.Scorer.refusal, the duplicates scan) --------------

# What a verdict refused for, other than its total: the rules refusal() answers for.
EARLY = (
    score.GUARD_OUTRIGHT, score.GUARD_NEAR, score.GUARD_GENERATION, score.TOO_LITTLE,
    score.GUARD_TYPO, score.GUARD_LICENCE, score.GUARD_BIRTH_ADDRESS, score.GUARD_RELATIVE,
    score.GUARD_VARIANT, score.GUARD_NAMESAKE, score.GUARD_SUFFIX, score.GUARD_TWIN_NAMES,
    score.GUARD_STRANGER,
)  # fmt: skip


def _early_rule(verdict: Verdict) -> str | None:
    return None if verdict.accepted or verdict.rule not in EARLY else verdict.rule


@pytest.mark.parametrize("model", [MODEL, _trained_model()], ids=["default", "trained"])
@pytest.mark.parametrize("personal", [1.0, 8.0], ids=["personal-1", "personal-8"])
def test_a_refusal_is_the_one_evaluate_makes(model: Any, personal: float) -> None:
    """Scorer.refusal names the rule by which the full verdict refuses a pair before its
    total counts (household guard, too little personal evidence), and None exactly when
    the verdict accepts or refuses for the total alone, on varied pairs."""
    import random

    rng = random.Random(20261123)
    thresholds = Thresholds(personal=personal)
    seen: dict[str | None, int] = {}
    not_relatives = 0  # given name and licence refuse, _not_a_relative lets through
    for _query in range(400):
        query = _random_identity(rng)
        scorer = score.Scorer(query, model=model, thresholds=thresholds)
        for _stored in range(40):
            stored = _random_identity(rng)
            verdict = evaluate_with(query, stored, model=model, thresholds=thresholds)
            expected = _early_rule(verdict)
            assert scorer.refusal(stored) == expected, (query, stored)
            seen[expected] = seen.get(expected, 0) + 1
            given, licence = verdict.levels["given_name"], verdict.levels["licence"]
            outright = given in compare.GIVEN_OUTRIGHT and licence not in ("exact", "one_digit")
            not_relatives += outright and verdict.rule != score.GUARD_OUTRIGHT
    assert set(seen) == {*EARLY, None}  # every rule, and pairs that pass them all
    assert min(seen[rule] for rule in (*EARLY[:4], None)) >= 50
    # the rules of issue 24 need a household (a shared address) or a typo: rarer among
    # random pairs, and tested one by one in tests/matching/test_household_rules.py
    assert min(seen[rule] for rule in EARLY[4:]) >= 5
    assert not_relatives >= 10


def test_a_refusal_is_the_one_evaluate_makes_among_households() -> None:
    """The same on what a duplicates scan compares: generated people (households sharing
    surname, address, e-mail and phones) paired when they share a blocking key."""
    import random
    from collections import defaultdict

    from bench.matching.generate import generate_store

    _gen, people, _households = generate_store(random.Random(7), 4000)
    identities = {p.id: identity_of(p) for p in people}
    holders: dict[int, list[str]] = defaultdict(list)
    for person_id, identity in identities.items():
        for key in stored_keys(identity):
            holders[key].append(person_id)
    pairs = {
        (a, b) for ids in holders.values() if len(ids) <= 50 for a in ids for b in ids if a < b
    }
    thresholds = Thresholds()
    seen: dict[str | None, int] = {}
    scorers: dict[str, score.Scorer] = {}
    for a, b in sorted(pairs):
        scorer = scorers.get(a) or scorers.setdefault(
            a, score.Scorer(identities[a], model=MODEL, thresholds=thresholds)
        )
        expected = _early_rule(scorer.evaluate(identities[b]))
        assert expected == _early_rule(evaluate(identities[a], identities[b]))
        assert scorer.refusal(identities[b]) == expected, (a, b)
        seen[expected] = seen.get(expected, 0) + 1
    assert len(pairs) > 2000
    assert seen.get(score.GUARD_OUTRIGHT, 0) > len(pairs) / 3
    assert seen.get(None, 0) > 0
