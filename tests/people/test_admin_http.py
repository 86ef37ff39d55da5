from typing import Any

import pytest
from fastapi.testclient import TestClient
from testkit.factories import create_person, person_body


def test_create_contact_then_read_every_field(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    person_id = create_person(
        client, admin_headers, postcode=800, opt_in="true", lead_source="purchased list"
    )
    assert person_id.startswith("003")
    assert len(person_id) == 18
    response = client.get(f"/admin/people/{person_id}", headers=admin_headers)
    assert response.status_code == 200
    person = response.json()
    assert person["kind"] == "contact"
    assert person["postcode"] == "0800"
    assert person["opt_in"] is True
    assert person["lead_source"] == "Purchansed List"
    assert person["date_of_birth"] == "1999-04-12"
    assert person["converted_contact_id"] is None
    assert person["created_at"]
    assert person["updated_at"]


def test_create_lead(client: TestClient, admin_headers: dict[str, str]) -> None:
    lead_id = create_person(client, admin_headers, kind="leads")
    assert lead_id.startswith("00Q")
    assert client.get(f"/admin/people/{lead_id}", headers=admin_headers).json()["kind"] == "lead"


def test_fifteen_character_id_reads_the_same_person(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    person_id = create_person(client, admin_headers)
    assert (
        client.get(f"/admin/people/{person_id[:15]}", headers=admin_headers).json()["id"]
        == person_id
    )
    assert (
        client.get(f"/admin/people/{person_id.lower()}", headers=admin_headers).json()["id"]
        == person_id
    )


def test_invalid_person_names_each_bad_field_and_stores_nothing(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    body = person_body(postcode="12", license_type="CAR", email="nope", date_of_birth="1999-02-30")
    response = client.post("/admin/contacts", json=body, headers=admin_headers)
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any(e.startswith("postcode:") for e in errors)
    assert any(e.startswith("license_type:") for e in errors)
    assert any(e.startswith("email:") for e in errors)
    assert any(e.startswith("date_of_birth:") for e in errors)
    found = client.get("/admin/people", params={"q": "Ann Nguyen"}, headers=admin_headers).json()
    assert found["people"] == []


def test_missing_last_name_and_unknown_field_are_refused(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post(
        "/admin/leads", json={"first_name": "Lee", "shoe_size": 9}, headers=admin_headers
    )
    assert response.status_code == 400
    assert "last_name: is required" in response.json()["errors"]
    assert "shoe_size: is not a known field" in response.json()["errors"]


@pytest.mark.parametrize("kind", ["contacts", "leads"])
def test_a_person_needs_only_a_last_name(
    client: TestClient, admin_headers: dict[str, str], kind: str
) -> None:
    # Issue 11: a CRM export's contact may have only a last name (the old test required both).
    response = client.post(f"/admin/{kind}", json={"last_name": "Lee"}, headers=admin_headers)
    assert response.status_code == 201, response.text
    stored = client.get(f"/admin/people/{response.json()['id']}", headers=admin_headers).json()
    assert stored["first_name"] is None
    assert stored["last_name"] == "Lee"


def test_search_by_name_email_and_phone(client: TestClient, admin_headers: dict[str, str]) -> None:
    ann = create_person(client, admin_headers)
    create_person(
        client,
        admin_headers,
        first_name="Bob",
        last_name="Smith",
        email="bob@example.com",
        mobile_phone="0499 999 999",
    )

    def ids(q: str) -> list[str]:
        response = client.get("/admin/people", params={"q": q}, headers=admin_headers)
        assert response.status_code == 200
        return [p["id"] for p in response.json()["people"]]

    assert ids("ann nguyen") == [ann]
    assert ids("Nguyen") == [ann]
    assert ids("ANN.NGUYEN@example.com") == [ann]
    assert ids("0412 345 678") == [ann]
    assert ids("Zed") == []


def test_search_by_a_name_prefix_reads_greek_and_latin_letters_alike(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """A name stored in Greek letters is found by a prefix in Latin ones and the reverse
    (docs/decisions.md, "Greek names written in Greek letters"); accents and case do not
    matter in either."""
    greek = create_person(
        client, admin_headers, first_name="Γιώργος", last_name="Παπαδόπουλος", email="g@example.com"
    )
    latin = create_person(
        client, admin_headers, first_name="Zoë", last_name="Papadakis", email="z@example.com"
    )

    def ids(q: str) -> set[str]:
        response = client.get("/admin/people", params={"q": q}, headers=admin_headers)
        assert response.status_code == 200, response.text
        return {p["id"] for p in response.json()["people"]}

    assert ids("Papad") == {greek, latin}
    assert ids("papadopou") == {greek}
    assert ids("giorgos papad") == {greek}
    assert ids("Παπαδ") == {greek, latin}
    assert ids("Γιώργος Παπαδόπ") == {greek}
    assert ids("zoe papa") == {latin}

    # ELOT 743 spells some letters by the next one (alpha-upsilon is av before a voiced
    # letter, af at a word's end; gamma-gamma is ng; mu-pi at a word's start is b): a
    # prefix typed up to such a letter still finds the name (``greek.settled_prefix``).
    stavros = create_person(
        client, admin_headers, first_name="Σταύρος", last_name="Μπούρας", email="s@example.com"
    )
    angeliki = create_person(
        client, admin_headers, first_name="Αγγελική", last_name="Ευαγγέλου", email="a@example.com"
    )
    assert ids("Σταυ") == {stavros}
    assert ids("Σταυ Μπου") == {stavros}
    assert ids("Αγ") == {angeliki}  # noqa: RUF001
    assert ids("Αγγ") == {angeliki}  # noqa: RUF001
    assert ids("Ευ") == {angeliki}  # noqa: RUF001
    assert ids("Αγγελική Ευαγγ") == {angeliki}  # noqa: RUF001
    assert ids("stavros bou") == {stavros}


def test_unknown_person_is_404(client: TestClient, admin_headers: dict[str, str]) -> None:
    response = client.get("/admin/people/003000000000000AAA", headers=admin_headers)
    assert response.status_code == 404
    assert response.json()["audit_id"] == response.headers["x-audit-id"]


def test_people_are_listed_newest_first_a_page_at_a_time_with_filters(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    made = [
        create_person(client, admin_headers, kind="leads" if n % 3 == 0 else "contacts",
                      first_name=f"P{n}", email=f"p{n}@example.com")
        for n in range(8)
    ]  # fmt: skip
    newest_first = made[::-1]

    def page(**params: Any) -> Any:
        response = client.get("/admin/people", params=params, headers=admin_headers)
        assert response.status_code == 200, response.text
        return response.json()

    listed, before = [], None
    while True:
        params: dict[str, Any] = {"limit": 3} | ({"before": before} if before else {})
        body = page(**params)
        listed += [p["id"] for p in body["people"]]
        before = body["next_before"]
        if before is None:
            break
    assert listed == newest_first
    assert [p["id"] for p in page()["people"]] == newest_first
    leads = page(kind="lead", limit=1000)
    assert [p["id"] for p in leads["people"]] == [made[6], made[3], made[0]]
    third = client.get(f"/admin/people/{made[2]}", headers=admin_headers).json()
    since = page(created_since=third["created_at"])
    assert [p["id"] for p in since["people"]] == newest_first[:6]
    changed = client.post(
        "/crm/modify", json={"people_data": [{"ID": made[1], "city": "Kilsyth"}]},
        headers=admin_headers,
    )  # fmt: skip
    assert changed.json()["status"] is True
    updated_at = client.get(f"/admin/people/{made[1]}", headers=admin_headers).json()["updated_at"]
    updated = page(updated_since=updated_at, kind="contact")
    assert [p["id"] for p in updated["people"]] == [made[1]]
    # A search still answers by name, e-mail or phone, and takes the kind filter too.
    assert [p["id"] for p in page(q="p3@example.com")["people"]] == [made[3]]
    assert page(q="p3@example.com", kind="contact")["people"] == []
    # The filters choose before the limit: the first two leads named Nguyen, though a
    # contact (P1) sorts between them.
    assert [p["id"] for p in page(q="Nguyen", kind="lead", limit=2)["people"]] == [
        made[0],
        made[3],
    ]
    assert [p["id"] for p in page(q="Nguyen", created_since=third["created_at"], limit=2)[
        "people"
    ]] == [made[2], made[3]]  # fmt: skip


def test_people_listing_refuses_what_it_cannot_page(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    person = create_person(client, admin_headers)
    for params, reason in [
        ({"limit": 1001}, "limit"),
        ({"kind": "customer"}, "kind"),
        ({"before": "003000000000000AAA"}, "before: no person with id 003000000000000AAA"),
        ({"q": "Ann", "before": person}, "before: pages the list without q"),
        ({"created_since": "yesterday"}, "created_since"),
    ]:
        response = client.get("/admin/people", params=params, headers=admin_headers)
        assert response.status_code == 400, params
        assert reason in response.text
