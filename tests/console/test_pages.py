"""The console's pages do their work through the interface's services, audited by name."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select, text
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import new_booking

from ridercrm.audit.models import AuditSubject
from ridercrm.audit.service import purge_records
from ridercrm.audit.subjects import subjects_of
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.migrate import downgrade, upgrade
from ridercrm.people.models import Person
from ridercrm.staff.audit_search import Filters, search
from tests.console.conftest import csrf, sign_in
from tests.courses import builders

ANN, BEN, LIAM = "003DEMO00000ANNYD2", "003DEMO00000BENYD2", "00QDEMO0000LIAM2D4"
BEN_COURSE = "02iDEMO00000001YDA"


@pytest.fixture
def demo(sessions: sessionmaker[Session]) -> None:
    load_demo(sessions, only_if_empty=True)


def found_ids(page: str) -> list[str]:
    return re.findall(r'href="/console/people/(\w{18})"', page)


@pytest.mark.usefixtures("demo")
def test_search_uses_the_matchers_normalisation(console_as: Callable[..., TestClient]) -> None:
    client = console_as("viewer")
    for query in ("0412 345 678", "+61412345678", "ANN.NGUYEN@example.com", "Anne Nguyn", "nguyen"):
        page = client.get("/console/people", params={"q": query})
        assert page.status_code == 200
        assert ANN in found_ids(page.text)[:3], query
    assert found_ids(client.get("/console/people", params={"q": "zzzz qqqq"}).text) == []
    for odd in ("\U0010ffff", "a\U0010ffff b\U0010ffff", "\ud7ff x", "%_ \\"):
        assert client.get("/console/people", params={"q": odd}).status_code == 200


def test_search_finds_a_respelt_name_and_a_licence_and_a_birth_date(
    console_as: Callable[..., TestClient],
    sessions: sessionmaker[Session],
    admin_headers: dict[str, str],
) -> None:
    from testkit.factories import create_person, person_body

    client = console_as("viewer")
    person_id = create_person(
        client,
        admin_headers,
        **person_body(
            first_name="John",
            last_name="Smith",
            drivers_license="NSW 123-456",
            date_of_birth="1987-06-05",
        ),
    )
    for query in ("Jon Smyth", "nsw123456", "1987-06-05", "05/06/1987", "smith 1987-06-05"):
        assert person_id in found_ids(client.get("/console/people", params={"q": query}).text), (
            query
        )


def test_search_by_a_name_prefix_reads_greek_and_latin_letters_alike(
    console_as: Callable[..., TestClient], admin_headers: dict[str, str]
) -> None:
    """A prefix in Latin letters finds a name stored in Greek ones, as the matcher reads
    it (ELOT 743: Παπαδόπουλος is papadopoulos), and a prefix in Greek letters finds both
    (docs/decisions.md, "Greek names written in Greek letters"). The search compared
    lower() of the stored names, so "Papad" found only Latin-lettered names."""
    from testkit.factories import create_person, person_body

    client = console_as("viewer")
    greek = create_person(
        client,
        admin_headers,
        **person_body(first_name="Γιώργος", last_name="Παπαδόπουλος", email="g@example.com"),
    )
    latin = create_person(
        client,
        admin_headers,
        **person_body(first_name="Nikos", last_name="Papadakis", email="n@example.com"),
    )
    other = create_person(
        client,
        admin_headers,
        **person_body(first_name="Ζωή", last_name="Σταύρου", email="z@example.com"),
    )

    def found(query: str) -> set[str]:
        page = client.get("/console/people", params={"q": query})
        assert page.status_code == 200
        return set(found_ids(page.text)) & {greek, latin, other}

    assert found("Papad") == {greek, latin}
    assert found("papadop") == {greek}
    assert found("Giorgos Papad") == {greek}
    assert found("Παπαδ") == {greek, latin}
    assert found("ΠΑΠΑΔΟΠ") == {greek}
    assert found("γιωργος παπαδ") == {greek}
    assert found("Stavr") == {other}
    assert found("Zoi Stavr") == {other}
    # cut inside a letter pair ELOT spells by the next letter: Σταυ is "sta", not "staf"
    assert found("Σταυ") == {other}
    assert found("Ζωή Σταυ") == {other}


@pytest.mark.usefixtures("demo")
def test_a_persons_page_shows_courses_history_and_conversion(
    console_as: Callable[..., TestClient],
) -> None:
    client = console_as("viewer")
    page = client.get(f"/console/people/{BEN}")
    assert page.status_code == 200
    assert BEN_COURSE in page.text
    assert "Status history" in page.text
    assert "Save changes" not in page.text  # a viewer reads only
    lead = client.get(f"/console/people/{LIAM}").text
    assert "lead" in lead
    assert "Convert to a contact" not in lead
    assert client.get("/console/people/003000000000000AAA").status_code == 404
    assert client.get("/console/people/not-an-id").status_code == 404


@pytest.mark.usefixtures("demo")
def test_staff_edit_through_modify_and_are_audited_by_name(
    console_as: Callable[..., TestClient], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    token = csrf(client)
    bad = client.post(f"/console/people/{BEN}", data={"csrf": token, "email": "not an e-mail"})
    assert bad.status_code == 400
    assert "email: must be an e-mail address such as ann@example.com (received text of" in bad.text
    assert 'value="not an e-mail"' in bad.text  # kept in the form to correct
    cleared = client.post(f"/console/people/{BEN}", data={"csrf": token, "last_name": ""})
    assert cleared.status_code == 400
    assert "last_name: cannot be cleared" in cleared.text
    good = client.post(
        f"/console/people/{BEN}", data={"csrf": token, "first_name": "Benjamin", "city": ""}
    )
    assert good.status_code == 200, good.text
    with session_scope(sessions) as session:
        ben = session.get(Person, BEN)
        assert ben is not None
        assert ben.first_name == "Benjamin"
        assert ben.city is None
    audit = client.get("/console/audit", params={"operation": "console.modify_person"}).text
    assert audit.count("<td>console.modify_person</td>") == 3
    record_id = re.findall(r"/console/audit/(a0A\w+)", audit)[0]
    record = client.get(f"/console/audit/{record_id}").text
    assert "staff user staff" in record
    assert "Benjamin" in record
    assert "csrf" not in record.split("Request body")[1]
    # The new name is found by the matching keys the modify service keeps.
    assert BEN in found_ids(client.get("/console/people", params={"q": "Benjamin Kelly"}).text)


@pytest.mark.usefixtures("demo")
def test_staff_convert_a_lead_linked_both_ways(console_as: Callable[..., TestClient]) -> None:
    client = console_as("staff")
    answer = client.post(f"/console/people/{LIAM}/convert", data={"csrf": csrf(client)})
    assert answer.status_code == 303
    contact = answer.headers["location"].rsplit("/", 1)[1]
    assert contact.startswith("003")
    assert f"/console/people/{LIAM}" in client.get(f"/console/people/{contact}").text
    assert f"/console/people/{contact}" in client.get(f"/console/people/{LIAM}").text


@pytest.mark.usefixtures("demo")
def test_a_merged_lead_is_not_converted(
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    """A merged lead stands for its survivor: converting it would make a second live
    copy of the person and give the lead two links, and the merge could not be undone
    as it was made."""
    merged = client.post(
        "/admin/people/merge",
        json={"people": [ANN, LIAM], "survivor": ANN, "force": True},
        headers=admin_headers,
    )
    assert merged.status_code == 200, merged.text
    staff = console_as("staff")
    answer = staff.post(f"/console/people/{LIAM}/convert", data={"csrf": csrf(staff)})
    assert answer.status_code == 400
    assert f"merged into {ANN}" in answer.text
    with session_scope(sessions) as session:
        lead = session.get(Person, LIAM)
        assert lead is not None
        assert (lead.merged_into, lead.converted_contact_id) == (ANN, None)
    undone = client.post(
        f"/admin/people/merge/{merged.json()['merge_id']}/undo", headers=admin_headers
    )
    assert undone.status_code == 200, undone.text


def test_audit_is_filtered(
    console_as: Callable[..., TestClient],
    admin_headers: dict[str, str],
    make_key: Callable[..., str],
) -> None:
    client = console_as("viewer")
    client.get("/admin/audit", headers=admin_headers)
    client.post(
        "/crm/modify", headers={"X-API-Key": make_key("people", name="front desk")}, json={}
    )
    page = client.get("/console/audit", params={"who": "front desk"}).text
    assert "<td>crm.modify</td>" in page
    assert "admin.search_audit" not in page
    failures = client.get("/console/audit", params={"outcome": "failure"}).text
    assert "admin.search_audit" not in failures
    assert "crm.modify" in failures
    unread = client.get("/console/audit", params={"since": "yesterday", "who": "front desk"})
    assert unread.status_code == 400
    assert "<td>crm.modify</td>" not in unread.text  # not the other filters' records alone
    assert client.get("/console/audit", params={"person": "x' OR 1=1"}).status_code == 400
    dated = client.get("/console/audit", params={"since": "2000-01-01", "until": "2000-01-02"})
    assert "No audit record matches." in dated.text
    assert client.get("/console/audit/a0A000000000001AAA").status_code == 404


def test_a_record_honours_audit_redaction(
    console_as: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    client = console_as("viewer", audit_redact=True)
    client.post(
        "/crm/people/match",
        headers={"X-API-Key": make_key("match")},
        json={"first_name": "Zed", "last_name": "Quartermaine", "email": "zed@example.com"},
    )
    listing = client.get("/console/audit", params={"operation": "crm.people_match"}).text
    record_id = re.findall(r"/console/audit/(a0A\w+)", listing)[0]
    record = client.get(f"/console/audit/{record_id}").text
    assert "Quartermaine" not in record
    assert "[redacted]" in record


def test_admin_creates_a_key_shown_once_that_works(console_as: Callable[..., TestClient]) -> None:
    client = console_as("admin")
    token = csrf(client)
    made = client.post(
        "/console/admin/keys", data={"csrf": token, "name": "desk", "scope": ["products", "match"]}
    )
    key = re.findall(r'id="new-key">([^<]+)<', made.text)[0]
    assert client.get("/crm/products", headers={"X-API-Key": key}).status_code == 200
    listing = client.get("/console/admin/keys").text
    assert key not in listing
    key_id = re.findall(r"/console/admin/keys/(\d+)/revoke", listing)[-1]
    assert (
        client.post(f"/console/admin/keys/{key_id}/revoke", data={"csrf": token}).status_code == 200
    )
    assert client.get("/crm/products", headers={"X-API-Key": key}).status_code == 401
    refused = client.post("/console/admin/keys", data={"csrf": token, "name": "none"})
    assert refused.status_code == 400
    assert "a key needs at least one scope" in refused.text
    record = client.get("/console/audit", params={"operation": "console.create_key"}).text
    record_id = re.findall(r"/console/audit/(a0A\w+)", record)[-1]
    assert key not in client.get(f"/console/audit/{record_id}").text


def test_admin_manages_staff_users(
    console_as: Callable[..., TestClient], make_client: Callable[..., TestClient]
) -> None:
    admin = console_as("admin")
    token = csrf(admin)
    made = admin.post("/console/admin/users", data={"csrf": token, "name": "vic", "role": "viewer"})
    password = re.findall(r'id="new-password">([^<]+)<', made.text)[0]
    vic = make_client()
    vic.follow_redirects = False
    assert sign_in(vic, "vic", password).status_code == 303
    assert admin.post("/console/admin/users/vic/disable", data={"csrf": token}).status_code == 200
    assert vic.get("/console/people").status_code == 303  # signed out
    assert sign_in(vic, "vic", password).status_code == 401
    again = admin.post(
        "/console/admin/users", data={"csrf": token, "name": "vic", "role": "viewer"}
    )
    assert again.status_code == 400
    assert "exists already" in again.text
    reset = admin.post("/console/admin/users/vic/reset-password", data={"csrf": token})
    assert re.findall(r'id="new-password">([^<]+)<', reset.text)[0] != password


@pytest.mark.parametrize("name", ["..", ".", "adm\u200bin", "\u202enimda", "a\u2066b"])
def test_a_staff_user_name_no_page_can_reach_or_that_passes_for_another_is_refused(
    name: str, console_as: Callable[..., TestClient]
) -> None:
    admin = console_as("admin")
    made = admin.post(
        "/console/admin/users", data={"csrf": csrf(admin), "name": name, "role": "viewer"}
    )
    assert made.status_code == 400
    assert "a staff user&#39;s name" in made.text
    assert f"<td>{name}</td>" not in admin.get("/console/admin/users").text


def test_admin_creates_and_deactivates_products(console_as: Callable[..., TestClient]) -> None:
    client = console_as("admin")
    token = csrf(client)
    made = client.post(
        "/console/admin/products",
        data={"csrf": token, "name": "Night ride", "code": "NIGHT", "price": "99.50"},
    )
    assert made.status_code == 200
    product_id = re.findall(r"/console/admin/products/(01t\w+)/active", made.text)[0]
    duplicate = client.post(
        "/console/admin/products",
        data={"csrf": token, "name": "Again", "code": "NIGHT", "price": "1"},
    )
    assert duplicate.status_code == 400
    assert "used by another product" in duplicate.text
    unclear = client.post(
        f"/console/admin/products/{product_id}/active", data={"csrf": token, "active": "maybe"}
    )
    assert unclear.status_code == 400
    assert "inactive" not in client.get("/console/admin/products").text
    off = client.post(
        f"/console/admin/products/{product_id}/active", data={"csrf": token, "active": "false"}
    )
    assert "inactive" in off.text


@pytest.mark.usefixtures("demo")
def test_staff_change_a_course_through_the_status_machine(
    console_as: Callable[..., TestClient],
) -> None:
    client = console_as("staff")
    token = csrf(client)
    path = f"/console/people/{BEN}/courses/{BEN_COURSE}"
    # Another person's page does not change Ben's course (booked → cancelled is allowed).
    elsewhere = client.post(
        f"/console/people/{ANN}/courses/{BEN_COURSE}",
        data={"csrf": token, "course_status": "cancelled"},
    )
    assert elsewhere.status_code == 400
    assert f"course {BEN_COURSE} belongs to another person" in elsewhere.text
    refused = client.post(path, data={"csrf": token, "course_status": "completed - pass"})
    assert refused.status_code == 400
    assert "feedback" in refused.text.lower()
    done = client.post(
        path, data={"csrf": token, "course_status": "completed - pass", "course_feedback": "pass A"}
    )
    assert done.status_code == 200, done.text
    history = done.text.split("Status history")[1]
    assert "completed - pass" in history
    assert "staff" in history  # who changed it: the console's staff user
    wrong = client.post(path, data={"csrf": token, "course_status": "booked"})
    assert wrong.status_code == 400  # completed - pass → booked breaks the status machine


def test_audit_finds_a_persons_and_a_bookings_records_by_what_they_name(
    console_as: Callable[..., TestClient],
    sessions: sessionmaker[Session],
    make_key: Callable[..., str],
) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session)
        ann, bob = builders.person(session), builders.person(session)
    headers = {"X-API-Key": make_key("courses", "match", name="web")}
    client = console_as("viewer")
    for person, number in ((ann, "HB-1"), (bob, "HB-10"), (ann, "HB-2")):
        answer = client.post(
            "/crm/people/rider_courses",
            headers=headers,
            json={"people_product": [new_booking(person, lap, booking_number=number)]},
        )
        assert answer.status_code == 200, answer.text

    def listed(**params: str) -> int:
        page = client.get("/console/audit", params={"operation": "crm.rider_courses", **params})
        assert page.status_code == 200
        return page.text.count("<td>crm.rider_courses</td>")

    assert listed() == 3
    assert listed(person=ann) == 2
    assert listed(person=ann[:15]) == 2  # the 15-character id names the same person
    assert listed(person=bob) == 1
    assert listed(booking="HB-1") == 1  # a booking number, not a part of one (HB-10)
    assert listed(booking="HB-10", person=bob) == 1
    assert listed(booking="HB-10", person=ann) == 0
    assert listed(booking="HB-404") == 0
    # The person page lists the records that name the person or their courses.
    page = client.get(f"/console/people/{ann}").text
    assert page.count("crm.rider_courses") >= 2


def test_purging_the_audit_trail_purges_what_it_named(
    sessions: sessionmaker[Session], make_key: Callable[..., str], client: TestClient
) -> None:
    with session_scope(sessions, write=True) as session:
        lap, ann = builders.product(session), builders.person(session)
    client.post(
        "/crm/people/rider_courses",
        headers={"X-API-Key": make_key("courses")},
        json={"people_product": [new_booking(ann, lap, booking_number="HB-9")]},
    )
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(AuditSubject)) >= 3
    with session_scope(sessions, write=True) as session:
        purge_records(session, older_than_days=-1)
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(AuditSubject)) == 0


def test_what_a_record_names() -> None:
    person, lead, course = "003AbCdEfGhIjKlMNO", "00QAbCdEfGhIjKl", "02iAbCdEfGhIjKlPQR"
    body = (
        f'{{"people_product": [{{"person_id": "{person}", "asset_id": "{course}",'
        f' "booking_number": " HB-7 "}}], "lead": "{lead}", "other": "x003AbCdEfGhIjKlMNOx"}}'
    )
    assert subjects_of(f"/admin/people/{lead}", body, None) == {
        "person:003AbCdEfGhIjKl",
        "person:00QAbCdEfGhIjKl",
        "course:02iAbCdEfGhIjKl",
        "booking:HB-7",
    }
    assert subjects_of("not json", '{"booking_number": ') == set()


def test_the_migration_indexes_what_stored_records_name(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    downgrade(engine, "0011")
    body = '{"people_product": [{"person_id": "003AbCdEfGhIjKlMNO", "booking_number": "HB-5"}]}'
    with session_scope(sessions, write=True) as session:
        session.execute(
            text(
                "INSERT INTO audit_records (id, created_at, operation, method, path,"
                " request_body, response_status, duration_ms) VALUES ('a0A000000000001AAA',"
                " :now, 'crm.rider_courses', 'POST', '/crm/people/rider_courses', :body, 200, 1)"
            ),
            {"now": dt.datetime(2026, 11, 1, tzinfo=dt.UTC), "body": body},
        )
    upgrade(engine)
    with session_scope(sessions) as session:
        for filters in (Filters(person="003AbCdEfGhIjKl"), Filters(booking="HB-5")):
            records, _following = search(session, filters)
            assert [record.id for record in records] == ["a0A000000000001AAA"]
