"""Bookings as real client libraries encode them, byte for byte (tests/web/client_bodies.py).

A booking website written with any of these must book its customers: one optional
flag or a postcode sent as text must never lose a booking.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.transfer.columns import LEADS, PRODUCTS
from ridercrm.transfer.importer import import_csv
from tests.transfer.helpers import write_csv
from tests.web import client_bodies as bodies

LEAD_A, LEAD_B = "00Q000000000001EAA", "00Q000000000002EAA"
PRODUCT = "01t000000000001AAA"
FORM = "application/x-www-form-urlencoded"
BOOKED = "Course booked; lead converted to contact."
# What each lead's contact holds after its booking: postcode and opt_in.
A_STORED = ("0800", True)
B_STORED = ("3064", False)


@pytest.fixture
def world(
    client: TestClient,
    sessions: sessionmaker[Session],
    admin_headers: dict[str, str],
    tmp_path: Path,
) -> Callable[..., Any]:
    """The two leads and the product the bodies name, imported with their ids."""
    leads = write_csv(
        tmp_path / "leads.csv",
        ["Id", "FirstName", "LastName", "Birthdate", "Email", "PostalCode"],
        [
            [LEAD_A, "Ann", "Null", "1999-04-12", "ann.null@example.com", "0800"],
            [LEAD_B, "Bo", "Tran", "2001-09-30", "bo.tran@example.com", "3064"],
        ],
    )
    products = write_csv(
        tmp_path / "products.csv",
        ["Id", "Name", "ProductCode", "UnitPrice"],
        [[PRODUCT, "Learner Approved Pre-Licence (Somerton)", "LAP-SOM", "249.00"]],
    )
    assert import_csv(sessions, LEADS, leads).summary() == "imported 2 leads, 0 bad rows"
    assert import_csv(sessions, PRODUCTS, products).summary() == "imported 1 product, 0 bad rows"

    def post(path: str, body: bytes, content_type: str) -> Any:
        headers = {**admin_headers, "Content-Type": content_type}
        return client.post(path, content=body, headers=headers)

    return post


def contact_of(client: TestClient, headers: dict[str, str], lead: str) -> dict[str, Any]:
    converted = client.get(f"/admin/people/{lead}", headers=headers).json()
    assert converted["converted_contact_id"], converted
    contact = client.get(f"/admin/people/{converted['converted_contact_id']}", headers=headers)
    return dict(contact.json())


@pytest.mark.parametrize(
    ("body", "content_type", "stored"),
    [
        pytest.param(bodies.QS_INDICES, FORM, [A_STORED, B_STORED], id="qs-indices"),
        pytest.param(bodies.QS_BRACKETS, FORM, [A_STORED, B_STORED], id="qs-brackets"),
        pytest.param(bodies.QS_ALLOW_DOTS, FORM, [A_STORED, B_STORED], id="qs-allowDots"),
        pytest.param(bodies.JQUERY_PARAM, f"{FORM}; charset=UTF-8", [A_STORED, B_STORED], id="jquery-param"),
        pytest.param(bodies.URLSEARCHPARAMS, f"{FORM};charset=UTF-8", [A_STORED, B_STORED], id="URLSearchParams"),
        pytest.param(bodies.URLSEARCHPARAMS_JSON, f"{FORM};charset=UTF-8", [A_STORED, B_STORED], id="URLSearchParams-JSON-field"),
        pytest.param(bodies.AXIOS, FORM, [A_STORED, B_STORED], id="axios"),
        pytest.param(bodies.PYTHON_REQUESTS, FORM, [A_STORED, B_STORED], id="python-requests"),
        pytest.param(bodies.PHP_HTTP_BUILD_QUERY, FORM, [A_STORED, B_STORED], id="php-http_build_query"),
        pytest.param(bodies.RAILS_TO_QUERY, FORM, [A_STORED, B_STORED], id="rails-to_query"),
        pytest.param(bodies.CURL_DATA_URLENCODE, FORM, [A_STORED], id="curl-data-urlencode"),
        pytest.param(bodies.HTML_CHECKBOX, FORM, [A_STORED], id="html-checkbox"),
        pytest.param(bodies.PHP_JSON_ENCODE, "application/json", [("3064", True)], id="php-json_encode"),
    ],
)  # fmt: skip
def test_every_client_encoding_books_every_item(
    world: Callable[..., Any],
    client: TestClient,
    admin_headers: dict[str, str],
    body: bytes,
    content_type: str,
    stored: list[tuple[str, bool]],
) -> None:
    response = world("/crm/people/rider_courses", body, content_type)
    assert response.status_code == 200, response.headers.get("x-failure-reason")
    details = response.json()["details"]
    assert [(d["delivery"], d["receipt"]) for d in details] == [("true", BOOKED)] * len(stored)
    for lead, (postcode, opt_in), detail in zip((LEAD_A, LEAD_B), stored, details, strict=False):
        contact = contact_of(client, admin_headers, lead)
        assert (contact["postcode"], contact["opt_in"]) == (postcode, opt_in)
        assert detail["person_id"] == lead
        asset = client.get(f"/admin/assets/{detail['asset_id']}", headers=admin_headers).json()
        assert asset["booking_number"] == ("WEB-1001" if lead == LEAD_A else "WEB-1002")


def test_qs_match_with_a_text_postcode_and_explain_finds_the_lead(
    world: Callable[..., Any],
) -> None:
    response = world("/crm/people/match", bodies.QS_MATCH, FORM)
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["receipt"], body["ID"]) == ("Lead found.", LEAD_A)
    assert body["match"]["candidates"][0]["id"] == LEAD_A  # explain=true, as text


def test_rails_to_query_modify_with_a_text_postcode(
    world: Callable[..., Any], client: TestClient, admin_headers: dict[str, str]
) -> None:
    # Rails: {people_data: [{ID: ..., city: "Darwin", postcode: 810}]}.to_query
    raw = (
        b"people_data%5B%5D%5BID%5D=00Q000000000002EAA&people_data%5B%5D%5Bcity%5D=Darwin"
        b"&people_data%5B%5D%5Bpostcode%5D=810"
        b"&people_data%5B%5D%5BID%5D=00Q000000000001EAA&people_data%5B%5D%5Bcity%5D=Palmerston"
    )
    response = world("/crm/modify", raw, FORM)
    assert response.status_code == 200, response.text
    assert response.json()["details"] == [
        {"ID": LEAD_B, "fields": 2, "status": True},
        {"ID": LEAD_A, "fields": 1, "status": True},
    ]
    stored = client.get(f"/admin/people/{LEAD_B}", headers=admin_headers).json()
    assert (stored["city"], stored["postcode"]) == ("Darwin", "0810")


def test_php_http_build_query_creates_a_contact_named_null(
    world: Callable[..., Any], client: TestClient, admin_headers: dict[str, str]
) -> None:
    # PHP: http_build_query(['first_name' => 'Ann', 'last_name' => 'Null',
    #                        'postcode' => 800, 'opt_in' => true])
    raw = b"first_name=Ann&last_name=Null&postcode=800&opt_in=1"
    response = world("/admin/contacts", raw, FORM)
    assert response.status_code == 201, response.text
    stored = client.get(f"/admin/people/{response.json()['id']}", headers=admin_headers).json()
    assert (stored["last_name"], stored["postcode"], stored["opt_in"]) == ("Null", "0800", True)


def test_an_unticked_html_checkbox_leaves_opt_in_unset(
    world: Callable[..., Any], client: TestClient, admin_headers: dict[str, str]
) -> None:
    # A browser sends nothing at all for an unticked checkbox.
    raw = bodies.HTML_CHECKBOX.removesuffix(b"&people_product%5B0%5D%5Bopt_in%5D=on")
    response = world("/crm/people/rider_courses", raw, FORM)
    assert response.json()["details"][0]["receipt"] == BOOKED
    assert contact_of(client, admin_headers, LEAD_A)["opt_in"] is None
