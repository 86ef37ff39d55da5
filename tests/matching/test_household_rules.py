"""The household rules of issue 24, one by one, without a database.

A household shares surname, address, e-mail and phone; its members differ in given name,
date of birth and licence. Each test builds the stored member and the query a relative
(or the stored person, damaged) would send, and asserts the verdict and the rule named.
"""

import datetime as dt
from typing import Any

import pytest

from ridercrm.matching import compare, score
from ridercrm.matching.model import Model, default_model
from ridercrm.matching.nicknames import same_name_family
from ridercrm.matching.score import Thresholds, Verdict
from ridercrm.matching.score import evaluate as evaluate_with
from ridercrm.matching.training import train
from ridercrm.people.blocking import Identity
from ridercrm.people.normalize import name_tokens

HOME: dict[str, Any] = {
    "first_name": "John",
    "last_name": "Papadopoulos",
    "date_of_birth": dt.date(1975, 6, 14),
    "email": "john.papadopoulos@example.com",
    "phones": ("0412 345 678",),
    "drivers_license": "031234567",
    "street": "12 Wattle Grove",
    "postcode": "3021",
    "city": "St Albans",
}


def member(**changes: Any) -> Identity:
    return Identity.of(**{**HOME, **changes})


def evaluate(query: Identity, stored: Identity, model: Model | None = None) -> Verdict:
    return evaluate_with(query, stored, model=model or default_model(), thresholds=Thresholds())


def given(query: str, stored: str) -> str:
    return compare.given_name(name_tokens(query), name_tokens(stored), ("smith",))


# --- a generation apart ---------------------------------------------------------------


def test_the_years_last_two_digits_swapped_is_a_slip_not_a_parent() -> None:
    """1975 keyed as 1957, everything else exact: the stored person."""
    query = member(date_of_birth=dt.date(1957, 6, 14), drivers_license=None)
    assert not compare.generation_apart(dt.date(1957, 6, 14), dt.date(1975, 6, 14))
    verdict = evaluate(query, member())
    assert verdict.levels["date_of_birth"] == "year_digits_swapped"
    assert verdict.accepted, verdict


def test_swapped_year_digits_with_another_day_are_a_generation() -> None:
    assert compare.generation_apart(dt.date(1957, 3, 2), dt.date(1975, 6, 14))
    assert compare.birth_date(dt.date(1957, 3, 2), dt.date(1975, 6, 14)) == "different"


def test_a_same_named_son_with_his_own_mailbox_at_the_address_is_another_person() -> None:
    """Jr.: his own e-mail and mobile, the household's address, no licence sent."""
    son = member(
        date_of_birth=dt.date(2003, 2, 9), email="johnnyp03@example.com",
        phones=("0499 000 111",), drivers_license=None,
    )  # fmt: skip
    verdict = evaluate(son, member())
    assert verdict.total >= Thresholds().match  # names and address alone would match
    assert not verdict.accepted
    assert verdict.rule == score.GUARD_BIRTH_ADDRESS


def test_a_same_named_son_under_the_household_email_is_another_person() -> None:
    son = member(date_of_birth=dt.date(2003, 2, 9), drivers_license=None)
    assert evaluate(son, member()).rule == score.GUARD_GENERATION


def test_a_date_off_without_any_contact_details_is_left_to_the_weights() -> None:
    """FEBRL-like records (no e-mail, no phone): a date replaced outright stays found."""
    stored = member(email=None, phones=())
    query = member(date_of_birth=dt.date(1993, 8, 27), email=None, phones=(), drivers_license=None)
    assert evaluate(query, stored).accepted


# --- licences ---------------------------------------------------------------------------


def test_licences_that_differ_at_the_household_address_outweigh_all_it_shares() -> None:
    """Same names, e-mail, phone and address; a birth date two digits off and another
    licence: another person, though the total is far above the threshold."""
    relative = member(date_of_birth=dt.date(1977, 6, 15), drivers_license="098765432")
    verdict = evaluate(relative, member())
    assert verdict.total >= 2 * Thresholds().match
    assert not verdict.accepted
    assert verdict.rule == score.GUARD_LICENCE


def test_a_licence_that_changed_with_an_interstate_move_is_left_to_the_weights() -> None:
    moved = member(
        drivers_license="12345678", street="4 Ocean Parade", postcode="4217",
        city="Surfers Paradise",
    )  # fmt: skip
    verdict = evaluate(moved, member())
    assert verdict.levels["licence"] == "different"
    assert verdict.accepted, verdict


def test_a_reissued_licence_with_the_very_person_is_still_found() -> None:
    renewed = member(drivers_license="099999999")
    assert evaluate(renewed, member()).accepted


# --- short names, keyboards and scanners ---------------------------------------------------


@pytest.mark.parametrize(
    ("query", "stored", "level"),
    [
        ("Nui", "Hui", "keyboard_slip"),  # h and n are neighbours
        ("Kak", "Kai", "keyboard_slip"),
        ("Ernily", "Emily", "ocr_slip"),  # rn read as m
        ("Torn", "Tom", "ocr_slip"),
        ("Binh", "Minh", "short_slip"),  # two names, twins
        ("Ling", "Jing", "short_slip"),
        ("Sukh", "Sukhdeep", "truncated"),
        ("Sid", "Siddharth", "truncated"),
        ("Paul John", "John Paul", "close"),  # a compound given name in the other order
    ],
)
def test_typo_levels_know_short_names(query: str, stored: str, level: str) -> None:
    assert given(query, stored) == level


def test_twins_minh_and_binh_are_never_merged() -> None:
    """The unstored twin: same surname, birth date, address, the household's e-mail."""
    minh = member(first_name="Minh", last_name="Nguyen", drivers_license=None)
    binh = member(first_name="Binh", last_name="Nguyen", drivers_license=None)
    verdict = evaluate(binh, minh)
    assert not verdict.accepted
    assert verdict.rule == score.GUARD_OUTRIGHT


@pytest.mark.parametrize(
    ("twin", "stored_name"), [("Wei", "Mei"), ("Binh", "Minh"), ("Hue", "Hui"), ("Rosl", "Rosa")]
)
def test_a_twin_one_letter_apart_under_the_other_twins_named_mailbox_is_never_matched(
    twin: str, stored_name: str
) -> None:
    """A household's mailbox is often named after one of its members (mei_chen@): the
    twin booking under it, born the same day, is not the stored twin (an unstored twin
    is never matched: docs/decisions.md, "Matching on real CRM traffic"), though a slip
    by the stored person themselves under their own mailbox looks the same and is
    refused with it."""
    mailbox = f"{stored_name.lower()}_chen@example.com"
    stored = member(first_name=stored_name, last_name="Chen", email=mailbox, drivers_license=None)
    query = member(first_name=twin, last_name="Chen", email=mailbox, drivers_license=None)
    verdict = evaluate(query, stored)
    assert verdict.levels["given_name"] == "short_slip"
    assert not verdict.accepted, verdict
    assert verdict.rule == score.GUARD_OUTRIGHT


def test_a_keyboard_slip_is_a_typo_when_the_email_agrees_and_a_twin_when_only_the_household_does() -> (
    None
):
    hui = member(first_name="Hui", last_name="Chen", drivers_license=None)
    typed = member(first_name="Nui", last_name="Chen", drivers_license=None)
    assert evaluate(typed, hui).accepted
    twin = member(
        first_name="Nui", last_name="Chen", email="nui.chen@example.com", phones=("0400 111 222",),
        drivers_license=None,
    )  # fmt: skip
    verdict = evaluate(twin, hui)
    assert not verdict.accepted
    assert verdict.rule == score.GUARD_TYPO


def test_a_close_name_at_the_household_address_needs_a_contact_detail() -> None:
    """Huong and Phuong, twins with their own mailboxes: a letter added is another name."""
    huong = member(first_name="Huong", last_name="Vo", drivers_license=None)
    phuong = member(
        first_name="Phuong", last_name="Vo", email="phuong.vo@example.com", phones=(),
        drivers_license=None,
    )  # fmt: skip
    assert given("Phuong", "Huong") == "close"
    assert evaluate(phuong, huong).rule == score.GUARD_TYPO
    # the same slip with the stored e-mail: a typo
    assert evaluate(member(first_name="Phuong", last_name="Vo"), huong).accepted


def test_a_near_name_and_another_birth_date_in_the_household_is_another_member() -> None:
    """Anastasia and Anastasios, a couple under one e-mail."""
    anastasios = member(first_name="Anastasios", drivers_license=None)
    anastasia = member(
        first_name="Anastasia", date_of_birth=dt.date(1979, 2, 3), drivers_license=None
    )
    verdict = evaluate(anastasia, anastasios)
    assert not verdict.accepted
    assert verdict.rule == score.GUARD_RELATIVE


def test_a_truncation_is_found_only_with_strong_evidence() -> None:
    stored = member(first_name="Sukhdeep", last_name="Singh", drivers_license=None)
    assert evaluate(
        member(first_name="Sukh", last_name="Singh", drivers_license=None), stored
    ).accepted
    brother = member(
        first_name="Sukh", last_name="Singh", email="sukh@example.com", phones=(),
        drivers_license=None,
    )  # fmt: skip
    assert evaluate(brother, stored).rule == score.GUARD_TYPO


# --- given-name variants ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("short", "formal"),
    [("liam", "william"), ("liv", "olivia"), ("mo", "mohammad"), ("enzo", "vincenzo"),
     ("nick", "nikolaos"), ("con", "konstantinos"), ("pino", "giuseppe"), ("joe", "youssef"),
     # Greek everyday forms, and the English names Greek-Australians go by
     ("jimmy", "dimitris"), ("bill", "vasilis"), ("mike", "michalis"), ("tony", "antonis"),
     ("stelios", "stylianos"), ("greg", "grigorios"), ("peter", "petros"),
     ("andy", "andreas"), ("yiota", "panagiota"),
     # Italian and Arabic forms of English names
     ("steve", "stefano"), ("phil", "filippo"), ("cathy", "caterina"), ("joe", "yusuf"),
     ("stevie", "stephen")],
)  # fmt: skip
def test_community_short_forms_are_one_name(short: str, formal: str) -> None:
    assert same_name_family(short, formal)
    assert same_name_family(formal, short)


@pytest.mark.parametrize(
    ("typed", "stored_name"),
    [("Mike", "Μιχάλης"), ("Jimmy", "Dimitris"), ("Bill", "Vasilis"), ("Peter", "Petros")],
)
def test_a_greek_rider_under_the_english_name_they_go_by_is_found(
    typed: str, stored_name: str
) -> None:
    """Μιχάλης (Michalis, the everyday form of Michail) books as Mike, under his own
    e-mail and birth date, no licence: the stored person, as a nickname."""
    stored = member(first_name=stored_name, drivers_license=None)
    verdict = evaluate(member(first_name=typed, drivers_license=None), stored)
    assert verdict.levels["given_name"] == "nickname"
    assert verdict.accepted, verdict


def test_given_and_family_names_swapped_are_found() -> None:
    swapped = member(first_name="Papadopoulos", last_name="John", drivers_license=None)
    assert evaluate(swapped, member()).accepted


# --- training cannot erode the rules ---------------------------------------------------------


def _households(count: int) -> list[Identity]:
    """A store full of households: same-named fathers and sons, twins, one e-mail each."""
    people: list[Identity] = []
    for n in range(count):
        family, street = f"Fam{n:04d}x", f"{n % 300 + 1} Wattle Grove"
        email, phone = f"fam{n}@example.com", f"04{n:08d}"
        common = {"last_name": family, "street": street, "email": email, "phones": (phone,),
                  "postcode": "3021"}  # fmt: skip
        people.append(Identity.of(first_name="John", date_of_birth=dt.date(1970, 1, 1 + n % 28),
                                  drivers_license=f"0{n:08d}", **common))  # fmt: skip
        people.append(Identity.of(first_name="John", date_of_birth=dt.date(1998, 3, 1 + n % 28),
                                  drivers_license=f"1{n:08d}", **common))  # fmt: skip
    return people


def test_training_on_households_keeps_the_disagreement_weights_floored() -> None:
    """EM on a store of households learns that a differing birth date or licence is
    cheap; the trained model keeps them at least as costly as the shipped default."""
    trained = train(_households(600), seed=1)
    shipped = default_model()
    for name in ("date_of_birth", "licence"):
        assert trained.weights[name]["different"] <= shipped.weights[name]["different"]
    father = member(first_name="John", last_name="Fam0001x")
    son = member(
        first_name="John", last_name="Fam0001x", date_of_birth=dt.date(1998, 3, 2),
        drivers_license="100000001",
    )  # fmt: skip
    verdict = evaluate(son, father, model=trained)
    assert not verdict.accepted


# --- twins named as two forms of one name, and strangers who share a suburb -----------


@pytest.mark.parametrize(
    ("query_name", "stored_name"),
    [
        ("Maria", "Mario"),
        ("Dimitra", "Dimitris"),
        ("Antonia", "Antonio"),
        ("Francesca", "Francesco"),
        ("Christina", "Christos"),
        ("Giorgia", "Giorgos"),
        ("Harpreet", "Gurpreet"),
        ("Manjeet", "Manpreet"),
        ("John Mark", "John Paul"),
        ("Thi Hoa", "Thi Lan"),
        # masculine names without a masculine ending, from a closed list
        ("Daniela", "Daniel"),
        ("Paul", "Paula"),
        ("Juliana", "Julian"),
        ("Giovanna", "Giovanni"),
        ("Daniele", "Daniela"),
        # Greek forms (in Greek letters compared as ELOT 743 writes them) of listed pairs
        ("Γεωργία", "Γιώργος"),
        ("Georgia", "Giorgos"),
        ("Μιχαέλα", "Μιχαήλ"),
        # feminine forms with other endings (-iki, -oula, -ina, -pa)
        ("Vasiliki", "Vasilis"),
        ("Stavroula", "Stavros"),
        ("Giuseppina", "Giuseppe"),
        ("Philippa", "Philip"),
        # the name families join Louis and Louise; the list reads them as two names
        ("Louise", "Louis"),
        ("Louisa", "Louis"),
    ],
)
def test_a_twin_named_from_the_same_name_is_another_person(
    query_name: str, stored_name: str
) -> None:
    """Twins share the household's e-mail, phone, address and birth date, and often one
    name in two forms: no licence agreeing, the twin is not the stored one,
    whichever level the names reach (close, near, phonetic, different)."""
    stored = member(first_name=stored_name, drivers_license=None)
    twin = member(first_name=query_name, drivers_license=None)
    assert compare.two_names(name_tokens(query_name), name_tokens(stored_name))
    verdict = evaluate(twin, stored)
    assert not verdict.accepted, verdict
    assert verdict.rule in (score.GUARD_TWIN_NAMES, score.GUARD_OUTRIGHT)
    # the twin's own licence beside the stored one's agrees: the stored person after all
    assert evaluate(member(first_name=query_name), member(first_name=stored_name)).accepted


@pytest.mark.parametrize(
    ("twin", "name"),
    [("Christian", "Christina"), ("Daniel", "Daniela"), ("Antonio", "Antonia"),
     ("Louis", "Louise"), ("Paula", "Paul")],
)  # fmt: skip
def test_a_twin_named_from_one_name_under_the_other_twins_named_mailbox_is_never_matched(
    twin: str, name: str
) -> None:
    """Twins under a mailbox named after the stored one (christina.papadopoulos@), or
    under the household's: refused either way, though Christina typing "Christian" under
    her own mailbox looks the same: an unstored twin is never matched."""
    assert compare.two_names(name_tokens(twin), name_tokens(name))
    for mailbox in (f"{name.lower()}.papadopoulos@example.com", "papadopoulos.family@example.com"):
        stored = member(first_name=name, email=mailbox, drivers_license=None)
        verdict = evaluate(member(first_name=twin, email=mailbox, drivers_license=None), stored)
        assert not verdict.accepted, (mailbox, verdict)
        assert verdict.rule == score.GUARD_TWIN_NAMES


@pytest.mark.parametrize(
    ("typed", "name"),
    [("Danial", "Daniel"), ("Antonoi", "Antonio"), ("Jessic", "Jessica"), ("Sabrin", "Sabrina")],
)
def test_a_slip_in_a_name_under_the_households_details_is_still_the_person(
    typed: str, name: str
) -> None:
    """A letter mistyped, swapped or lost at the end makes no second name."""
    assert not compare.two_names(name_tokens(typed), name_tokens(name))
    stored = member(first_name=name, drivers_license=None)
    assert evaluate(member(first_name=typed, drivers_license=None), stored).accepted


@pytest.mark.parametrize(
    ("typed", "name"),
    [("Harjeet", "Harjit"), ("Manjeet", "Manjit"), ("Rajveer", "Rajvir"), ("Mandip", "Mandeep"),
     ("Jean Luk", "Jean Luc"), ("Mohammed Aly", "Mohammed Ali"), ("Thi May", "Thi Mai")],
)  # fmt: skip
def test_one_name_spelled_two_ways_is_the_person(typed: str, name: str) -> None:
    """A Punjabi element written two ways (jit/jeet, vir/veer, deep/dip) and a slip in a
    short second name are one name, not twins: under the household's details, found."""
    assert not compare.two_names(name_tokens(typed), name_tokens(name))
    stored = member(first_name=name, drivers_license=None)
    assert evaluate(member(first_name=typed, drivers_license=None), stored).accepted


@pytest.mark.parametrize(
    ("query_name", "stored_name"),
    [("Helena", "Helen"), ("Isabella", "Isabel"), ("Susana", "Susan"), ("Anna", "Anne"),
     ("Maria", "Marie")],
)  # fmt: skip
def test_a_name_without_a_masculine_ending_is_not_read_as_a_twins(
    query_name: str, stored_name: str
) -> None:
    """Helen and Helena are one woman's name written two ways: a name with no masculine
    ending, and not one of the closed list of masculine names (Daniel, Paul, Giovanni),
    is not read as a twin's, so such pairs are left to the weights: under the
    household's details, the stored person."""
    assert not compare.two_names(name_tokens(query_name), name_tokens(stored_name))
    stored = member(first_name=stored_name, drivers_license=None)
    assert evaluate(member(first_name=query_name, drivers_license=None), stored).accepted


def test_a_stranger_with_a_given_name_birth_date_and_suburb_in_common_is_not_found() -> None:
    """James Brown, born the day James Smith was, in his suburb, with his own street,
    e-mail and phone: only the given name, the birth date and the locality agree."""
    smith = member(first_name="James", last_name="Smith", drivers_license=None)
    brown = member(
        first_name="James", last_name="Brown", email="jbrown@example.org",
        phones=("0499 888 777",), street="3 Elm Close", drivers_license=None,
    )  # fmt: skip
    verdict = evaluate(brown, smith)
    assert not verdict.accepted
    assert verdict.rule == score.GUARD_STRANGER
    # a woman who married keeps her phone (or her street): the stored person
    married = member(
        first_name="James", last_name="Brown", email="jbrown@example.org",
        street="3 Elm Close", drivers_license=None,
    )  # fmt: skip
    assert evaluate(married, smith).accepted
