"""Merged records stay one hop from their live record, and an id that cannot be followed
fails only its own item (operations 1 and 2), never the request."""

from __future__ import annotations

import itertools

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product, new_booking

from ridercrm.db import session_scope
from ridercrm.people import service as people_service
from ridercrm.people.models import CONTACT, Person
from ridercrm.people.schemas import PersonCreate

MERGE = "/admin/people/merge"


def merged_into(sessions: sessionmaker[Session], person_id: str) -> str | None:
    with session_scope(sessions) as session:
        person = session.get(Person, person_id)
        assert person is not None
        return person.merged_into


def test_merging_a_survivor_points_its_merged_records_at_the_new_survivor(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    ann, anne, annie = (
        create_person(client, admin_headers, first_name=name, email=f"{name}@example.com")
        for name in ("Ann", "Anne", "Annie")
    )
    first = client.post(MERGE, json={"people": [ann, anne], "survivor": ann}, headers=admin_headers)
    assert first.status_code == 200, first.text
    second = client.post(
        MERGE, json={"people": [ann, annie], "survivor": annie}, headers=admin_headers
    )
    assert second.status_code == 200, second.text
    # Anne, merged into Ann before, now points straight at Annie: one hop.
    assert merged_into(sessions, anne) == annie
    assert merged_into(sessions, ann) == annie
    record = client.get(f"/admin/people/{anne}", headers=admin_headers).json()
    assert record["id"] == anne
    assert record["merged_into"] == annie
    # Undo puts the chain back as it was, step by step.
    undone = client.post(f"{MERGE}/{second.json()['merge_id']}/undo", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    assert merged_into(sessions, anne) == ann
    assert merged_into(sessions, ann) is None
    undone = client.post(f"{MERGE}/{first.json()['merge_id']}/undo", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    assert merged_into(sessions, anne) is None


def test_many_merges_deep_an_id_still_works_on_the_survivor(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    ids = [
        create_person(client, admin_headers, first_name=f"Rider{n}", email=f"r{n}@example.com")
        for n in range(70)
    ]
    for older, newer in itertools.pairwise(ids):
        merged = client.post(
            MERGE, json={"people": [older, newer], "survivor": newer}, headers=admin_headers
        )
        assert merged.status_code == 200, merged.text
    answer = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": ids[0], "city": "Kilsyth"}]},
        headers=admin_headers,
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["status"] is True, answer.text
    assert client.get(f"/admin/people/{ids[-1]}", headers=admin_headers).json()["city"] == "Kilsyth"


def chain_too_deep(sessions: sessionmaker[Session], length: int) -> str:
    """A chain of merged records longer than any id is followed, as data stored before
    merges kept one hop (or changed by hand) may hold; its first id."""
    with session_scope(sessions, write=True) as session:
        chain = [
            people_service.create_person(
                session,
                kind=CONTACT,
                data=PersonCreate(
                    first_name="Deep",
                    last_name="Chain",
                    date_of_birth="1990-01-01",
                    email="deep.chain@example.com",
                    postcode="3064",
                ),
            ).id
            for n in range(length)
        ]
        for older, newer in itertools.pairwise(chain):
            session.execute(update(Person).where(Person.id == older).values(merged_into=newer))
    return chain[0]


def test_an_id_too_deep_to_follow_fails_only_its_own_item(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    deep = chain_too_deep(sessions, 70)
    good = create_person(client, admin_headers)
    product = create_product(client, admin_headers)
    modified = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": deep, "city": "Kilsyth"}, {"ID": good, "city": "Kilsyth"}]},
        headers=admin_headers,
    )
    assert modified.status_code == 200, modified.text
    details = modified.json()["details"]
    assert [item["status"] for item in details] == [False, True], details
    assert "merged or converted records" in str(details[0])
    assert client.get(f"/admin/people/{good}", headers=admin_headers).json()["city"] == "Kilsyth"
    booked = client.post(
        "/crm/people/rider_courses",
        json={
            "people_product": [
                new_booking(deep, product, booking_number="HB-1"),
                new_booking(good, product, booking_number="HB-2"),
            ]
        },
        headers=admin_headers,
    )
    assert booked.status_code == 200, booked.text
    first, second = booked.json()["details"]
    assert first["delivery"] == "false"
    assert "merged or converted records" in first["receipt"]
    assert (second["delivery"], second["receipt"]) == ("true", "Course booked.")
    matched = client.post(
        "/crm/people/match",
        json={
            "person_data": {
                "first_name": "Deep",
                "last_name": "Chain",
                "date_of_birth": "1990-01-01",
                "email": "deep.chain@example.com",
                "postcode": "3064",
            }
        },
        headers=admin_headers,
    )
    assert matched.status_code == 200, matched.text
