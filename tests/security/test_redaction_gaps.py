"""RIDERCRM_AUDIT_REDACT leaves no personal value behind (issue 10, finding 6).

Values sent where an id belongs (an e-mail as `ID`, a name as `person_id`, which the
receipts quote), fields spelt as Salesforce spells them, and explanation reasons in
`outcomes` were stored in clear.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from testkit.factories import create_person, create_product, new_booking

from tests.security.personal import PERSON, leaked


@pytest.fixture
def redacting(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(audit_redact=True)


def record_of(client: TestClient, headers: dict[str, str], response: httpx.Response) -> str:
    found = client.get(f"/admin/audit/{response.headers['x-audit-id']}", headers=headers)
    assert found.status_code == 200, found.text
    return json.dumps(found.json(), ensure_ascii=False)


def assert_clean(client: TestClient, headers: dict[str, str], response: httpx.Response) -> None:
    stored = record_of(client, headers, response)
    assert not leaked(stored), f"{leaked(stored)} stored in {stored}"


def test_an_email_sent_as_id_is_redacted_with_the_receipts_quoting_it(
    redacting: TestClient, admin_headers: dict[str, str]
) -> None:
    response = redacting.post(
        "/crm/modify",
        json={"people_data": [{"ID": PERSON["email"], "city": "Kew"}]},
        headers=admin_headers,
    )
    assert response.status_code == 200
    assert PERSON["email"] in response.text, "the response itself echoes what was sent"
    assert_clean(redacting, admin_headers, response)


def test_a_name_sent_as_person_id_is_redacted_with_the_receipts_quoting_it(
    redacting: TestClient, admin_headers: dict[str, str]
) -> None:
    product = create_product(redacting, admin_headers)
    name = f"{PERSON['first_name']} {PERSON['last_name']}"
    item = new_booking(name, product, **{k: PERSON[k] for k in ("mobile_phone", "street")})
    response = redacting.post(
        "/crm/people/rider_courses", json={"people_product": [item]}, headers=admin_headers
    )
    assert response.status_code == 200
    assert name in response.text
    assert_clean(redacting, admin_headers, response)
    # The receipt keeps its shape, only the value is gone.
    record = json.loads(record_of(redacting, admin_headers, response))
    assert json.loads(record["response_body"])["details"][0]["receipt"].startswith("person_id: ")


SALESFORCE_NAMES = {
    "FirstName": PERSON["first_name"],
    "LastName": PERSON["last_name"],
    "Birthdate": PERSON["date_of_birth"],
    "Email": PERSON["email"],
    "MobilePhone": PERSON["mobile_phone"],
    "HomePhone": PERSON["home_phone"],
    "MailingStreet": PERSON["street"],
    "MailingCity": PERSON["city"],
    "MailingState": PERSON["state"],
    "Drivers_License__c": PERSON["drivers_license"],
}


def test_salesforce_field_names_are_redacted(
    redacting: TestClient, admin_headers: dict[str, str]
) -> None:
    contact = create_person(redacting, admin_headers)
    body: dict[str, Any] = {"people_data": [{"ID": contact, **SALESFORCE_NAMES}]}
    response = redacting.post("/crm/modify", json=body, headers=admin_headers)
    assert response.status_code == 200
    assert_clean(redacting, admin_headers, response)
    refused = redacting.post("/admin/contacts", json=SALESFORCE_NAMES, headers=admin_headers)
    assert refused.status_code == 400
    assert_clean(redacting, admin_headers, refused)


def test_explanation_reasons_in_outcomes_quote_no_stored_value(
    redacting: TestClient, admin_headers: dict[str, str]
) -> None:
    create_person(redacting, admin_headers, first_name="Elizabeth")
    query = {
        "first_name": "Liz",
        "last_name": "Nguyen",
        "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com",
        "postcode": "3064",
    }
    response = redacting.post(
        "/crm/people/match", json={"person_data": query, "explain": True}, headers=admin_headers
    )
    assert response.json()["receipt"] == "Contact found.", response.text
    record = json.loads(record_of(redacting, admin_headers, response))
    assert record["outcomes"]["candidates"][0]["reasons"]["given_name"] == "nickname"
    assert "elizabeth" not in json.dumps(record).lower()
