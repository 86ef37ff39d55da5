"""The staff console's writes publish their events like every other write path: the day
sheet's results, a person's edit, a course's status change and a lead's conversion,
each received signed by a real receiver with the console request's audit record."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body
from testkit.receiver import Receiver

from ridercrm.audit.models import AuditRecord
from ridercrm.db import session_scope
from ridercrm.events.delivery import Deliverer
from ridercrm.events.service import EVENT_TYPES
from ridercrm.people import service as people
from ridercrm.people.models import LEAD
from ridercrm.people.schemas import PersonCreate
from ridercrm.staff import service as staff_service
from ridercrm.web.routes.events import EVENT_MODELS
from tests.console.conftest import PASSWORD, csrf, sign_in
from tests.courses import builders
from tests.events.conftest import register

DAY = "2026-12-05"


def _audit_id(sessions: sessionmaker[Session], operation: str) -> str:
    with session_scope(sessions) as session:
        (audit_id,) = session.scalars(
            select(AuditRecord.id).where(AuditRecord.operation == operation)
        ).all()
    return audit_id


def test_every_console_write_publishes_its_events(
    client: TestClient,
    admin_headers: dict[str, str],
    make_client: Callable[..., TestClient],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner Approved")
        ann = builders.person(session, first_name="Ann", email="ann@example.com")
        ben = builders.person(session, first_name="Ben", email="ben@example.com")
        ann_course = builders.course(session, ann, lap)
        ben_course = builders.course(session, ben, lap)
        lead = people.create_person(
            session, kind=LEAD, data=PersonCreate.model_validate(person_body(first_name="Lea"))
        ).id
        staff_service.create_user(session, name="desk", role="staff", password=PASSWORD)
    # Registered after the set-up: what arrives is the console's work only.
    _endpoint, secret = register(client, admin_headers, receiver.url, *EVENT_TYPES)
    console = make_client()
    console.follow_redirects = False
    assert sign_in(console, "desk").status_code == 303
    token = csrf(console)

    sheet = console.post(
        "/console/daysheet",
        data={
            "csrf": token,
            "site": "somerton",
            "date": DAY,
            f"result-{ann_course}": "pass B",
            "confirm_future": "yes",  # DAY may be after today: results then need the box
        },
    )
    assert "Saved 1 of 1 row." in sheet.text, sheet.text
    edited = console.post(f"/console/people/{ben}", data={"csrf": token, "city": "Geelong"})
    assert edited.status_code == 200, edited.text
    changed = console.post(
        f"/console/people/{ben}/courses/{ben_course}",
        data={"csrf": token, "course_status": "cancelled", "course_feedback": ""},
    )
    assert changed.status_code == 200, changed.text
    converted = console.post(f"/console/people/{lead}/convert", data={"csrf": token})
    assert converted.status_code == 303, converted.text
    contact = converted.headers["location"].rsplit("/", 1)[-1]

    deliverer.run_until_idle()
    got = receiver.delivered()
    assert all(r.verifies_with(secret) for r in got)
    for request in got:
        EVENT_MODELS[request.type].model_validate(request.payload)
    data = [(r.type, r.payload["data"]) for r in got]
    assert (
        "course.status_changed",
        {
            "course_id": ann_course,
            "person_id": ann,
            "from": "booked",
            "to": "completed - pass",
            "feedback": "pass B",
            "audit_id": _audit_id(sessions, "console.daysheet"),
        },
    ) in data
    assert ("person.updated", {"person_id": ben, "kind": "contact", "fields": ["city"]}) in data
    assert (
        "course.status_changed",
        {
            "course_id": ben_course,
            "person_id": ben,
            "from": "booked",
            "to": "cancelled",
            "feedback": None,
            "audit_id": _audit_id(sessions, "console.change_course"),
        },
    ) in data
    assert ("lead.converted", {"lead_id": lead, "contact_id": contact}) in data
    created = [d for t, d in data if t == "person.created"]
    assert [d["person"]["id"] for d in created] == [contact]
    assert len(got) == 5  # nothing more: no event for what did not change
