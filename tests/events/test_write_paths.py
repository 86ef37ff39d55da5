"""Every event type, from every write path, reaches a real receiver signed and in order;
no event exists for a change that rolled back (docs/decisions.md, "Events (webhooks)")."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product, new_booking, person_body
from testkit.receiver import Receiver

from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from ridercrm.events import service as events
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Delivery, Event
from ridercrm.events.service import EVENT_TYPES
from ridercrm.ids import RecordKind, new_id
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT, Person, PersonKey
from ridercrm.people.schemas import PersonCreate
from ridercrm.transfer.columns import CONTACTS
from ridercrm.transfer.importer import import_csv
from ridercrm.transfer.rerun import OnMatch
from ridercrm.web.routes.events import EVENT_MODELS
from tests.events.conftest import register
from tests.transfer.helpers import write_csv

PERSONAL_VALUES = ("Nguyen", "ann.nguyen@example.com", "0412 345 678", "L1234567", "12 Main St")


def test_every_event_type_from_the_interface_and_admin_api(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    _endpoint, secret = register(client, admin_headers, receiver.url, *EVENT_TYPES)
    lead = create_person(client, admin_headers, kind="leads", **person_body(opt_in=False))
    product = create_product(client, admin_headers)
    # Operation 1: a lead booked becomes a contact with a course.
    booked = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [new_booking(lead, product)]},
        headers=admin_headers,
    ).json()["details"][0]
    assert booked["delivery"] == "true", booked
    contact, course = booked["contact_id"], booked["asset_id"]
    # Operation 1 again: a course field, then the status.
    changed = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [{"asset_id": course, "course_location": "kilsyth"}]},
        headers=admin_headers,
    )
    assert changed.json()["details"][0]["delivery"] == "true", changed.text
    passed = client.post(
        "/crm/people/rider_courses",
        json={
            "people_product": [
                {
                    "asset_id": course,
                    "course_status": "completed - pass",
                    "course_feedback": "pass A",
                }
            ]
        },
        headers=admin_headers,
    )
    assert passed.json()["details"][0]["delivery"] == "true", passed.text
    # Operation 2: a person's fields.
    modified = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": contact, "city": "Geelong", "email": "new@example.com"}]},
        headers=admin_headers,
    )
    assert modified.json()["status"] is True, modified.text

    deliverer.run_until_idle()
    got = receiver.delivered()
    assert all(r.verifies_with(secret) for r in got)
    for request in got:  # each payload is valid by its documented schema
        EVENT_MODELS[request.type].model_validate(request.payload)
    by_subject: dict[str, list[str]] = {}
    for request in got:
        data = request.payload["data"]
        subject = (
            data.get("person", {}).get("id")
            or data.get("person_id")
            or data.get("lead_id")
            or data.get("course", {}).get("id")
            or data.get("course_id")
        )
        if request.type.startswith("course."):
            subject = data.get("course", {}).get("id") or data.get("course_id")
        by_subject.setdefault(subject, []).append(request.type)
    assert by_subject[lead] == ["person.created", "lead.converted"]
    # The new contact: created from the lead, then the booking's and operation 2's changes.
    assert by_subject[contact] == ["person.created", "person.updated", "person.updated"]
    assert by_subject[course] == ["course.booked", "course.updated", "course.status_changed"]

    status_changed = next(r for r in got if r.type == "course.status_changed").payload["data"]
    assert status_changed == {
        "course_id": course,
        "person_id": contact,
        "from": "booked",
        "to": "completed - pass",
        "feedback": "pass A",
        "audit_id": passed.headers["x-audit-id"],
    }
    updated = next(r for r in got if r.type == "course.updated").payload["data"]
    assert updated["fields"] == ["course_location"]
    assert updated["course"]["course_location"] == "kilsyth"
    last_update = [r for r in got if r.type == "person.updated"][-1]
    assert last_update.payload["data"] == {
        "person_id": contact,
        "kind": "contact",
        "fields": ["city", "email"],
    }
    # Names, never values: no personal value in an update, a course or a conversion.
    for request in got:
        if request.type != "person.created":
            text = request.body.decode()
            assert not any(
                value in text for value in (*PERSONAL_VALUES, "Geelong", "new@example.com")
            )


def test_import_emits_person_created_for_every_row(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
    tmp_path: Path,
) -> None:
    _endpoint, secret = register(client, admin_headers, receiver.url, "person.created")
    path = tmp_path / "contacts.csv"
    path.write_text(
        "first_name,last_name,email,date_of_birth\n"
        "Ann,Ng,ann@example.com,1999-04-12\n"
        "Bo,Li,,\n"
        "Nameless,,,\n",  # no last name: a bad row
        encoding="utf-8",
    )
    result = import_csv(sessions, CONTACTS, path, workers=0)
    assert (result.imported, result.bad_rows) == (2, 1)
    deliverer.run_until_idle()
    # Two people: two subjects, delivered side by side in any order.
    got = sorted(receiver.delivered(), key=lambda r: r.payload["data"]["person"]["first_name"])
    assert [r.payload["data"]["person"]["first_name"] for r in got] == ["Ann", "Bo"]
    assert got[0].payload["data"]["person"]["date_of_birth"] == "1999-04-12"
    assert got[0].payload["data"]["person"]["kind"] == "contact"
    assert all(r.verifies_with(secret) for r in got)


def _counts(sessions: sessionmaker[Session]) -> tuple[int, int]:
    with session_scope(sessions) as session:
        events = session.scalar(select(func.count()).select_from(Event))
        deliveries = session.scalar(select(func.count()).select_from(Delivery))
    return int(events or 0), int(deliveries or 0)


class _Undo(Exception):
    pass


def test_no_event_for_a_rolled_back_savepoint_or_transaction(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
) -> None:
    register(client, admin_headers, receiver.url, "person.created", "person.updated")
    data = PersonCreate.model_validate(person_body())

    def savepoint_rolled_back(session: Session, kept: Person) -> None:
        # An item savepoint that rolls back, as operations 1 and 2 do for a bad item.
        with session.begin_nested():
            people.create_person(session, kind=CONTACT, data=data)
            people.apply_changes(session, kept, {"city": "Undone"})
            session.flush()
            raise _Undo

    def transaction_rolled_back() -> None:
        with session_scope(sessions, write=True) as session:
            people.create_person(session, kind=CONTACT, data=data)
            session.flush()
            raise _Undo

    with session_scope(sessions, write=True) as session:
        kept = people.create_person(session, kind=CONTACT, data=data)
        with pytest.raises(_Undo):
            savepoint_rolled_back(session, kept)
    assert _counts(sessions) == (1, 1)
    with pytest.raises(_Undo):
        transaction_rolled_back()
    assert _counts(sessions) == (1, 1)
    with session_scope(sessions) as session:
        (payload,) = session.scalars(select(Event.payload)).all()
    assert payload["data"]["person"]["id"] == kept.id
    assert json.dumps(payload)  # stored as JSON


def test_savepoints_nested_and_in_turn_keep_exactly_the_events_of_what_committed(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
) -> None:
    register(client, admin_headers, receiver.url, "person.updated")

    def note(session: Session, name: str) -> None:
        events.record(session, event_type="person.updated", subject=name, data={})

    def rolled_back(session: Session, name: str, *, released_inside: str = "") -> None:
        with session.begin_nested():
            note(session, name)
            if released_inside:
                with session.begin_nested():
                    note(session, released_inside)
            raise _Undo

    with session_scope(sessions, write=True) as session:
        note(session, "outer-before")
        with session.begin_nested():  # released
            note(session, "released")
        with pytest.raises(_Undo):
            rolled_back(session, "rolled-back", released_inside="released-inside-rolled-back")
        with session.begin_nested():  # released, around one that rolls back
            note(session, "around-before")
            with pytest.raises(_Undo):
                rolled_back(session, "rolled-back-inside-released")
            note(session, "around-after")
        note(session, "outer-after")
    with session_scope(sessions) as session:
        stored = session.scalars(select(Event.subject).order_by(Event.id)).all()
        delivered = session.scalars(select(Delivery.subject).order_by(Delivery.id)).all()
    kept = ["outer-before", "released", "around-before", "around-after", "outer-after"]
    assert stored == kept
    assert delivered == kept


def test_a_failed_item_writes_no_event_and_a_repeat_writes_none(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
) -> None:
    register(client, admin_headers, receiver.url, *EVENT_TYPES)
    contact = create_person(client, admin_headers)
    before = _counts(sessions)
    body = {
        "people_data": [{"ID": contact, "city": "Geelong"}, {"ID": contact, "first_name": None}]
    }
    first = client.post("/crm/modify", json=body, headers=admin_headers).json()
    assert [d["status"] for d in first["details"]] == [True, False]
    assert _counts(sessions) == (before[0] + 1, before[1] + 1)
    # The same values again change nothing: no event.
    client.post("/crm/modify", json=body, headers=admin_headers)
    assert _counts(sessions) == (before[0] + 1, before[1] + 1)


THEIR_HEADER = ["FirstName", "LastName", "Birthdate", "Email", "MobilePhone",
                "MailingPostalCode", "MailingCity"]  # fmt: skip
THEIR_PEOPLE = [
    ["Ann", "Nguyen", "1990-04-12", "ann.nguyen@example.com", "0412345678", "3000", "Somerton"],
    ["Bilal", "Okafor", "1985-11-03", "bilal.okafor@example.com", "0423456789", "3064", "Somerton"],
]


def test_an_id_kept_as_an_alias_by_import_is_announced_as_merged_into_its_person(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
    tmp_path: Path,
) -> None:
    _endpoint, secret = register(client, admin_headers, receiver.url, *EVENT_TYPES)
    first = write_csv(tmp_path / "a.csv", THEIR_HEADER, THEIR_PEOPLE)
    assert import_csv(sessions, CONTACTS, first, workers=0).imported == 2
    deliverer.run_until_idle()
    stored = {
        r.payload["data"]["person"]["first_name"]: r.payload["data"]["person"]["id"]
        for r in receiver.delivered()
    }
    # Another CRM's export of the same people with its own ids and a new city.
    theirs = {name: new_id(RecordKind.CONTACT) for name in stored}
    rows = [[theirs[row[0]], *row[:-1], "Kilsyth"] for row in THEIR_PEOPLE]
    second = write_csv(tmp_path / "b.csv", ["Id", *THEIR_HEADER], rows)
    before = _counts(sessions)
    dry = import_csv(sessions, CONTACTS, second, workers=0, dry_run=True, on_match=OnMatch.update)
    assert dry.updated == 2  # matched, as the real run below
    assert _counts(sessions) == before  # a dry run publishes nothing
    result = import_csv(sessions, CONTACTS, second, workers=0, on_match=OnMatch.update)
    assert (result.imported, result.updated, result.aliases) == (0, 2, 2)
    deliverer.run_until_idle()

    got = receiver.delivered()[2:]
    assert all(r.verifies_with(secret) for r in got)
    for request in got:
        EVENT_MODELS[request.type].model_validate(request.payload)
    for name, person_id in stored.items():
        mine = [r for r in got if person_id in (r.payload["data"].get("person_id"),
                                                r.payload["data"].get("survivor_id"))]  # fmt: skip
        # As a merge: the person's changed fields, then the id that now stands for it.
        assert [r.type for r in mine] == ["person.updated", "person.merged"]
        assert mine[0].payload["data"]["fields"] == ["city"]
        assert mine[1].payload["data"] == {
            "survivor_id": person_id,
            "kind": "contact",
            "merged_ids": [theirs[name]],
            "merge_id": None,
            "moved_courses": [],
            "audit_id": None,
        }
    assert len(got) == 4  # no person.created for an alias record


def test_no_event_is_stored_that_no_endpoint_can_receive(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
    tmp_path: Path,
) -> None:
    """docs/decisions.md, "Events (webhooks)": without an endpoint
    for a type, a write (an import included) stores none of its events; an endpoint
    created later gets what is made from then on; a disabled endpoint's types are still
    stored, for the replay that follows its enabling."""
    before = create_person(client, admin_headers, kind="contacts", **person_body())
    path = tmp_path / "contacts.csv"
    path.write_text("first_name,last_name\nAnn,Ng\nBo,Li\n", encoding="utf-8")
    assert import_csv(sessions, CONTACTS, path, workers=0).imported == 2
    assert _counts(sessions) == (0, 0)

    endpoint, _secret = register(client, admin_headers, receiver.url, "person.updated")
    created = create_person(client, admin_headers, kind="contacts", **person_body(first_name="C"))
    assert _counts(sessions) == (0, 0)  # person.created: still no one wants it
    changed = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": before, "city": "Geelong"}]},
        headers=admin_headers,
    )
    assert changed.json()["status"] is True, changed.text
    deliverer.run_until_idle()
    assert [(r.payload["type"], r.payload["data"]["person_id"]) for r in receiver.delivered()] == [
        ("person.updated", before)
    ]

    disabled = client.post(f"/admin/webhooks/{endpoint}/disable", json={}, headers=admin_headers)
    assert disabled.status_code == 200, disabled.text
    again = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": created, "city": "Bendigo"}]},
        headers=admin_headers,
    )
    assert again.json()["status"] is True, again.text
    with session_scope(sessions) as session:
        stored = session.scalars(select(Event.type)).all()
    assert stored == ["person.updated", "person.updated"]


def _item_with_a_taken_number(
    session: Session, kept: Person, product: str, data: PersonCreate, made: list[str]
) -> None:
    with session.begin_nested():
        made.append(people.create_person(session, kind=CONTACT, data=data).id)
        people.apply_changes(session, kept, {"city": "Undone"})
        session.add(
            Asset(
                id=new_id(RecordKind.ASSET),
                person_id=kept.id,
                product_id=product,
                booking_number="HB-TAKEN",
                course_status="booked",
            )
        )
        session.flush()


def test_a_savepoint_whose_flush_failed_leaves_no_event_and_no_key(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
) -> None:
    """As in operation 1 when a concurrent request stored the booking number first: the
    item's flush fails inside its savepoint, which SQLAlchemy then only closes (it
    reports the rollback of the flush's own subtransaction). What the item recorded
    before the flush goes with it."""
    register(client, admin_headers, receiver.url, "person.created", "person.updated")
    product = create_product(client, admin_headers)
    contact = create_person(client, admin_headers)
    booked = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [new_booking(contact, product, booking_number="HB-TAKEN")]},
        headers=admin_headers,
    )
    assert booked.json()["details"][0]["delivery"] == "true", booked.text
    with session_scope(sessions) as session:
        before = set(session.scalars(select(Event.id)))
    data = PersonCreate.model_validate(person_body(first_name="Undone"))
    with session_scope(sessions, write=True) as session:
        kept = people.find_person(session, contact)
        assert kept is not None
        made: list[str] = []
        with pytest.raises(IntegrityError):
            _item_with_a_taken_number(session, kept, product, data, made)
        (undone,) = made
        people.apply_changes(session, kept, {"city": "Kept"})
    with session_scope(sessions) as session:
        written = session.execute(
            select(Event.type, Event.subject).where(Event.id.not_in(before)).order_by(Event.id)
        ).all()
        undone_keys = session.scalar(
            select(func.count()).select_from(PersonKey).where(PersonKey.person_id == undone)
        )
        assert session.get(Person, undone) is None
    assert [tuple(row) for row in written] == [("person.updated", f"person:{contact}")]
    assert undone_keys == 0
