"""Merging people and undoing a merge publish person.merged / person.unmerged and a
course.updated for each course that changed person, written in the merge's transaction
and received signed by a real receiver (docs/decisions.md, "Duplicates (issue 15)", "Events (webhooks)")."""

from __future__ import annotations

import json
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person
from testkit.receiver import Receiver

from ridercrm.db import session_scope
from ridercrm.duplicates.models import DuplicateCluster
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Event
from ridercrm.events.service import EVENT_TYPES
from ridercrm.web.routes.events import EVENT_MODELS
from tests.courses.helpers import Courses
from tests.duplicates.test_decisions import cli
from tests.events.conftest import register

MERGE = "/admin/people/merge"


def _post(client: TestClient, headers: dict[str, str], path: str, body: Any, status: int) -> Any:
    response = client.post(path, json=body, headers=headers)
    assert response.status_code == status, response.text
    return response


def test_merge_and_undo_send_their_events_in_order(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    courses = Courses(client, admin_headers)
    first = create_person(client, admin_headers, first_name="Ann", last_name="Nguyen")
    second = create_person(
        client, admin_headers, first_name="Ann", last_name="Nguyen", email="ann@new.example"
    )
    moved = {courses.book(person_id=second, booking_number=f"HB-{n}")["asset_id"] for n in (1, 2)}
    _endpoint, secret = register(client, admin_headers, receiver.url, *EVENT_TYPES)

    merged = _post(client, admin_headers, MERGE, {"people": [first, second]}, 200)
    merge_id = merged.json()["merge_id"]
    undone = _post(client, admin_headers, f"{MERGE}/{merge_id}/undo", {}, 200)

    deliverer.run_until_idle()
    got = receiver.delivered()
    assert all(r.verifies_with(secret) for r in got)
    for request in got:
        EVENT_MODELS[request.type].model_validate(request.payload)
    survivor_events = [
        r
        for r in got
        if r.payload["data"].get("person_id") == first
        or r.payload["data"].get("survivor_id") == first
    ]
    # The survivor took the newer e-mail (person.updated), then the merge; the undo gives
    # its own values back, then says so.
    assert [r.type for r in survivor_events] == [
        "person.updated",
        "person.merged",
        "person.updated",
        "person.unmerged",
    ]
    assert survivor_events[1].payload["data"] == {
        "survivor_id": first,
        "kind": "contact",
        "merged_ids": [second],
        "merge_id": merge_id,
        "moved_courses": sorted(moved),
        "audit_id": merged.headers["x-audit-id"],
    }
    assert survivor_events[3].payload["data"] == {
        "survivor_id": first,
        "kind": "contact",
        "restored_ids": [second],
        "merge_id": merge_id,
        "moved_courses": sorted(moved),
        "audit_id": undone.headers["x-audit-id"],
    }
    # Each course (booked before the endpoint existed): moved to the survivor, then back.
    # The moves to the survivor travel with the survivor's events: after person.merged.
    merged_at = got.index(survivor_events[1])
    for asset_id in moved:
        to_survivor = next(
            n
            for n, r in enumerate(got)
            if r.type == "course.updated"
            and r.payload["data"]["course"]["id"] == asset_id
            and r.payload["data"]["course"]["person_id"] == first
        )
        assert to_survivor > merged_at
        course_events = [
            r.payload["data"]
            for r in got
            if r.type.startswith("course.")
            and (r.payload["data"].get("course") or {}).get("id") == asset_id
        ]
        assert [e["fields"] for e in course_events] == [["person_id"], ["person_id"]]
        assert [e["course"]["person_id"] for e in course_events] == [first, second]


def test_a_merged_persons_undelivered_events_arrive_before_the_merge(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    courses = Courses(client, admin_headers)
    _endpoint, secret = register(client, admin_headers, receiver.url, *EVENT_TYPES)
    first = create_person(client, admin_headers, first_name="Ann", last_name="Nguyen")
    second = create_person(client, admin_headers, first_name="Ann", last_name="Nguyen")
    course = courses.book(person_id=second, booking_number="HB-9")["asset_id"]
    # The receiver refuses the merged person's course booking three times: once before
    # the merge, so it is still undelivered then, and twice after, for as many rounds as
    # the merge's events need to be sent (the survivor's update, then person.merged and
    # the course's move). They must wait behind it instead.
    refused = receiver.refuse(b'"course.booked"', times=3)
    for _round in range(5):  # until the booking's first attempt was refused
        if refused:
            break
        deliverer.run_once()
    assert refused
    merged = _post(
        client, admin_headers, MERGE, {"people": [first, second], "survivor": first}, 200
    ).json()
    assert merged["survivor"] == first
    deliverer.run_until_idle()
    got = [r for r in receiver.delivered() if r.verifies_with(secret)]
    types = [r.type for r in got]
    booked = types.index("course.booked")
    assert got[booked].payload["data"]["course"]["id"] == course
    assert len(refused) == 3
    assert booked < types.index("person.merged") < types.index("course.updated"), types


def test_a_refused_or_previewed_merge_records_no_event(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
) -> None:
    register(client, admin_headers, receiver.url, *EVENT_TYPES)
    first = create_person(client, admin_headers, first_name="Ann")
    second = create_person(client, admin_headers, first_name="Anne")
    lead = create_person(client, admin_headers, kind="leads", first_name="Annie")
    with session_scope(sessions) as session:
        before = set(session.scalars(select(Event.id)))
    _post(client, admin_headers, MERGE, {"people": [first, second], "dry_run": True}, 200)
    # Refused after the fields were worked out: a lead cannot absorb a contact.
    _post(client, admin_headers, MERGE, {"people": [first, lead], "survivor": lead}, 400)
    with session_scope(sessions) as session:
        assert set(session.scalars(select(Event.id))) == before


def test_a_review_decision_and_the_cli_publish_their_merges(
    db_url: str,
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    _endpoint, secret = register(client, admin_headers, receiver.url, "person.merged",
                                 "person.unmerged")  # fmt: skip
    ann, anne = (create_person(client, admin_headers, first_name=n) for n in ("Ann", "Anne"))
    bo, bob = (create_person(client, admin_headers, first_name=n) for n in ("Bo", "Bob"))
    with session_scope(sessions, write=True) as session:
        cluster = DuplicateCluster(people=[ann, anne], score=20.0)
        session.add(cluster)
        session.flush()
        cluster_id = cluster.id
    decided = _post(client, admin_headers, f"/admin/duplicates/{cluster_id}/decide",
                    {"decision": "merge"}, 200)  # fmt: skip
    merged = cli(db_url, "duplicates", "merge", bo, bob)
    assert merged.exit_code == 0, merged.output
    by_cli = json.loads(merged.stdout)
    undone = cli(db_url, "duplicates", "unmerge", str(by_cli["merge_id"]))
    assert undone.exit_code == 0, undone.output

    deliverer.run_until_idle()
    got = receiver.delivered()
    assert all(r.verifies_with(secret) for r in got)
    for request in got:
        EVENT_MODELS[request.type].model_validate(request.payload)
    data = [(r.type, r.payload["data"]) for r in got]
    decision = decided.json()
    # Order is promised per person, not across people: Ann's merge and Bob's two events
    # may arrive interleaved, so each person's events are checked in their own order.
    assert len(data) == 3
    of_ann = [event for event in data if event[1]["merge_id"] == decision["merge_id"]]
    of_bob = [event for event in data if event[1]["merge_id"] == by_cli["merge_id"]]
    assert len(of_ann) == 1
    assert of_ann[0] == (
        "person.merged",
        {
            "survivor_id": decision["survivor"],
            "kind": "contact",
            "merged_ids": [anne if decision["survivor"] == ann else ann],
            "merge_id": decision["merge_id"],
            "moved_courses": [],
            "audit_id": decided.headers["x-audit-id"],
        },
    )
    assert [(kind, d["merge_id"], d["audit_id"]) for kind, d in of_bob] == [
        ("person.merged", by_cli["merge_id"], by_cli["audit_id"]),
        ("person.unmerged", by_cli["merge_id"], json.loads(undone.stdout)["audit_id"]),
    ]
