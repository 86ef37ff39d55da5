"""Operation 1: POST crm/people/rider_courses (docs/decisions.md, "Operation 1 (rider courses)")."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.fields import BOOKING_SOURCES, COURSE_LOCATIONS, LICENSE_TYPES
from ridercrm.people.models import Person
from tests.courses.helpers import PATH, Courses, new_booking


@pytest.fixture
def courses(client: TestClient, admin_headers: dict[str, str]) -> Courses:
    return Courses(client, admin_headers)


def count(sessions: sessionmaker[Session], model: Any) -> int:
    with sessions() as session:
        return int(session.scalar(select(func.count()).select_from(model)) or 0)


def test_interface_sample_books_a_lead_and_converts_it(courses: Courses) -> None:
    entry = courses.one(new_booking(courses.lead, courses.product))
    assert entry["delivery"] == "true"
    assert entry["receipt"] == "Course booked; lead converted to contact."
    assert entry["person_id"] == courses.lead
    assert entry["product_id"] == courses.product
    assert entry["contact_id"].startswith("003")
    assert entry["contact_id"] != courses.lead
    assert entry["asset_id"].startswith("02i")
    assert entry["course_datetime"] == "2026-12-05 08:30:00"
    assert entry["course_date_end"] == "2026-12-05 16:30:00"
    lead = courses.person(courses.lead)
    assert lead["converted_contact_id"] == entry["contact_id"]
    contact = courses.person(entry["contact_id"])
    assert contact["kind"] == "contact"
    assert (contact["first_name"], contact["last_name"]) == ("Lena", "Lead")
    # person fields on the item were written to the contact
    assert contact["mobile_phone"] == "0412 345 678"
    assert contact["drivers_license"] == "L1234567"
    assert contact["opt_in"] is True
    # an updated_since sync never misses the new contact: changed no earlier than created
    assert contact["updated_at"] >= contact["created_at"], contact
    asset = courses.asset(entry["asset_id"])
    assert asset["person_id"] == entry["contact_id"]
    assert asset["course_status"] == "booked"
    assert asset["course_price"] == "249.00"
    assert [(h["from_status"], h["to_status"]) for h in asset["status_history"]] == [
        (None, "booked")
    ]


def test_response_carries_the_audit_id_of_a_stored_record(courses: Courses) -> None:
    response = courses.client.post(
        PATH,
        json={"people_product": [new_booking(courses.contact, courses.product)]},
        headers=courses.headers,
    )
    body = response.json()
    assert body["audit_id"] == response.headers["x-audit-id"]
    record = courses.client.get(f"/admin/audit/{body['audit_id']}", headers=courses.headers).json()
    assert record["operation"] == "crm.rider_courses"
    assert record["outcomes"][0]["delivery"] is True
    history = courses.asset(body["details"][0]["asset_id"])["status_history"]
    assert history[0]["audit_id"] == body["audit_id"]


def test_lead_id_keeps_resolving_to_the_same_contact(courses: Courses) -> None:
    first = courses.book(person_id=courses.lead)
    second = courses.book(person_id=courses.lead, booking_number="HB-2")
    assert second["contact_id"] == first["contact_id"]
    assert second["receipt"] == "Course booked."
    update = courses.one(
        {"person_id": courses.lead, "asset_id": first["asset_id"], "course_status": "cancelled"}
    )
    assert update["delivery"] == "true"
    assert update["contact_id"] == first["contact_id"]
    assert update["person_id"] == courses.lead


def test_fifteen_character_ids_are_accepted(courses: Courses) -> None:
    entry = courses.one(new_booking(courses.contact[:15], courses.product[:15]))
    assert entry["delivery"] == "true"
    assert entry["contact_id"] == courses.contact
    assert entry["product_id"] == courses.product


@pytest.mark.parametrize(
    ("field", "given", "stored"),
    [("course_location", value.upper(), value) for value in COURSE_LOCATIONS]
    + [("course_location", "Ipswich", "ipswitch")]
    + [("booking_source", value.lower(), value) for value in BOOKING_SOURCES]
    + [("license_type", value.lower(), value) for value in LICENSE_TYPES],
)
def test_enumerations_are_case_insensitive_and_stored_in_the_interface_spelling(
    courses: Courses, field: str, given: str, stored: str
) -> None:
    entry = courses.book(**{field: given})
    if field == "license_type":
        assert courses.person(entry["contact_id"])["license_type"] == stored
    else:
        assert courses.asset(entry["asset_id"])[field] == stored


def test_a_course_in_year_one_fails_alone_and_leaves_a_course_bookable(courses: Courses) -> None:
    """Year 1 has no moment in UTC (no reminder can be timed): such an item fails alone,
    naming the field, and the request's other items are written; a stored course cannot
    be moved there, so it stays bookable."""
    year_one = {"course_datetime": "0001-01-01 10:00:00", "course_date_end": "0001-01-01 18:00:00"}
    body = courses.send(
        new_booking(courses.contact, courses.product, booking_number="Y1-BAD", **year_one),
        new_booking(courses.contact, courses.product, booking_number="Y1-GOOD"),
    )
    bad, good = body["details"]
    assert (bad["delivery"], good["delivery"]) == ("false", "true"), body
    assert bad["receipt"] == (
        "course_datetime: must be in the years 1900 to 9998 (received 1);"
        " course_date_end: must be in the years 1900 to 9998 (received 1)"
        " (booking_number Y1-BAD)."
    )
    moved = courses.one({"asset_id": good["asset_id"], "course_status": "cancelled", **year_one})
    assert moved["delivery"] == "false"
    assert moved["receipt"].startswith("course_datetime: must be in the years 1900 to 9998")
    stored = courses.asset(good["asset_id"])
    assert (stored["course_datetime"], stored["course_status"]) == ("2026-12-05 08:30:00", "booked")
    again = courses.one({"asset_id": good["asset_id"], "course_status": "booked"})
    assert again["delivery"] == "true", again


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("course_location", "melbourne"),
        ("booking_source", "Email"),
        ("course_status", "pending"),
        ("license_type", "CAR"),
        ("course_feedback", "pass Z"),
        ("course_datetime", "05/12/2026 08:30"),
        ("course_datetime", "2026-02-30 08:30:00"),
        ("course_datetime", "0001-01-01 10:00:00"),
        ("course_datetime", "1899-12-31"),
        ("course_date_end", "9999-12-31 23:00:00"),
        ("date_of_birth", "1999-13-01"),
        ("course_price", "two hundred"),
        ("postcode", "12345"),
        ("opt_in", "maybe"),
        ("person_id", 12345),
    ],
)
def test_a_wrong_value_fails_the_item_naming_the_field(
    courses: Courses, sessions: sessionmaker[Session], field: str, value: Any
) -> None:
    item = new_booking(courses.lead, courses.product)
    item[field] = value
    entry = courses.one(item)
    assert entry["delivery"] == "false"
    assert entry["receipt"].startswith(f"{field}: ")
    assert entry["asset_id"] == ""
    assert count(sessions, Asset) == 0
    assert courses.person(courses.lead)["converted_contact_id"] is None


@pytest.mark.parametrize(
    "field",
    ["product_id", "date_of_birth", "license_type", "drivers_license", "street", "city", "state", "country",
     "course_datetime", "course_location", "dealer_code", "course_price", "booking_source", "course_status"],
)  # fmt: skip
def test_a_new_booking_needs_every_rule_one_field(
    courses: Courses, sessions: sessionmaker[Session], field: str
) -> None:
    item = new_booking(courses.lead, courses.product)
    del item[field]
    entry = courses.one(item)
    assert entry["delivery"] == "false"
    assert f"{field}: is required for a new booking" in entry["receipt"]
    assert count(sessions, Asset) == 0


def test_a_new_booking_needs_a_mobile_or_a_home_phone(courses: Courses) -> None:
    entry = courses.one(
        new_booking(courses.contact, courses.product, mobile_phone="", home_phone="")
    )
    assert entry["delivery"] == "false"
    assert "mobile_phone or home_phone: is required for a new booking" in entry["receipt"]
    home_only = courses.one(
        new_booking(courses.contact, courses.product, mobile_phone="", home_phone="03 9999 0000")
    )
    assert home_only["delivery"] == "true"


def test_unknown_person_product_and_asset_fail_the_item(courses: Courses) -> None:
    unknown_person = courses.one(new_booking("003000000000000AAA", courses.product))
    # A refused booking names its booking number, so the client knows which one failed.
    assert unknown_person["receipt"] == (
        "person_id: no contact or lead with id 003000000000000AAA (booking_number HB-102938)."
    )
    unknown_product = courses.one(new_booking(courses.contact, "01t000000000000AAA"))
    assert unknown_product["receipt"] == (
        "product_id: no product with id 01t000000000000AAA (booking_number HB-102938)."
    )
    invalid = courses.one(new_booking("00Q...", courses.product, opt_in="maybe"))
    assert invalid["receipt"] == (
        "opt_in: must be true or false (also 1/0, on/off, yes/no, any case) (received text of"
        " 5 characters) (booking_number HB-102938)."
    )
    unknown_asset = courses.one({"asset_id": "02i000000000000AAA", "course_status": "cancelled"})
    assert unknown_asset["receipt"] == "asset_id: no course with id 02i000000000000AAA."
    for entry in (unknown_person, unknown_product, unknown_asset):
        assert entry["delivery"] == "false"


def test_an_id_whose_checksum_suffix_is_wrong_is_called_mistyped(courses: Courses) -> None:
    mistyped = "its last 3 characters are not the checksum of the first 15 (mistyped?)"
    # 9 is no suffix character; the checksum of 003A0000006Vm9r is IAC, not AAA
    person = courses.one(new_booking("003A0000006Vm9r999", courses.product))
    assert person["receipt"] == (
        f"person_id: 003A0000006Vm9r999 is not a valid record id ({mistyped})"
        " (booking_number HB-102938)."
    )
    person = courses.one(new_booking("003A0000006Vm9rAAA", courses.product))
    assert person["receipt"] == (
        f"person_id: no contact or lead with id 003A0000006Vm9rAAA ({mistyped})"
        " (booking_number HB-102938)."
    )
    product = courses.one(new_booking(courses.contact, "01tA0000006Vm9rAAA"))
    assert product["receipt"] == (
        f"product_id: no product with id 01tA0000006Vm9rAAA ({mistyped})"
        " (booking_number HB-102938)."
    )
    asset = courses.one({"asset_id": "02iA0000006Vm9rAAA", "course_status": "cancelled"})
    assert asset["receipt"] == f"asset_id: no course with id 02iA0000006Vm9rAAA ({mistyped})."
    # one case throughout: an id whose case a system dropped, merely unknown
    folded = courses.one(new_booking("003a0000006vm9rAAA", courses.product))
    assert folded["receipt"] == (
        "person_id: no contact or lead with id 003a0000006vm9rAAA (booking_number HB-102938)."
    )
    for entry in (person, product, asset, folded):
        assert entry["delivery"] == "false"


def test_resending_a_booking_returns_the_same_course(
    courses: Courses, sessions: sessionmaker[Session]
) -> None:
    first = courses.book()
    again = courses.book(rider_instructor_1="Alex Kim")
    assert again["asset_id"] == first["asset_id"]
    assert again["receipt"] == "Course updated."
    assert courses.asset(first["asset_id"])["rider_instructor_1"] == "Alex Kim"
    assert count(sessions, Asset) == 1


def test_a_booking_number_of_another_person_fails(courses: Courses) -> None:
    courses.book()
    other = courses.one(new_booking(courses.lead, courses.product))
    assert other["delivery"] == "false"
    assert other["receipt"].startswith("person_id: course ")


def test_a_person_may_rebook_the_same_product_with_a_new_booking_number(courses: Courses) -> None:
    first = courses.book(course_status="completed - fail", course_feedback="fail 2")
    second = courses.book(booking_number="HB-REBOOK")
    assert second["asset_id"] != first["asset_id"]


def test_status_update_with_only_the_interface_fields(courses: Courses) -> None:
    booked = courses.book()
    update = {
        "person_id": courses.contact,
        "asset_id": booked["asset_id"],
        "course_status": "Cancelled",
        "course_datetime": "2026-12-06 08:30:00",
        "course_date_end": "2026-12-06 16:30:00",
    }
    entry = courses.one(update)
    assert entry["delivery"] == "true"
    assert entry["receipt"] == "Course status changed from booked to cancelled."
    assert entry["course_datetime"] == "2026-12-06 08:30:00"
    asset = courses.asset(booked["asset_id"])
    assert asset["course_status"] == "cancelled"
    assert asset["course_datetime"] == "2026-12-06 08:30:00"


def test_update_by_asset_id_alone(courses: Courses) -> None:
    booked = courses.book()
    entry = courses.one(
        {
            "asset_id": booked["asset_id"],
            "course_status": "completed - pass",
            "course_feedback": "PASS a",
        }
    )
    assert entry["delivery"] == "true"
    assert entry["contact_id"] == courses.contact
    assert entry["product_id"] == courses.product
    asset = courses.asset(booked["asset_id"])
    assert (asset["course_status"], asset["course_feedback"]) == ("completed - pass", "pass A")


def test_update_by_person_and_product_pair(courses: Courses) -> None:
    booked = courses.book()
    entry = courses.one(
        {"person_id": courses.contact, "product_id": courses.product, "course_status": "cancelled"}
    )
    assert entry["delivery"] == "true"
    assert entry["asset_id"] == booked["asset_id"]
    # now cancelled, the pair names no open course
    again = courses.one(
        {"person_id": courses.contact, "product_id": courses.product, "course_status": "booked"}
    )
    assert again["delivery"] == "false"
    assert again["receipt"] == "product_id: the person has no open course of this product."


def test_pair_with_two_open_courses_is_ambiguous(courses: Courses) -> None:
    courses.book()
    courses.book(booking_number="HB-SECOND")
    entry = courses.one(
        {"person_id": courses.contact, "product_id": courses.product, "course_status": "cancelled"}
    )
    assert entry["delivery"] == "false"
    assert "several open courses" in entry["receipt"]


def test_refused_transition_names_it_and_reports_the_course(courses: Courses) -> None:
    booked = courses.book()
    courses.one({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    entry = courses.one(
        {"person_id": courses.contact, "asset_id": booked["asset_id"], "course_status": "completed - pass",
         "course_feedback": "pass A", "course_datetime": "2026-12-05 08:30:00"}
    )  # fmt: skip
    assert entry["delivery"] == "false"
    assert entry["receipt"] == "course_status: a cancelled course cannot become completed - pass."
    assert entry["contact_id"] == courses.contact
    assert entry["product_id"] == courses.product
    assert entry["asset_id"] == booked["asset_id"]
    assert courses.asset(booked["asset_id"])["course_status"] == "cancelled"


@pytest.mark.parametrize(
    "change",
    [
        {"course_status": "foo"},
        {"course_status": "cancelled", "postcode": "12"},
        {"course_status": "completed - pass", "course_feedback": "fail 1"},
    ],
    ids=["bad-status", "bad-postcode", "feedback-unfit"],
)
@pytest.mark.parametrize("named_by", ["asset_id", "booking_number"])
def test_a_refused_change_of_a_stored_course_reports_the_course(
    courses: Courses, change: dict[str, str], named_by: str
) -> None:
    """However the item fails (a value the interface refuses, or a rule), it reports the
    course it named: its product, contact and times, as EXAMPLES.md's refusal does. A
    person_id of someone else gets nothing of the course."""
    booked = courses.book(booking_number=f"RC-{named_by}-{len(change)}-{change['course_status']}")
    stored = courses.asset(booked["asset_id"])
    naming = {named_by: stored["id"] if named_by == "asset_id" else stored["booking_number"]}
    entry = courses.one({**naming, **change})
    assert entry["delivery"] == "false", entry
    assert (entry["contact_id"], entry["product_id"], entry["asset_id"]) == (
        courses.contact, courses.product, booked["asset_id"]
    )  # fmt: skip
    assert (entry["course_datetime"], entry["course_date_end"]) == (
        booked["course_datetime"], booked["course_date_end"]
    )  # fmt: skip
    stranger = courses.one({**naming, **change, "person_id": courses.lead})
    assert (stranger["contact_id"], stranger["course_datetime"]) == ("", "")
    assert courses.asset(booked["asset_id"])["course_status"] == "booked"


@pytest.mark.parametrize(
    ("status", "feedback", "ok"),
    [
        ("completed - pass", "pass B", True),
        ("completed - pass", "fail 1", False),
        ("completed - pass", "", False),
        ("completed - fail", "fail 4", True),
        ("completed - fail", "pass A", False),
        ("booked", "pass A", False),
        ("cancelled", "fail 1", False),
        ("cancelled", "", True),
    ],
)
def test_feedback_must_fit_the_status(
    courses: Courses, status: str, feedback: str, ok: bool
) -> None:
    booked = courses.book()
    entry = courses.one(
        {"asset_id": booked["asset_id"], "course_status": status, "course_feedback": feedback}
    )
    assert entry["delivery"] == ("true" if ok else "false")
    if not ok:
        assert entry["receipt"].startswith("course_feedback: ")
        assert courses.asset(booked["asset_id"])["course_status"] == "booked"


def test_result_correction_between_pass_and_fail_keeps_history(courses: Courses) -> None:
    booked = courses.book()
    asset_id = booked["asset_id"]
    courses.one(
        {"asset_id": asset_id, "course_status": "completed - pass", "course_feedback": "pass A"}
    )
    corrected = courses.one(
        {"asset_id": asset_id, "course_status": "completed - fail", "course_feedback": "fail 1"}
    )
    assert corrected["delivery"] == "true"
    history = courses.asset(asset_id)["status_history"]
    assert [(h["from_status"], h["to_status"]) for h in history] == [
        (None, "booked"), ("booked", "completed - pass"), ("completed - pass", "completed - fail"),
    ]  # fmt: skip


def test_items_are_independent_and_a_bad_one_leaves_no_trace(
    courses: Courses, sessions: sessionmaker[Session]
) -> None:
    good = new_booking(courses.contact, courses.product, booking_number="HB-GOOD")
    # passes every check up to the feedback rule, after the lead would be converted
    bad = new_booking(
        courses.lead, courses.product, booking_number="HB-BAD", course_status="completed - pass"
    )
    body = courses.send(good, bad, "not an object", {"person_id": courses.contact})
    delivery = [entry["delivery"] for entry in body["details"]]
    assert delivery == ["true", "false", "false", "false"]
    assert body["details"][2]["receipt"] == (
        "item: must be an object of fields (received text of 13 characters); send"
        " people_product[0][field]=... or people_product=<JSON array of objects>."
    )
    assert count(sessions, Asset) == 1
    assert count(sessions, AssetStatusChange) == 1
    assert courses.person(courses.lead)["converted_contact_id"] is None
    assert count(sessions, Person) == 2


def test_empty_strings_do_not_clear_the_person(courses: Courses) -> None:
    courses.book(home_phone="03 9999 0000")
    courses.book(booking_number="HB-9", home_phone="")
    assert courses.person(courses.contact)["home_phone"] == "03 9999 0000"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"this is not json", "body is not JSON"),
        (b'{"people": []}', "people_product: must be an array of items (received nothing)"),
        (
            b'{"people_product": {"person_id": "x"}}',
            "people_product: must be an array of items (received an object)",
        ),
        (b"[]", "people_product array"),
    ],
)
def test_whole_request_failure_is_plain_text(courses: Courses, body: bytes, reason: str) -> None:
    response = courses.client.post(
        PATH, content=body, headers={**courses.headers, "content-type": "application/json"}
    )
    assert response.status_code == 400
    assert response.text == "Status update failed."
    assert response.headers["content-type"].startswith("text/plain")
    assert reason in response.headers["x-failure-reason"]
    record = courses.client.get(
        f"/admin/audit/{response.headers['x-audit-id']}", headers=courses.headers
    ).json()
    assert reason in record["failure_reason"]
    assert record["response_status"] == 400


def test_too_many_items_is_refused_whole(courses: Courses, sessions: sessionmaker[Session]) -> None:
    items = [
        new_booking(courses.contact, courses.product, booking_number=f"HB-{n}") for n in range(201)
    ]
    response = courses.client.post(PATH, json={"people_product": items}, headers=courses.headers)
    assert response.status_code == 413
    assert response.text == "Status update failed."
    assert "too many items" in response.headers["x-failure-reason"]
    assert count(sessions, Asset) == 0


def test_two_hundred_items_are_accepted(courses: Courses, sessions: sessionmaker[Session]) -> None:
    items = [
        new_booking(courses.contact, courses.product, booking_number=f"HB-{n}") for n in range(200)
    ]
    body = courses.send(*items)
    assert {entry["delivery"] for entry in body["details"]} == {"true"}
    assert count(sessions, Asset) == 200


def test_failed_key_checks_answer_in_the_operation_shape(courses: Courses, make_key: Any) -> None:
    item = {"people_product": [new_booking(courses.contact, courses.product)]}
    missing = courses.client.post(PATH, json=item)
    assert (missing.status_code, missing.text) == (401, "Status update failed.")
    match_only = {"X-API-Key": make_key("match")}
    wrong_scope = courses.client.post(PATH, json=item, headers=match_only)
    assert (wrong_scope.status_code, wrong_scope.text) == (403, "Status update failed.")
    courses_only = {"X-API-Key": make_key("courses")}
    assert courses.client.post(PATH, json=item, headers=courses_only).status_code == 200


def _form_fields(item: dict[str, Any]) -> str:
    from urllib.parse import urlencode

    flat = {f"people_product[0][{k}]": ("true" if v is True else v) for k, v in item.items()}
    return urlencode(flat)


@pytest.mark.parametrize(
    ("content_type", "encode"),
    [
        ("application/json", lambda body: json.dumps(body)),
        ("text/json", lambda body: json.dumps(body)),
        ("text/plain; charset=utf-8", lambda body: json.dumps(body)),
        ("application/x-www-form-urlencoded", lambda body: json.dumps(body)),
        (
            "application/x-www-form-urlencoded",
            lambda body: "people_product=" + json.dumps(body["people_product"]),
        ),
        ("application/x-www-form-urlencoded", lambda body: _form_fields(body["people_product"][0])),
    ],
    ids=["json", "text-json", "text-plain", "form-raw-json", "form-json-field", "form-brackets"],
)
def test_every_content_type_books(courses: Courses, content_type: str, encode: Any) -> None:
    body = {
        "people_product": [new_booking(courses.lead, courses.product, rider_instructor_1="Zoë Ōta")]
    }
    response = courses.client.post(
        PATH,
        content=encode(body).encode("utf-8"),
        headers={**courses.headers, "content-type": content_type},
    )
    assert response.status_code == 200, response.text
    entry = response.json()["details"][0]
    assert entry["delivery"] == "true", entry
    assert courses.asset(entry["asset_id"])["rider_instructor_1"] == "Zoë Ōta"
    assert courses.person(entry["contact_id"])["opt_in"] is True


def test_text_json_response_when_accept_prefers_it(courses: Courses) -> None:
    response = courses.client.post(
        PATH,
        json={"people_product": [new_booking(courses.contact, courses.product)]},
        headers={**courses.headers, "accept": "text/json"},
    )
    assert response.headers["content-type"].startswith("text/json")
    assert response.json()["details"][0]["delivery"] == "true"


def test_one_request_converts_several_leads(
    courses: Courses, sessions: sessionmaker[Session]
) -> None:
    leads = [courses.lead] + [
        courses.client.post(
            "/admin/leads",
            json={"first_name": f"L{n}", "last_name": "Lead"},
            headers=courses.headers,
        ).json()["id"]
        for n in range(3)
    ]
    items = [
        new_booking(lead, courses.product, booking_number=f"HB-L{n}")
        for n, lead in enumerate(leads * 2)
    ]
    body = courses.send(*items)
    assert [e["delivery"] for e in body["details"]] == ["true"] * 8
    contacts = [e["contact_id"] for e in body["details"]]
    # each lead became one contact, and its second booking went to that contact
    assert contacts[:4] == contacts[4:]
    assert len(set(contacts)) == 4
    assert count(sessions, Asset) == 8
