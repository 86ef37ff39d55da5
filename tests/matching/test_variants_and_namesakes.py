"""Issue 24, second round: twins named from one name family, namesakes in one suburb,
short forms made from a name's end, and the sources of short forms. Pure: the scorer's
verdict for a stored member and the query a relative (or the person, damaged) sends."""

import datetime as dt
from typing import Any

import pytest

from ridercrm.matching import compare, score
from ridercrm.matching.model import default_model
from ridercrm.matching.nicknames import same_name_family
from ridercrm.matching.score import Thresholds, Verdict, evaluate
from ridercrm.people.blocking import Identity
from ridercrm.people.normalize import name_tokens

AMELIA: dict[str, Any] = {
    "first_name": "Amelia",
    "last_name": "Turner",
    "date_of_birth": dt.date(2009, 9, 9),
    "email": "turner.family@example.com",
    "phones": ("0412 513 971",),
    "drivers_license": None,
    "street": "345 Norfolk Way",
    "postcode": "3037",
    "city": "Sydenham",
}


def person(**changes: Any) -> Identity:
    return Identity.of(**{**AMELIA, **changes})


def verdict(query: Identity, stored: Identity) -> Verdict:
    return evaluate(query, stored, model=default_model(), thresholds=Thresholds())


def given(query: str, stored: str) -> str:
    return compare.given_name(name_tokens(query), name_tokens(stored), ("smith",))


OWN_CONTACT = {"email": "amy09@example.com", "phones": ("0499 111 222",)}


def test_a_twin_named_from_the_same_name_family_is_another_person() -> None:
    """Amy and Amelia, born the same day at one address, each with her own mobile."""
    found = verdict(person(first_name="Amy", **OWN_CONTACT), person())
    assert found.levels["given_name"] == "nickname"
    assert not found.accepted
    assert found.rule == score.GUARD_VARIANT


def test_a_nickname_with_the_persons_own_email_is_still_found() -> None:
    found = verdict(person(first_name="Amy", phones=("0499 111 222",)), person())
    assert found.levels["given_name"] == "nickname"
    assert found.accepted, found


def test_a_nickname_at_another_address_is_left_to_the_weights() -> None:
    """Not a household member: the person who moved, and uses a short form."""
    moved = person(first_name="Amy", street="2 Beach Road", postcode="3186", city="Brighton")
    found = verdict(moved, person(email="amelia.t@example.com", phones=()))
    assert found.rule != score.GUARD_VARIANT


def test_a_twin_that_sounds_alike_is_another_person() -> None:
    twin = verdict(person(first_name="Sami", **OWN_CONTACT), person(first_name="Sammy"))
    assert twin.levels["given_name"] in ("nickname", "phonetic", "near")
    assert not twin.accepted
    assert twin.rule == score.GUARD_VARIANT


def test_a_nickname_does_not_excuse_licences_that_differ_at_the_household() -> None:
    """The household's landline agrees; the licences differ: a re-issued licence is
    excused only with the given name itself and the very birth date."""
    stored = person(first_name="Anastasia", drivers_license="733450074")
    query = person(first_name="Tasia", email="tasia07@example.com", drivers_license="155550123")
    found = verdict(query, stored)
    assert found.levels["given_name"] == "nickname"
    assert not found.accepted
    assert found.rule == score.GUARD_LICENCE
    reissued = verdict(person(first_name="Anastasia", drivers_license="155550123"), stored)
    assert reissued.accepted, reissued


def test_a_namesake_in_the_same_suburb_is_not_matched() -> None:
    """A common name, the same postcode and suburb, another birth date, another street,
    and a mailbox and mobile of one's own: only the names and the locality agree."""
    stored = person(first_name="Carla", last_name="Saleh", street="12 Church Street")
    query = person(
        first_name="Carla", last_name="Saleh", date_of_birth=dt.date(1987, 6, 16),
        email="carla.saleh@example.net", phones=("0455 000 333",),
    )  # fmt: skip
    found = verdict(query, stored)
    assert found.levels["postcode"] == "exact"
    assert not found.accepted
    assert found.rule == score.GUARD_NAMESAKE


def test_the_namesake_rule_stays_out_without_contact_details_to_compare() -> None:
    """FEBRL's records carry no e-mail or phone; there a birth date replaced outright is
    the data set's commonest damage, left to the weights."""
    bare = {"email": None, "phones": ()}
    stored = person(first_name="Carla", last_name="Saleh", street="12 Church Street", **bare)
    query = person(first_name="Carla", last_name="Saleh", date_of_birth=dt.date(1987, 6, 16),
                   **bare)  # fmt: skip
    assert verdict(query, stored).rule != score.GUARD_NAMESAKE


@pytest.mark.parametrize(
    ("query", "stored"),
    [("Preet", "Harpreet"), ("Vanni", "Giovanni"), ("Thanasi", "Athanasios")],
)
def test_a_short_form_made_from_the_names_end_is_a_name_part(query: str, stored: str) -> None:
    assert given(query, stored) in ("name_part", "nickname")


def test_a_name_part_needs_the_persons_own_contact_details() -> None:
    stored = person(first_name="Harpreet", last_name="Kaur", email="kaur.h@example.com")
    found = verdict(person(first_name="Preet", last_name="Kaur", **OWN_CONTACT), stored)
    assert found.levels["given_name"] == "name_part"
    assert not found.accepted
    assert found.rule == score.GUARD_TYPO
    same = verdict(person(first_name="Preet", last_name="Kaur", email="kaur.h@example.com"), stored)
    assert same.accepted, same


def test_a_shared_short_form_does_not_make_two_formal_names_one() -> None:
    """Concetta and Cristina are both Tina; sisters are given such names."""
    assert same_name_family("tina", "concetta")
    assert same_name_family("tina", "cristina")
    assert not same_name_family("concetta", "cristina")
    assert same_name_family("liam", "bill")  # two short forms of William still agree


@pytest.mark.parametrize(
    ("query", "stored", "family"),
    [("Robbie", "Robert", True), ("Vaso", "Vasiliki", True), ("Tassos", "Anastasios", True),
     ("Jazz", "Jasmine", True), ("Anastasios", "Athanasios", False),
     ("Dino", "Konstantinos", True), ("Yianni", "Ioannis", True), ("Babis", "Haralambos", True),
     ("Tony", "Antoine", True), ("Jojo", "Jose", True), ("Ma", "Maria", True)],
)  # fmt: skip
def test_short_forms_of_the_communities_served(query: str, stored: str, family: bool) -> None:
    assert same_name_family(query.lower(), stored.lower()) is family


@pytest.mark.parametrize(
    ("typed", "stored"), [("Harry", "Χαράλαμπος"), ("Babis", "Χαράλαμπος"), ("Babis", "Μπάμπης")]
)
def test_short_forms_find_a_name_written_in_greek_letters(typed: str, stored: str) -> None:
    """ELOT 743 writes Χαράλαμπος as Charalampos (μπ inside a word is mp) and Μπάμπης as
    Bampis: the short forms of Charalambos still find the rider stored in Greek letters."""
    found = verdict(
        person(first_name=typed, last_name="Bouras"),
        person(first_name=stored, last_name="Μπούρας"),
    )
    assert found.levels["given_name"] == "nickname", found
    assert found.accepted, found


def test_scanner_slips_know_short_names() -> None:
    assert given("Rvby", "Ruby") == "ocr_slip"  # u read as v
    # c read as e only in names of five letters or more: Lec/Lee may be two people
    assert given("Lec", "Lee") == "short_slip"


def test_a_namesakes_mailbox_made_of_the_same_name_is_no_evidence() -> None:
    """stefano.rossi@ one slip from the stored stefanorossi@: names and suburb agree,
    the birth date differs outright, the mobile and street are the namesake's own."""
    base = {"first_name": "Stefano", "last_name": "Rossi", "street": "12 Church Street"}
    stored = person(**base, email="stefanorossi@gmail.com")
    query = person(
        **{**base, "street": "395 Chapel Street"}, date_of_birth=dt.date(1997, 3, 9),
        email="stefano.rossi@gmail.com", phones=("0471 941 163",),
    )  # fmt: skip
    found = verdict(query, stored)
    assert found.levels["email"] == "close"
    assert not found.accepted
    assert found.rule == score.GUARD_NAMESAKE


# Issue 24, third round: a twin whose short surname was mistyped on the booking form.
LEE = {**AMELIA, "first_name": "Bryce", "last_name": "Lee", "drivers_license": None}


@pytest.mark.parametrize(("typed", "stored"), [("Lse", "Lee"), ("Gn", "Ng"), ("To", "Ho")])
def test_a_twin_with_the_surname_mistyped_is_another_person(typed: str, stored: str) -> None:
    """Another given name, the very birth date and street, and a short family name one
    slip from the stored one: the unstored twin, not the stored person under other names."""
    twin = Identity.of(**{**LEE, "first_name": "Brendan", "last_name": typed, **OWN_CONTACT})
    found = verdict(twin, Identity.of(**{**LEE, "last_name": stored}))
    assert found.levels["given_name"] == "different"
    assert found.levels["family_name"] == "different"
    assert found.levels["date_of_birth"] == "exact"
    assert not found.accepted
    assert found.rule == score.GUARD_OUTRIGHT


def test_the_person_under_other_names_is_still_found_at_the_same_street() -> None:
    """Both names replaced outright (not a slip of the surname), born the same day at the
    same street: the stored person, booked under other names."""
    query = Identity.of(**{**LEE, "first_name": "Brendan", "last_name": "Kowalski"})
    found = verdict(query, Identity.of(**LEE))
    assert found.levels["family_name"] == "different"
    assert found.rule != score.GUARD_OUTRIGHT


def test_other_names_born_the_same_day_at_a_neighbours_house_are_another_person() -> None:
    """Knowing a person's birth date and street is not enough to be them: other names, the
    same birth date and postcode, and a house number of the same street (12 and 18 look
    alike as strings) is a stranger, refused by the household guard."""
    stored = Identity.of(**{**LEE, "street": "12 Main St"})
    query = Identity.of(
        **{**LEE, "first_name": "Sarah", "last_name": "Jones", "street": "18 Main St"}
    )
    found = verdict(query, stored)
    assert found.levels["street"] == "different"
    assert not found.accepted
    assert found.rule == score.GUARD_OUTRIGHT


def test_surnames_one_slip_apart() -> None:
    assert compare.one_slip_apart(("lse",), ("lee",))
    assert compare.one_slip_apart(("gn",), ("ng",))
    assert not compare.one_slip_apart(("kowalski",), ("lee",))
    assert not compare.one_slip_apart((), ("lee",))


def test_a_member_of_one_name_a_decade_apart_under_the_households_phone() -> None:
    """A step-parent and a child both named Bradley, twelve years apart, booking with the
    household's landline: another person, not the stored one's date mistyped."""
    stored = person(first_name="Bradley", date_of_birth=dt.date(1989, 9, 13))
    query = person(
        first_name="Bradley",
        date_of_birth=dt.date(2001, 9, 2),
        email="bradryan19@example.com",
        street=None,
    )
    found = verdict(query, stored)
    assert found.levels["phone"] == "exact"
    assert not found.accepted
    assert found.rule == score.GUARD_GENERATION


RUSSO = {**LEE, "first_name": "Luca", "last_name": "Russo", "email": None, "phones": ()}


@pytest.mark.parametrize(
    ("query", "stored"),
    [
        # Jr. and Sr. at one address: another generation, whatever else agrees
        ({"last_name": "Russo Jr"}, {"last_name": "Russo Sr", "date_of_birth": None}),
        ({"last_name": "Russo Jr"}, {"last_name": "Russo Snr", "date_of_birth": dt.date(1971, 6, 9)}),
        ({"last_name": "Russo III"}, {"last_name": "Russo II"}),
        # a suffix on one side only, and no birth date to tell the two apart
        ({"first_name": "Luca Jr"}, {"date_of_birth": None}),
        ({"last_name": "Russo Jr", "email": "lr@example.com"}, {"email": "lr@example.com", "date_of_birth": None}),
        # a suffix on one side only, and birth years thirty apart by one digit (1995/1965):
        # another generation, not the father's year mistyped
        ({"last_name": "Russo Jr", "date_of_birth": dt.date(1995, 6, 9)}, {"date_of_birth": dt.date(1965, 6, 9)}),
    ],
)  # fmt: skip
def test_a_generational_suffix_tells_a_father_from_his_son(
    query: dict[str, Any], stored: dict[str, Any]
) -> None:
    found = verdict(Identity.of(**{**RUSSO, **query}), Identity.of(**{**RUSSO, **stored}))
    assert not found.accepted
    assert found.rule == score.GUARD_SUFFIX


def test_a_suffix_with_the_same_birth_date_or_licence_is_the_same_person() -> None:
    """The suffix written this time and not the last: the birth date (or the licence)
    says which generation it is."""
    stored = Identity.of(**RUSSO)
    assert verdict(Identity.of(**{**RUSSO, "last_name": "Russo Jr"}), stored).accepted
    licensed = {**RUSSO, "drivers_license": "L7654321"}
    query = Identity.of(**{**licensed, "last_name": "Russo Jr", "date_of_birth": None})
    assert verdict(query, Identity.of(**{**licensed, "last_name": "Russo Sr"})).accepted
    # a one-digit slip within one generation (1971/1977) is still the same person
    slip = Identity.of(**{**RUSSO, "last_name": "Russo Jr", "date_of_birth": dt.date(1977, 6, 9)})
    assert verdict(slip, Identity.of(**{**RUSSO, "date_of_birth": dt.date(1971, 6, 9)})).accepted
