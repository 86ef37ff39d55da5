"""Households through the matching service (issue 24): a stored father, mother and twin,
and the queries their unstored relatives send; the explanation names the rule and the
new levels (the audit record keeps the same candidates)."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm.db import session_scope
from ridercrm.matching import score, service
from ridercrm.matching.schemas import PeopleMatchQuery
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT
from ridercrm.people.schemas import PersonCreate

HOME = {"street": "12 Wattle Grove", "postcode": "3021", "city": "St Albans", "state": "VIC"}
FATHER = person_body(
    first_name="John", last_name="Papadopoulos", date_of_birth="1975-06-14",
    email="papadopoulos.family@example.com", mobile_phone="0412 345 678",
    drivers_license="031234567", **HOME,
)  # fmt: skip
MINH = person_body(
    first_name="Minh", last_name="Nguyen", date_of_birth="2008-03-02",
    email="nguyen.home@example.com", mobile_phone="0433 000 111", drivers_license=None,
    street="7 Ironbark Circuit", postcode="3175", city="Dandenong", state="VIC",
)  # fmt: skip


@pytest.fixture
def household(sessions: sessionmaker[Session]) -> dict[str, str]:
    with session_scope(sessions, write=True) as session:
        ids = {}
        for name, body in (("father", FATHER), ("minh", MINH)):
            ids[name] = people.create_person(
                session, kind=CONTACT, data=PersonCreate.model_validate(body)
            ).id
        return ids


def _ask(sessions: sessionmaker[Session], **data: Any) -> service.MatchResult:
    fields = ("first_name", "last_name", "date_of_birth", "email", "postcode", "mobile_phone",
              "drivers_license", "street", "city")  # fmt: skip
    body = {key: value for key, value in data.items() if key in fields and value}
    with session_scope(sessions) as session:
        return service.find_match(
            session, details=PeopleMatchQuery.model_validate(body), leads_only=False
        )


def _candidate(result: service.MatchResult, person_id: str) -> dict[str, Any]:
    found = [c for c in result.explanation()["candidates"] if c["id"] == person_id]
    assert found, result.explanation()
    return found[0]


def test_the_same_named_son_with_his_own_mailbox_is_not_the_father(
    sessions: sessionmaker[Session], household: dict[str, str]
) -> None:
    son = {**FATHER, "date_of_birth": "2004-02-09", "email": "johnnyp@example.com",
           "mobile_phone": "0499 000 222", "drivers_license": None}  # fmt: skip
    result = _ask(sessions, **son)
    assert result.person is None
    father = _candidate(result, household["father"])
    assert father["rule"] == score.GUARD_BIRTH_ADDRESS
    assert not father["accepted"]


def test_the_father_with_his_birth_year_digits_swapped_is_found(
    sessions: sessionmaker[Session], household: dict[str, str]
) -> None:
    result = _ask(sessions, **{**FATHER, "date_of_birth": "1957-06-14", "drivers_license": None})
    assert result.person is not None
    assert result.person.id == household["father"]
    assert _candidate(result, household["father"])["reasons"]["date_of_birth"] == (
        "year_digits_swapped"
    )


def test_another_licence_at_the_household_address_is_another_person(
    sessions: sessionmaker[Session], household: dict[str, str]
) -> None:
    relative = {**FATHER, "date_of_birth": "1977-06-15", "drivers_license": "098765432"}
    result = _ask(sessions, **relative)
    assert result.person is None
    assert _candidate(result, household["father"])["rule"] == score.GUARD_LICENCE


def test_the_unstored_twin_binh_is_not_minh(
    sessions: sessionmaker[Session], household: dict[str, str]
) -> None:
    result = _ask(sessions, **{**MINH, "first_name": "Binh"})
    assert result.person is None
    minh = _candidate(result, household["minh"])
    assert minh["reasons"]["given_name"] == "short_slip"
    assert minh["rule"] == score.GUARD_OUTRIGHT


def test_a_keyboard_slip_with_the_stored_email_is_found_and_named(
    sessions: sessionmaker[Session], household: dict[str, str]
) -> None:
    result = _ask(sessions, **{**MINH, "first_name": "Minj"})  # h and j are neighbours
    assert result.person is not None
    assert result.person.id == household["minh"]
    assert _candidate(result, household["minh"])["reasons"]["given_name"] == "keyboard_slip"


def test_a_community_short_form_and_a_truncation_are_found(
    sessions: sessionmaker[Session], household: dict[str, str]
) -> None:
    greek = {**FATHER, "first_name": "Ioannis", "drivers_license": None}
    with session_scope(sessions, write=True) as session:
        ioannis = people.create_person(
            session, kind=CONTACT,
            data=PersonCreate.model_validate({**greek, "email": "ioannis@example.com",
                                              "mobile_phone": "0400 555 666"}),
        ).id  # fmt: skip
    for first, level in (("Yanni", "nickname"), ("Ioan", "truncated")):
        result = _ask(sessions, **{**greek, "first_name": first, "email": "ioannis@example.com",
                                   "mobile_phone": None})  # fmt: skip
        assert result.person is not None, first
        assert result.person.id == ioannis
        assert _candidate(result, ioannis)["reasons"]["given_name"] == level
