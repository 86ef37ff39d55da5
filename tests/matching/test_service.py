"""The matching service called directly: find_match takes the validated details of
operations 3 and 4 and builds its own Identity (no HTTP)."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm.audit.call import Caller
from ridercrm.db import session_scope
from ridercrm.matching import answer, service
from ridercrm.matching.schemas import LeadsMatchQuery, PeopleMatchQuery
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.schemas import PersonCreate
from ridercrm.ratelimit import KeyRateLimiter, parse_limits

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


def _ask(scopes: set[str], limiter: KeyRateLimiter | None) -> answer.MatchAsk:
    return answer.MatchAsk(
        PeopleMatchQuery.model_validate(ANN),
        leads_only=False,
        explain=True,
        audit_id="a0A000000000000AAA",
        caller=Caller(key_id=1, name="site", scopes=frozenset(scopes)),
        explain_limiter=limiter,
    )


def test_an_explanation_needs_the_explain_scope_and_is_counted_once_per_request(
    sessions: sessionmaker[Session], stored: dict[str, str]
) -> None:
    """answer_match, the one call the web layer makes for operations 3 and 4, refuses an
    explanation without the scope (before the limit counts it), then counts it against
    the limit once per request: the same ask answered again, as a transaction retried
    after a deadlock answers it, is not refused by a limit of one."""
    limiter = KeyRateLimiter(parse_limits("1/minute"), namespace="explain-test")
    with session_scope(sessions) as session:
        with pytest.raises(answer.ExplainRefused) as refused:
            answer.answer_match(session, _ask({"match"}, limiter))
        assert refused.value.status == 403
        ask = _ask({"match", "explain"}, limiter)
        first = answer.answer_match(session, ask)
        again = answer.answer_match(session, ask)
        assert first.body["ID"] == again.body["ID"] == stored["contact"]
        assert first.body["match"]["id"] == stored["contact"]
        with pytest.raises(answer.ExplainRefused) as limited:
            answer.answer_match(session, _ask({"match", "explain"}, limiter))
        assert limited.value.status == 429
        assert int(limited.value.headers["Retry-After"]) >= 0
