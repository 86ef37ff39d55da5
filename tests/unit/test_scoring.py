import datetime as dt
from typing import Any

import pytest

from ridercrm.matching import compare
from ridercrm.matching.keys import Identity, query_keys, stored_keys
from ridercrm.matching.nicknames import same_name_family
from ridercrm.matching.score import evaluate

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


def person(**changes: Any) -> Identity:
    values = {**ANN, **changes}
    return Identity.of(**values)


@pytest.mark.parametrize(
    ("query", "stored", "reason"),
    [
        ("William", "william", "exact"),
        ("Bill", "William", "nickname"),
        ("Kate", "Katherine", "nickname"),
        ("Katherine", "Kathrine", "typo"),
        ("Micheal", "Michael", "typo"),
        ("J", "John", "initial"),
        ("Mary Ann", "Mary", "same first word"),
        ("Jack", "Jake", "differs"),
        ("Ann", "Bob", "differs"),
    ],
)
def test_given_names(query: str, stored: str, reason: str) -> None:
    from ridercrm.matching.normalize import name_tokens

    assert compare.given_names(name_tokens(query), name_tokens(stored)).reason == reason


@pytest.mark.parametrize(
    ("query", "stored", "reason"),
    [
        ("Nguyen", "NGUYEN", "exact"),
        ("Ngyuen", "Nguyen", "typo"),
        ("Nguyen", "Nguyen-Tran", "part of a compound name"),
        ("Smyth", "Smith", "typo"),
        ("Smith", "Jones", "differs"),
    ],
)
def test_family_names(query: str, stored: str, reason: str) -> None:
    from ridercrm.matching.normalize import name_tokens

    assert compare.family_names(name_tokens(query), name_tokens(stored)).reason == reason


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        (dt.date(1999, 4, 12), "exact"),
        (dt.date(1999, 12, 4), "day and month swapped"),
        (dt.date(1998, 4, 12), "one digit differs"),
        (dt.date(1999, 4, 13), "one digit differs"),
        (dt.date(1987, 4, 12), "differs"),
    ],
)
def test_birth_dates(query: dt.date, reason: str) -> None:
    assert compare.birth_dates(query, dt.date(1999, 4, 12)).reason == reason


def test_nickname_groups() -> None:
    assert same_name_family("bill", "william")
    assert same_name_family("liz", "elizabeth")
    assert not same_name_family("christopher", "christine")
    assert not same_name_family("bill", "bob")


@pytest.mark.parametrize(
    "query",
    [
        person(),
        person(first_name="Anne"),
        person(last_name="Ngyuen"),
        person(first_name="Nguyen", last_name="Ann"),
        person(date_of_birth=dt.date(1999, 12, 4)),
        person(email="new@example.com"),
        person(phones=()),
        person(street="99 Other Rd", postcode="4000"),
        person(first_name="ANN", last_name="nguyen", phones=("+61 412 345 678",)),
    ],
)
def test_single_corruptions_are_accepted(query: Identity) -> None:
    verdict = evaluate(query, person())
    assert verdict.accepted, verdict


@pytest.mark.parametrize(
    ("query", "why"),
    [
        (person(first_name="Tom", date_of_birth=dt.date(2010, 6, 1)), "names do not agree"),
        (person(first_name="Tom"), "names do not agree"),
        (person(date_of_birth=dt.date(1975, 1, 1)), "date of birth differs"),
        (
            person(email="x@example.com", phones=(), drivers_license=None, street=None, postcode="4000"),
            "no identifier backs the names and date of birth",
        ),
        (
            person(date_of_birth=dt.date(1999, 12, 4), email="x@example.com", phones=(), drivers_license=None, street=None),
            "a slipped date of birth needs a strong identifier",
        ),
    ],
)  # fmt: skip
def test_refusals_say_why(query: Identity, why: str) -> None:
    verdict = evaluate(query, person())
    assert not verdict.accepted
    assert verdict.rule == why


def test_a_parent_and_child_sharing_every_contact_detail_are_two_people() -> None:
    parent = person()
    child = person(first_name="Tom", date_of_birth=dt.date(2012, 3, 9))
    assert not evaluate(child, parent).accepted
    assert not evaluate(parent, child).accepted


def test_a_corrupted_field_leaves_a_shared_blocking_key() -> None:
    stored = stored_keys(person())
    for query in (
        person(last_name="Ngyuen", email="other@example.com"),
        person(date_of_birth=dt.date(1999, 12, 4), phones=()),
        person(email="new@example.com", phones=(), drivers_license=None),
        person(first_name="Nguyen", last_name="Ann", email="n@example.com", phones=()),
    ):
        assert query_keys(query) & stored


def test_a_slip_in_a_short_name_needs_everything_else() -> None:
    stored = person(first_name="Dan", last_name="Li")
    # the other name and date exact, e-mail and phone agree: accepted
    assert evaluate(person(first_name="Dan", last_name="Il"), stored).accepted
    assert evaluate(person(first_name="Dna", last_name="Li"), stored).accepted
    # only one identifier behind it: refused
    lone = person(first_name="Dna", last_name="Li", phones=(), drivers_license=None, street=None)
    verdict = evaluate(lone, stored)
    assert not verdict.accepted
    assert (
        verdict.rule
        == "a slip in a short name needs the other name, the date of birth and two identifiers"
    )
    # a slipped date as well: refused
    assert not evaluate(
        person(first_name="Dna", last_name="Li", date_of_birth=dt.date(1999, 12, 4)), stored
    ).accepted


@pytest.mark.parametrize(
    ("query", "stored"),
    [("Lachie", "Lachlan"), ("Josh", "Joshua"), ("Cat", "Catherine"), ("Jono", "Jonathan")],
)
def test_australian_diminutives(query: str, stored: str) -> None:
    assert evaluate(person(first_name=query), person(first_name=stored)).accepted


def test_an_unstored_twin_with_a_near_name_and_own_licence_is_not_merged() -> None:
    mei = person(first_name="Mei", last_name="Li", drivers_license="U50432")
    wei = person(first_name="Wei", last_name="Li", drivers_license="Q77120")
    verdict = evaluate(wei, mei)
    assert not verdict.accepted
    assert verdict.rule == "the given name only nearly agrees and the licence differs"
    # the same slip with the same licence is Mei mistyped
    assert evaluate(
        person(first_name="Wei", last_name="Li", drivers_license="U50432"), mei
    ).accepted
