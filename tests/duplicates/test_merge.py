"""Merging duplicate people and undoing a merge: POST admin/people/merge (docs/decisions.md, "Duplicates (issue 15)")."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm import models  # noqa: F401  (every table in Base.metadata)
from ridercrm.db import Base, session_scope
from ridercrm.duplicates.merge import MergeError, merge_people
from ridercrm.people.models import Person
from tests.courses.helpers import Courses, new_booking
from tests.transfer.helpers import cli

MERGE = "/admin/people/merge"
# History, not state: a merge and its undo add records here by design.
# The outbox is history too: an undo adds its own events, it does not erase the merge's.
HISTORY = {
    "audit_records",
    "audit_subjects",  # the audit records' index of what they name
    "idempotency_records",
    "person_merges",
    "alembic_version",
    "events",
    "webhook_deliveries",
}
# A queue, not state: a merge and its undo each mark their people for the duplicates
# re-check (and the re-checker clears the marks later).
QUEUES = {("people", "duplicate_touched_at")}


@pytest.fixture
def courses(client: TestClient, admin_headers: dict[str, str]) -> Courses:
    return Courses(client, admin_headers)


def merge(client: TestClient, headers: dict[str, str], status: int = 200, **body: Any) -> Any:
    response = client.post(MERGE, json=body, headers=headers)
    assert response.status_code == status, response.text
    return response.json()


def undo(client: TestClient, headers: dict[str, str], merge_id: int, status: int = 200) -> Any:
    response = client.post(f"{MERGE}/{merge_id}/undo", headers=headers)
    assert response.status_code == status, response.text
    return response.json()


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table but the history tables, in a stable order."""
    tables: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as connection:
        for name, table in Base.metadata.tables.items():
            if name in HISTORY:
                continue
            columns = [c for c in table.c if (name, c.name) not in QUEUES]
            rows = connection.execute(select(*columns)).all()
            tables[name] = sorted((tuple(row) for row in rows), key=repr)
    return tables


def duplicate_pair(courses: Courses) -> tuple[str, str, str, set[str]]:
    """A contact with a course, and a lead booked as the same rider with a different e-mail
    (so converted into a second contact with two courses, one completed).

    Returns the first contact, the lead, the lead's contact and that contact's courses.
    """
    client, headers = courses.client, courses.headers
    first = create_person(
        client, headers, first_name="Ann", last_name="Nguyen", email="ann@old.example"
    )
    courses.book(person_id=first, booking_number="HB-1")
    lead = create_person(
        client, headers, kind="leads", first_name="Ann", last_name="Nguyen", email="ann@new.example"
    )
    entry = courses.book(person_id=lead, booking_number="HB-2", email="ann@new.example")
    second = entry["contact_id"]
    done = courses.book(
        person_id=second, booking_number="HB-3", course_datetime="2026-12-06 08:30:00"
    )
    courses.one(
        new_booking(
            second,
            courses.product,
            asset_id=done["asset_id"],
            booking_number="HB-3",
            course_status="completed - pass",
            course_feedback="pass A",
        )
    )
    return first, lead, second, {entry["asset_id"], done["asset_id"]}


def test_merge_moves_every_course_with_its_history_and_old_ids_reach_the_survivor(
    courses: Courses, client: TestClient, admin_headers: dict[str, str]
) -> None:
    first, lead, second, second_assets = duplicate_pair(courses)
    history = {a: courses.asset(a)["status_history"] for a in second_assets}
    assert len(second_assets) == 2

    body = merge(client, admin_headers, people=[second, first], fields={"email": first})
    # The contact that is oldest survives and keeps the e-mail chosen for it.
    assert body["survivor"] == first
    assert body["merged"] == [second]
    assert body["fields"]["email"] == "ann@old.example"
    assert sorted(body["moved"]["courses"]) == sorted(second_assets)

    for asset_id in second_assets:
        asset = courses.asset(asset_id)
        assert asset["person_id"] == first
        assert asset["status_history"] == history[asset_id]
    assert courses.person(second)["merged_into"] == first
    assert courses.person(first)["merged_from"] == [second]
    assert courses.person(first)["email"] == "ann@old.example"

    # Operation 1: the merged contact's id and the lead's id both book for the survivor,
    # echoing the id given.
    for old in (second, lead):
        entry = courses.book(person_id=old, booking_number=f"HB-{old[-4:]}")
        assert entry["person_id"] == old
        assert entry["contact_id"] == first
        assert courses.asset(entry["asset_id"])["person_id"] == first
    # Operation 2: modifying the old id writes the survivor and echoes the id given.
    response = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": second, "city": "Somerton"}]},
        headers=admin_headers,
    )
    assert response.json()["details"][0]["ID"] == second
    assert response.json()["details"][0]["status"] is True
    assert courses.person(first)["city"] == "Somerton"
    assert courses.person(second)["city"] == "Craigieburn"
    # Operations 3 and 4: never the merged record, its survivor, also when the details
    # match only the merged record's own values (its e-mail).
    found = client.post(
        "/crm/people/match",
        json={
            "person_data": {
                "first_name": "Ann",
                "last_name": "Nguyen",
                "email": "ann@new.example",
                "date_of_birth": "1999-04-12",
                "mobile_phone": "0412 345 678",
                "postcode": 3064,
            }
        },
        headers=admin_headers,
    ).json()
    assert found["ID"] == first, found
    leads = client.post(
        "/crm/leads/match",
        json={
            "person_data": {
                "first_name": "Ann",
                "last_name": "Nguyen",
                "email": "ann@new.example",
                "postcode": 3064,
                "lead_source": "Purchased List",
            }
        },
        headers=admin_headers,
    ).json()
    assert leads["receipt"] == "Match not found."


def test_merge_then_undo_leaves_every_table_as_it_was(
    courses: Courses, client: TestClient, admin_headers: dict[str, str], engine: Engine
) -> None:
    first, _lead, second, _assets = duplicate_pair(courses)
    third = create_person(
        client, admin_headers, kind="leads", home_phone="03 9999 0000", opt_in=True
    )
    before = snapshot(engine)

    done = merge(client, admin_headers, people=[first, second, third], fields={"first_name": third})
    assert snapshot(engine) != before
    restored = undo(client, admin_headers, done["merge_id"])
    assert restored["survivor"] == first
    assert sorted(restored["restored"]) == sorted([second, third])
    assert snapshot(engine) == before
    # Undone once; a second undo is refused.
    assert "already undone" in undo(client, admin_headers, done["merge_id"], status=409)["detail"]


def test_undo_is_refused_after_the_survivor_changed(
    courses: Courses, client: TestClient, admin_headers: dict[str, str]
) -> None:
    first, _lead, second, _assets = duplicate_pair(courses)
    done = merge(client, admin_headers, people=[first, second])
    client.post(
        "/crm/modify",
        json={"people_data": [{"ID": first, "city": "Geelong"}]},
        headers=admin_headers,
    )
    refusal = undo(client, admin_headers, done["merge_id"], status=409)
    assert "city" in refusal["detail"]
    assert courses.person(second)["merged_into"] == first


def test_dry_run_previews_and_changes_nothing(
    courses: Courses, client: TestClient, admin_headers: dict[str, str], engine: Engine
) -> None:
    first, _lead, second, _assets = duplicate_pair(courses)
    before = snapshot(engine)
    preview = merge(
        client,
        admin_headers,
        people=[first, second],
        survivor=second,
        fields={"city": first},
        dry_run=True,
    )
    assert preview["merge_id"] is None
    # Newest wins for contact details: the lead's later e-mail.
    assert preview["fields"]["email"] == "ann@new.example"
    assert preview["survivor"] == second
    assert preview["sources"]["city"] == first
    assert len(preview["moved"]["courses"]) == 1
    assert snapshot(engine) == before


def test_the_merge_answers_the_fields_it_changed_as_its_dry_run_does(
    courses: Courses, client: TestClient, admin_headers: dict[str, str]
) -> None:
    first, _lead, second, _assets = duplicate_pair(courses)
    body: dict[str, Any] = {"people": [first, second], "survivor": first}
    preview = merge(client, admin_headers, dry_run=True, **body)
    done = merge(client, admin_headers, **body)
    assert "email" in preview["changed"]  # the lead's later e-mail replaces the first's
    assert done["changed"] == preview["changed"]
    assert done["fields"] == preview["fields"]


# The factory's stored address (testkit.factories.create_person).
FULL_ADDRESS = {
    "street": "12 Main St", "city": "Craigieburn", "state": "VIC", "postcode": "3064",
    "country": "Australia",
}  # fmt: skip


def assert_kept_full_address(done: dict[str, Any], full: str) -> None:
    """The merge's survivor has ``full``'s whole address block, taken from ``full``."""
    assert {name: done["fields"][name] for name in FULL_ADDRESS} == FULL_ADDRESS
    assert done["sources"]["street"] == full


def test_a_newer_postcode_alone_keeps_the_street_at_that_postcode(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """The newest member gave only a postcode (a web form): at the same postcode the
    older member's street, suburb, state and country stay; at another postcode (moved)
    the old street is not paired with the new postcode."""
    no_address = {"street": None, "city": None, "state": None, "country": None}
    full = create_person(client, admin_headers)
    same = create_person(client, admin_headers, email="ann.web@example.com", **no_address)
    done = merge(client, admin_headers, people=[full, same], survivor=full)
    assert_kept_full_address(done, full)
    older = create_person(client, admin_headers, first_name="Bea")
    moved = create_person(client, admin_headers, first_name="Bea", postcode="2000", **no_address)
    done = merge(client, admin_headers, people=[older, moved], survivor=older)
    assert (done["fields"]["street"], done["fields"]["postcode"]) == (None, "2000")


@pytest.mark.parametrize(
    "newest",
    [
        {"state": "NSW", "country": "Australia"},
        {"city": "Geelong"},
        {"country": "New Zealand"},
    ],
)
def test_a_newer_address_without_street_or_postcode_keeps_the_fuller_one(
    client: TestClient, admin_headers: dict[str, str], newest: dict[str, str]
) -> None:
    """A state, country or suburb alone locates no one: the older member's whole block
    stays rather than being blanked around it."""
    blank = {"street": None, "city": None, "state": None, "postcode": None, "country": None}
    full = create_person(client, admin_headers)
    partial = create_person(
        client, admin_headers, email="ann.partial@example.com", **{**blank, **newest}
    )
    done = merge(client, admin_headers, people=[full, partial], survivor=full)
    assert_kept_full_address(done, full)


@pytest.mark.parametrize(
    ("body", "status", "reason"),
    [
        ({"people": ["003000000000001AAA"]}, 400, "people"),
        ({"people": ["nope", "003000000000001AAA"]}, 400, "not a person id"),
        ({"people": ["003000000000001AAA", "003000000000002AAA"]}, 404, "no person"),
        ({"people": "x"}, 400, "people"),
    ],
)
def test_bad_requests_are_refused_and_change_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    body: dict[str, Any],
    status: int,
    reason: str,
) -> None:
    refusal = merge(client, admin_headers, status=status, **body)
    assert reason in refusal["detail"]


def test_a_lead_cannot_absorb_a_contact_and_fields_must_name_members(
    courses: Courses, client: TestClient, admin_headers: dict[str, str]
) -> None:
    first, _lead, second, _assets = duplicate_pair(courses)
    lead = create_person(client, admin_headers, kind="leads")
    assert (
        "lead cannot absorb"
        in merge(client, admin_headers, 400, people=[first, lead], survivor=lead)["detail"]
    )
    assert (
        "not one of the people"
        in merge(client, admin_headers, 400, people=[first, second], fields={"email": lead})[
            "detail"
        ]
    )
    assert (
        "not a person field"
        in merge(client, admin_headers, 400, people=[first, second], fields={"kind": first})[
            "detail"
        ]
    )
    assert courses.person(second)["merged_into"] is None


def test_a_long_name_or_id_given_to_a_merge_is_echoed_cut_short(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    """A field name, survivor or person id of 10,000 characters is refused by its first
    characters (fields.echoed), never repeated in full: by the admin API (a merge and a
    cluster's decision share the planner) and by `ridercrm duplicates merge`."""
    ann = create_person(client, admin_headers)
    again = create_person(client, admin_headers, first_name="ANN", email="ann.nguyen@exampel.com")
    long = "x" * 10_000
    many = {f"{long}{number}": ann for number in range(7)}
    for body, reason in (
        ({"people": [ann, again], "fields": {long: ann}}, "not a person field"),
        ({"people": [ann, again], "fields": many}, "and 2 more not a person field"),
        ({"people": [ann, again], "survivor": long}, "not one of the people merged"),
        ({"people": [ann, again], "fields": {"email": long}}, "not one of the people merged"),
        ({"people": [ann, long]}, "not a person id"),
    ):
        detail = merge(client, admin_headers, 400, **body)["detail"]
        assert reason in detail, detail
        assert "x" * 100 not in detail
        assert len(detail) < 500, detail
    refused = cli(db_url, "duplicates", "merge", ann, again, "--field", f"{long}={ann}")
    assert refused.exit_code == 1, refused.output
    assert "not a person field" in refused.stderr
    assert "x" * 100 not in refused.output
    assert merged_into_of(client, admin_headers, again) is None


def merged_into_of(client: TestClient, admin_headers: dict[str, str], person_id: str) -> str | None:
    found = client.get(f"/admin/people/{person_id}", headers=admin_headers)
    merged_into: str | None = found.json()["merged_into"]
    return merged_into


def test_overlapping_merges_one_wins_the_other_is_refused(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    a, b, c = (create_person(client, admin_headers, first_name=n) for n in ("Ann", "Anne", "Annie"))
    outcome: list[Any] = []

    def second() -> None:
        try:
            with session_scope(sessions, write=True) as session:
                merge_people(session, people_ids=[c, b])
            outcome.append("merged")
        except MergeError as exc:
            outcome.append(exc)

    with session_scope(sessions, write=True) as session:
        merge_people(session, people_ids=[a, b])
        rival = threading.Thread(target=second)
        rival.start()
        time.sleep(0.5)
        assert rival.is_alive()  # waits for the first merge's rows (or SQLite's writer turn)
    rival.join(timeout=30)
    assert len(outcome) == 1, outcome
    assert isinstance(outcome[0], MergeError), outcome
    assert outcome[0].status == 409
    with session_scope(sessions) as session:
        stored = {p.id: p.merged_into for p in session.scalars(select(Person))}
    assert stored == {a: None, b: a, c: None}
