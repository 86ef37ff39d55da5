"""Operation 2: POST crm/modify (docs/decisions.md, "Operation 2 (modify)")."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlencode

import pytest
from fastapi.testclient import TestClient
from testkit.factories import create_person

from tests.courses.helpers import Courses, new_booking

PATH = "/crm/modify"


class People:
    def __init__(self, client: TestClient, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers

    def modify(self, *items: Any, status_code: int = 200) -> dict[str, Any]:
        response = self.client.post(PATH, json={"people_data": list(items)}, headers=self.headers)
        assert response.status_code == status_code, response.text
        body = dict(response.json())
        assert body["audit_ID"] == response.headers["x-audit-id"]
        return body

    def get(self, person_id: str) -> dict[str, Any]:
        response = self.client.get(f"/admin/people/{person_id}", headers=self.headers)
        assert response.status_code == 200
        return dict(response.json())


@pytest.fixture
def people(client: TestClient, admin_headers: dict[str, str]) -> People:
    return People(client, admin_headers)


@pytest.fixture
def contact(client: TestClient, admin_headers: dict[str, str]) -> str:
    return create_person(client, admin_headers)


def test_supplied_fields_change_and_are_counted(people: People, contact: str) -> None:
    before = people.get(contact)
    body = people.modify({"ID": contact, "city": "Somerton", "postcode": 3061})
    assert body == {
        "status": True,
        "receipt": "All records modified.",
        "audit_ID": body["audit_ID"],
        "details": [{"ID": contact, "fields": 2, "status": True}],
        "items_failed": 0,
    }
    after = people.get(contact)
    assert (after["city"], after["postcode"]) == ("Somerton", "3061")
    assert after["street"] == before["street"]
    assert after["updated_at"] > before["updated_at"]


@pytest.mark.parametrize(
    ("field", "given", "stored"),
    [
        ("first_name", "Annie", "Annie"),
        ("last_name", "Nguyen-Tran", "Nguyen-Tran"),
        ("date_of_birth", "2001-02-28", "2001-02-28"),
        ("email", " Annie@Example.COM ", "Annie@example.com"),
        ("postcode", "0800", "0800"),
        ("postcode", 800, "0800"),
        ("mobile_phone", "+61 412 000 111", "+61 412 000 111"),
        ("drivers_license", "098765432", "098765432"),
        ("street", "1 High St", "1 High St"),
        ("city", "Kilsyth", "Kilsyth"),
        ("state", "QLD", "QLD"),
        ("country", "Australia", "Australia"),
        ("lead_source", "phone inquiry", "Phone Inquiry"),
        ("lead_source", "Purchased List", "Purchansed List"),
        ("lead_source", "PURCHANSED LIST", "Purchansed List"),
    ],
)
def test_each_field_accepts_a_valid_value(
    people: People, contact: str, field: str, given: Any, stored: str
) -> None:
    body = people.modify({"ID": contact, field: given})
    assert body["details"][0] == {"ID": contact, "fields": 1, "status": True}
    assert people.get(contact)[field] == stored


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("email", "not-an-email"),
        ("date_of_birth", "12/04/1999"),
        ("date_of_birth", "1999-02-30"),
        ("postcode", "123"),
        ("postcode", 12345),
        ("postcode", "abcd"),
        ("lead_source", "Billboard"),
        ("first_name", 42.5),
        ("street", ["1 High St"]),
    ],
)
def test_an_invalid_value_fails_the_item_and_writes_nothing(
    people: People, contact: str, field: str, value: Any
) -> None:
    before = people.get(contact)
    body = people.modify({"ID": contact, "city": "Changed", field: value})
    assert body["status"] is False
    assert body["receipt"] == "One or more records could not be modified."
    assert body["items_failed"] == 1
    entry = body["details"][0]
    assert (entry["ID"], entry["fields"], entry["status"]) == (contact, 0, False)
    assert any(error.startswith(f"{field}: ") for error in entry["errors"])
    assert people.get(contact) == before


def test_unknown_or_missing_id_fails_the_item(people: People) -> None:
    body = people.modify({"ID": "003000000000000AAA", "city": "X"}, {"city": "Y"}, {"ID": "bogus"})
    assert body["items_failed"] == 3
    assert body["details"][0]["errors"] == ["ID: no contact or lead with id 003000000000000AAA"]
    assert body["details"][1]["errors"] == ["ID: is required"]
    assert body["details"][2]["errors"] == [
        "ID: bogus is not a valid record id (an id has 15 or 18 characters, this one 5)"
    ]


def test_an_id_whose_checksum_suffix_is_wrong_is_called_mistyped(people: People) -> None:
    mistyped = "its last 3 characters are not the checksum of the first 15 (mistyped?)"
    body = people.modify(
        {"ID": "003A0000006Vm9r999", "city": "X"},  # 9 is no suffix character
        {"ID": "003A0000006Vm9rAAA", "city": "X"},  # the checksum of 003A0000006Vm9r is IAC
        {"ID": "003a0000006vm9rAAA", "city": "X"},  # one case throughout: merely unknown
    )
    assert body["items_failed"] == 3
    assert [entry["errors"] for entry in body["details"]] == [
        [f"ID: 003A0000006Vm9r999 is not a valid record id ({mistyped})"],
        [f"ID: no contact or lead with id 003A0000006Vm9rAAA ({mistyped})"],
        ["ID: no contact or lead with id 003a0000006vm9rAAA"],
    ]


def test_mixed_batch_writes_good_items_and_leaves_bad_ones_untouched(
    people: People, client: TestClient, admin_headers: dict[str, str]
) -> None:
    ann = create_person(client, admin_headers)
    bob = create_person(client, admin_headers, first_name="Bob", email="bob@example.com")
    bob_before = people.get(bob)
    body = people.modify(
        {"ID": ann, "city": "Somerton", "postcode": 3061},
        {"ID": bob, "city": "Nowhere", "email": "not-an-email"},
        "not an object",
    )
    assert body["status"] is False
    assert body["items_failed"] == 2
    assert [d["status"] for d in body["details"]] == [True, False, False]
    assert [d["fields"] for d in body["details"]] == [2, 0, 0]
    assert body["details"][1]["errors"] == [
        "email: must be an e-mail address such as ann@example.com (received text of 12 characters)"
    ]
    assert people.get(ann)["city"] == "Somerton"
    assert people.get(bob) == bob_before


def test_null_or_empty_clears_an_optional_field(people: People, contact: str) -> None:
    body = people.modify({"ID": contact, "email": None, "street": "", "city": "Kilsyth"})
    assert body["details"][0]["fields"] == 3
    person = people.get(contact)
    assert (person["email"], person["street"], person["city"]) == (None, None, "Kilsyth")


# Invisible text is as empty as spaces: a zero-width space, joiners, a byte-order mark.
@pytest.mark.parametrize("value", [None, "", "   ", "\u200b", " \u200d\ufeff\u2060 "])
def test_names_cannot_be_cleared(people: People, contact: str, value: Any) -> None:
    body = people.modify({"ID": contact, "first_name": value, "city": "Kilsyth"})
    assert body["details"][0]["errors"] == ["first_name: cannot be cleared"]
    assert people.get(contact)["first_name"] == "Ann"
    assert people.get(contact)["city"] == "Craigieburn"


def test_a_converted_leads_id_modifies_its_contact(
    people: People, client: TestClient, admin_headers: dict[str, str]
) -> None:
    courses = Courses(client, admin_headers)
    booked = courses.one(new_booking(courses.lead, courses.product))
    contact_id = booked["contact_id"]
    body = people.modify({"ID": courses.lead, "city": "Tullamarine"})
    assert body["details"][0] == {"ID": courses.lead, "fields": 1, "status": True}
    assert people.get(contact_id)["city"] == "Tullamarine"
    assert people.get(courses.lead)["city"] != "Tullamarine"


def test_fifteen_character_id_and_only_id(people: People, contact: str) -> None:
    body = people.modify({"ID": contact[:15]})
    assert body["details"][0] == {"ID": contact[:15], "fields": 0, "status": True}


def test_unknown_fields_are_ignored(people: People, contact: str) -> None:
    body = people.modify({"ID": contact, "city": "Kilsyth", "favourite_colour": "blue"})
    assert body["details"][0]["fields"] == 1


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"not json at all", "body is not JSON"),
        (b'{"people": []}', "people_data: must be an array of items (received nothing)"),
        (
            b'{"people_data": "x"}',
            "people_data: must be an array of items (received text of 1 character)",
        ),
    ],
)
def test_whole_request_failure_is_400_in_the_same_shape(
    people: People, content: bytes, reason: str
) -> None:
    response = people.client.post(
        PATH, content=content, headers={**people.headers, "content-type": "application/json"}
    )
    assert response.status_code == 400
    body = response.json()
    assert body["status"] is False
    assert reason in body["receipt"]
    assert body["audit_ID"] == response.headers["x-audit-id"]
    assert body["details"] == []


def _form(people: People, content: bytes) -> Any:
    headers = {**people.headers, "content-type": "application/x-www-form-urlencoded"}
    return people.client.post(PATH, content=content, headers=headers)


def test_a_body_that_is_no_object_says_what_it_was_and_how_to_write_it(people: People) -> None:
    response = people.client.post(
        PATH, content=b"[1, 2]", headers={**people.headers, "content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json()["receipt"] == (
        "body: must be an object with a people_data array (received an array);"
        ' send JSON {"people_data": [{...}]}, form fields people_data[0][field]=... (or'
        " people_data[][field]=...), or a form field people_data=<JSON array>."
    )


def test_sparse_form_indexes_are_items_in_index_order(people: People, contact: str) -> None:
    # PHP writes an array with unset entries as people_data[1][...]&people_data[4][...].
    content = urlencode(
        {
            "people_data[4][ID]": contact,
            "people_data[4][city]": "Kilsyth",
            "people_data[1][ID]": contact,
        }
    ).encode()
    body = _form(people, content).json()
    assert [entry["fields"] for entry in body["details"]] == [0, 1]
    assert body["status"] is True


def test_json_text_in_an_empty_bracket_field_says_form_values_are_text(
    people: People, contact: str
) -> None:
    # people_data[]=<JSON object>: the value of a form field is text, never JSON.
    content = urlencode({"people_data[]": json.dumps({"ID": contact})}).encode()
    body = _form(people, content).json()
    assert body["details"] == [
        {
            "ID": "",
            "fields": 0,
            "status": False,
            "errors": [
                "item: must be an object of fields (received text of 28 characters that looks"
                " like JSON, but the value of a field such as people_data[] is text); send"
                " people_data[0][field]=... or people_data=<JSON array of objects>"
            ],
        }
    ]


def test_field_refusals_name_the_shape_received_never_the_value(
    people: People, contact: str
) -> None:
    item = {
        "ID": contact,
        "date_of_birth": "12/04/1999",
        "email": "ann.example.com",
        "lead_source": "Webby",
        "city": "K" * 81,
        "street": ["12 Main St"],
    }
    errors = people.modify(item)["details"][0]["errors"]
    assert sorted(errors) == sorted(
        [
            "date_of_birth: must be a date written YYYY-MM-DD (received text of 10 characters)",
            "email: must be an e-mail address such as ann@example.com"
            " (received text of 15 characters)",
            "lead_source: must be one of Web, Phone Inquiry, Partner Referral, Purchansed List,"
            " Other (received text of 5 characters)",
            "city: must be at most 80 characters (received text of 81 characters)",
            "street: must be text of at most 255 characters (received an array)",
        ]
    )
    for value in ("12/04/1999", "ann.example.com", "Webby", "12 Main St"):
        assert all(value not in error for error in errors)


def test_too_many_items(people: People, contact: str) -> None:
    items = [{"ID": contact, "city": f"C{n}"} for n in range(201)]
    response = people.client.post(PATH, json={"people_data": items}, headers=people.headers)
    assert response.status_code == 413
    assert response.json()["status"] is False
    assert "too many items" in response.json()["receipt"]
    assert people.get(contact)["city"] == "Craigieburn"


@pytest.mark.parametrize(
    ("content_type", "encode"),
    [
        ("application/json", lambda items: json.dumps({"people_data": items})),
        ("text/json", lambda items: json.dumps({"people_data": items})),
        ("text/plain", lambda items: json.dumps({"people_data": items})),
        ("application/x-www-form-urlencoded", lambda items: json.dumps({"people_data": items})),
        ("application/x-www-form-urlencoded", lambda items: "people_data=" + json.dumps(items)),
        (
            "application/x-www-form-urlencoded",
            lambda items: urlencode({f"people_data[0][{k}]": v for k, v in items[0].items()}),
        ),
    ],
    ids=["json", "text-json", "text-plain", "form-raw-json", "form-json-field", "form-brackets"],
)
def test_every_content_type(people: People, contact: str, content_type: str, encode: Any) -> None:
    items = [{"ID": contact, "city": "Slacks Creek", "postcode": "4127"}]
    response = people.client.post(
        PATH,
        content=encode(items).encode(),
        headers={**people.headers, "content-type": content_type},
    )
    assert response.status_code == 200, response.text
    assert response.json()["details"][0]["fields"] == 2
    assert people.get(contact)["postcode"] == "4127"


def test_scope_people_is_needed(people: People, contact: str, make_key: Any) -> None:
    body = {"people_data": [{"ID": contact, "city": "X"}]}
    refused = people.client.post(PATH, json=body, headers={"X-API-Key": make_key("courses")})
    assert refused.status_code == 403
    assert refused.json()["status"] is False
    allowed = people.client.post(PATH, json=body, headers={"X-API-Key": make_key("people")})
    assert allowed.status_code == 200
