"""The matching service called directly: find_match takes the validated details of
operations 3 and 4 and builds its own Identity (no HTTP)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm.db import session_scope
from ridercrm.matching import service
from ridercrm.matching.schemas import LeadsMatchQuery, PeopleMatchQuery
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.schemas import PersonCreate

ANN = {
    "first_name": "Ann",
    "last_name": "Nguyen",
    "date_of_birth": "1999-04-12",
    "email": "ann.nguyen@example.com",
    "postcode": "3064",
    "mobile_phone": "0412 345 678",
}


@pytest.fixture
def stored(sessions: sessionmaker[Session]) -> dict[str, str]:
    with session_scope(sessions, write=True) as session:
        contact = people.create_person(
            session, kind=CONTACT, data=PersonCreate.model_validate(person_body())
        )
        lead = people.create_person(
            session,
            kind=LEAD,
            data=PersonCreate.model_validate(
                person_body(
                    first_name="Liam",
                    last_name="Tran",
                    email="liam.tran@example.com",
                    mobile_phone="0400 111 222",
                    date_of_birth="2001-02-03",
                    drivers_license="L7777777",
                )
            ),
        )
        return {"contact": contact.id, "lead": lead.id}


def test_details_of_a_stored_contact_find_it(
    sessions: sessionmaker[Session], stored: dict[str, str]
) -> None:
    with session_scope(sessions) as session:
        result = service.find_match(
            session, details=PeopleMatchQuery.model_validate(ANN), leads_only=False
        )
    assert result.person is not None
    assert result.person.id == stored["contact"]
    assert result.explanation()["id"] == stored["contact"]


def test_leads_only_never_answers_a_contact(
    sessions: sessionmaker[Session], stored: dict[str, str]
) -> None:
    with session_scope(sessions) as session:
        result = service.find_match(
            session,
            details=LeadsMatchQuery.model_validate({**ANN, "lead_source": "Web"}),
            leads_only=True,
        )
    assert result.person is None


def test_a_stranger_is_not_found(sessions: sessionmaker[Session], stored: dict[str, str]) -> None:
    stranger = {**ANN, "first_name": "Zed", "last_name": "Quill", "email": "zq@example.com",
                "mobile_phone": "0499 999 999", "date_of_birth": "1970-01-01"}  # fmt: skip
    with session_scope(sessions) as session:
        result = service.find_match(
            session, details=PeopleMatchQuery.model_validate(stranger), leads_only=False
        )
    assert result.person is None
