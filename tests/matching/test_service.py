"""The matching service called directly: find_match takes the validated details of
operations 3 and 4 and builds its own Identity (no HTTP)."""

from __future__ import annotations

from typing import Any

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


def _explained_by_orm(session: Session, query: Any, leads_only: bool) -> dict[str, Any]:
    """The answer and explanation as the matcher gave them before it read plain rows:
    candidate ids, then ORM people, identity_of and score.evaluate for each (a reference)."""
    from sqlalchemy import select

    from ridercrm.matching import repository, score
    from ridercrm.people.blocking import query_keys
    from ridercrm.people.index import identity_of
    from ridercrm.people.models import Person

    ids = repository.candidate_ids(session, query_keys(query))
    stored = session.scalars(select(Person).where(Person.id.in_(ids)).order_by(Person.id)).all()
    best: dict[str, Any] = {}
    for record in stored:
        if record.kind == LEAD and record.converted_contact_id:
            continue
        person = people.survivor_of(session, record) if record.merged_into else record
        if person is None or (leads_only and person.kind != LEAD):
            continue
        identity = identity_of(record)
        verdict = score.evaluate(query, identity)
        kept = best.get(person.id)
        if kept is None or service._rank(person, verdict) < service._rank(person, kept[2]):
            best[person.id] = (person, identity, verdict)
    scored = sorted(best.values(), key=lambda entry: service._rank(entry[0], entry[2]))
    found, decision = service.decide(scored, score.Thresholds())
    return {
        "decision": decision,
        "id": found.id if found else None,
        "model_version": 0,
        "candidates": [service._candidate(p, v) for p, _i, v in scored],
    }


def test_a_crowded_store_answers_and_explains_as_the_orm_reference(
    sessions: sessionmaker[Session],
) -> None:
    """A household street of look-alikes (one surname, postcode and street: 48 people
    under the same keys, as under a common key at a million people), with leads, a
    converted lead and merged records: every query's answer (person and decision) is
    that of the reference that reads every key's people as ORM objects and scores each
    with score.evaluate; the explanation lists the best-ranked of the candidates the
    matcher read (the identifiers' first, the rest only when they cannot settle the
    answer), each with the reference's score, rule, levels and weights."""
    import datetime as dt
    import random

    from ridercrm.duplicates.merge import merge_people
    from ridercrm.people.blocking import Identity

    rng = random.Random(7)
    given = ["Ann", "Anne", "Anna", "Hannah", "Liam", "Mei", "Wei", "Tom", "Tim", "Chris",
             "Christopher", "Elizabeth", "Liz", "Sam", "Samuel", "Ben", "Ken"]  # fmt: skip
    bodies = []
    for n in range(48):
        born = dt.date(1960, 1, 1) + dt.timedelta(days=rng.randrange(40 * 365))
        bodies.append(
            person_body(
                first_name=rng.choice(given),
                date_of_birth=born.isoformat(),
                email=f"person{n % 20}@example.com",
                mobile_phone=f"0412 345 {600 + n % 30:03d}",
                drivers_license=f"L{1000000 + n * 7}",
                street=rng.choice(["12 Main St", "12 Main Street", "Unit 2 12 Main St"]),
            )
        )
    with session_scope(sessions, write=True) as session:
        ids = []
        for n, body in enumerate(bodies):
            kind = LEAD if n % 5 == 0 else CONTACT
            data = PersonCreate.model_validate(body)
            ids.append(people.create_person(session, kind=kind, data=data).id)
        lead = session.get(people.Person, ids[0])
        assert lead is not None
        people.convert_lead(session, lead)
    with session_scope(sessions, write=True) as session:
        merge_people(session, people_ids=[ids[1], ids[2]])
        merge_people(session, people_ids=[ids[6], ids[7]])
    answered = crowded = fewer = 0
    for n in range(60):
        body = dict(rng.choice(bodies))
        if n % 3 == 1:
            body["first_name"] = rng.choice(given)
        if n % 4 == 2:
            body["date_of_birth"] = rng.choice(bodies)["date_of_birth"]
        if n % 5 == 3:
            body["drivers_license"] = None
        query = Identity.of(
            first_name=body["first_name"],
            last_name=body["last_name"],
            date_of_birth=dt.date.fromisoformat(body["date_of_birth"]),
            email=body["email"] if n % 2 else None,
            phones=(body["mobile_phone"],),
            drivers_license=body["drivers_license"],
            street=body["street"],
            postcode=body["postcode"],
            city=body["city"],
        )
        for leads_only in (False, True):
            with session_scope(sessions) as session:
                result = service.match_identity(
                    session, query=query, assets=[], leads_only=leads_only
                )
                reference = _explained_by_orm(session, query, leads_only)
            explanation = result.explanation()
            assert explanation["id"] == reference["id"]
            assert explanation["decision"] == reference["decision"]
            everyone = {candidate["id"]: candidate for candidate in reference["candidates"]}
            assert [everyone[c["id"]] for c in result.candidates] == result.candidates
            ranked = [everyone[c["id"]] for c in reference["candidates"]]
            read = [c for c in ranked if c["id"] in {c["id"] for c in result.candidates}]
            assert result.candidates == read[: service.EXPLAINED_CANDIDATES]
            answered += result.person is not None
            crowded += len(result.candidates) == service.EXPLAINED_CANDIDATES
            fewer += len(result.candidates) < min(10, len(reference["candidates"]))
    assert answered > 0
    assert crowded > 0  # more candidates than are explained
    assert fewer > 0  # the identifiers settled some answers alone
