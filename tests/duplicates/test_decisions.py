"""Merges and decisions from every path are audited alike, keep the lock order of the
other writes, and two decisions on one cluster never both happen (docs/decisions.md, "Duplicates (issue 15)")."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.audit.models import AuditRecord
from ridercrm.db import session_scope
from ridercrm.duplicates import service
from ridercrm.duplicates.merge import MergeError, merge_people
from ridercrm.duplicates.models import DuplicateCluster, PersonMerge
from ridercrm.people.models import Person
from tests.courses.helpers import Courses
from tests.duplicates.test_merge import merge, snapshot, undo
from tests.transfer.helpers import runner


def cli(db_url: str, *args: str, **env: str) -> Any:
    from ridercrm.cli import app

    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url, **env})


def test_cli_merge_and_unmerge_record_their_audit_id_and_redact_when_asked(
    db_url: str, client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    first = create_person(client, admin_headers, first_name="Ann", email="ann@old.example")
    second = create_person(client, admin_headers, first_name="Ann", email="ann@secret.example")
    redact = {"RIDERCRM_AUDIT_REDACT": "true"}
    merged = cli(db_url, "duplicates", "merge", first, second, **redact)
    assert merged.exit_code == 0, merged.output
    result = json.loads(merged.stdout)
    undone = cli(db_url, "duplicates", "unmerge", str(result["merge_id"]), **redact)
    assert undone.exit_code == 0, undone.output
    undo_audit = json.loads(undone.stdout)["audit_id"]
    with session_scope(sessions) as session:
        record = session.get(PersonMerge, result["merge_id"])
        assert record is not None
        # The merge record names the audit record of the command that made it.
        assert record.audit_id == result["audit_id"]
        audit = session.get(AuditRecord, result["audit_id"])
        assert audit is not None
        assert (audit.operation, audit.method) == ("cli.duplicates_merge", "CLI")
        assert session.get(AuditRecord, undo_audit) is not None
        # RIDERCRM_AUDIT_REDACT: the e-mail the merge chose is not kept in the trail.
        assert "ann@secret.example" not in (audit.response_body or "")
        assert "[redacted]" in (audit.response_body or "")
    # A refused command is audited too, with its reason.
    refused = cli(db_url, "duplicates", "unmerge", str(result["merge_id"]))
    assert refused.exit_code == 1
    with session_scope(sessions) as session:
        statuses = session.scalars(
            select(AuditRecord.response_status).where(
                AuditRecord.operation == "cli.duplicates_unmerge"
            )
        ).all()
    assert sorted(statuses) == [200, 409]


def test_round_trip_restores_every_updated_at(
    client: TestClient, admin_headers: dict[str, str], engine: Engine
) -> None:
    courses = Courses(client, admin_headers)
    first = create_person(client, admin_headers, first_name="Ann", email="a@old.example")
    second = create_person(client, admin_headers, first_name="Anne", email="a@new.example")
    moved = courses.book(person_id=second, booking_number="HB-9")["asset_id"]
    before = snapshot(engine)
    stamps = {p: courses.person(p)["updated_at"] for p in (first, second)}
    course_stamp = courses.asset(moved)["updated_at"]
    done = merge(client, admin_headers, people=[first, second])
    # The merge changed the survivor (the newer e-mail) and marked the merged record.
    assert {p: courses.person(p)["updated_at"] for p in (first, second)} != stamps
    undo(client, admin_headers, done["merge_id"])
    assert {p: courses.person(p)["updated_at"] for p in (first, second)} == stamps
    assert courses.asset(moved)["updated_at"] == course_stamp
    assert snapshot(engine) == before


def test_a_merge_and_a_booking_of_the_same_people_queue_without_deadlock(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    """The merge holds a lead and a contact; a booking naming both waits, then books for
    the survivor (the lead's id now stands for it)."""
    courses = Courses(client, admin_headers)
    contact = create_person(client, admin_headers, first_name="Ann")
    lead = create_person(client, admin_headers, kind="leads", first_name="Ann")
    outcome: list[Any] = []

    def book() -> None:
        body = courses.send(
            {**_booking(courses, lead, "HB-L")}, {**_booking(courses, contact, "HB-C")}
        )
        outcome.append(body)

    with session_scope(sessions, write=True) as session:
        merge_people(session, people_ids=[lead, contact])
        rival = threading.Thread(target=book)
        rival.start()
        time.sleep(0.5)
        assert rival.is_alive()  # waits for the merge's rows (or SQLite's writer turn)
    rival.join(timeout=60)
    assert not rival.is_alive()
    details = outcome[0]["details"]
    assert [d["delivery"] for d in details] == ["true", "true"], details
    assert {d["contact_id"] for d in details} == {contact}


def _booking(courses: Courses, person_id: str, number: str) -> dict[str, Any]:
    from testkit.factories import new_booking

    return new_booking(person_id, courses.product, booking_number=number)


def test_two_decisions_on_one_cluster_one_wins_the_other_is_refused(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    a = create_person(client, admin_headers, first_name="Ann")
    b = create_person(client, admin_headers, first_name="Anne")
    with session_scope(sessions, write=True) as session:
        cluster = DuplicateCluster(people=[a, b], score=20.0)
        session.add(cluster)
        session.flush()
        cluster_id = cluster.id
    outcome: list[Any] = []

    def dismiss() -> None:
        try:
            with session_scope(sessions, write=True) as session:
                found = service.find_cluster(session, cluster_id)
                assert found is not None
                service.decide(session, found, decision="dismiss")
            outcome.append("dismissed")
        except MergeError as exc:
            outcome.append(exc)

    with session_scope(sessions, write=True) as session:
        found = service.find_cluster(session, cluster_id)
        assert found is not None
        service.decide(session, found, decision="merge")
        rival = threading.Thread(target=dismiss)
        rival.start()
        time.sleep(0.5)
        assert rival.is_alive()  # waits for the cluster's row (or SQLite's writer turn)
    rival.join(timeout=30)
    assert len(outcome) == 1
    assert isinstance(outcome[0], MergeError), outcome
    assert outcome[0].status == 409
    assert "already merged" in outcome[0].reason
    with session_scope(sessions) as session:
        stored = session.get(DuplicateCluster, cluster_id)
        assert stored is not None
        assert stored.status == "merged"
        assert session.get(Person, b).merged_into == a  # type: ignore[union-attr]
    # Through the admin API the refusal is a 409 with the reason.
    refused = client.post(
        f"/admin/duplicates/{cluster_id}/decide",
        json={"decision": "dismiss"},
        headers=admin_headers,
    )
    assert refused.status_code == 409
    assert "already merged" in refused.json()["detail"]
