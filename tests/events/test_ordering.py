"""A subject's events reach each endpoint in commit order, under concurrent writes and with
two deliverers sharing the work; a person's subject holds their courses' events too
(docs/decisions.md, "Events (webhooks)")."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product, new_booking, person_body
from testkit.receiver import Receiver

from ridercrm.config import Settings
from ridercrm.courses.models import AssetStatusChange
from ridercrm.db import session_scope
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Delivery, Event
from ridercrm.events.service import EVENT_TYPES
from tests.events.conftest import register
from tests.live import live_server

WRITERS = 4
WRITES = 8


def test_events_of_one_course_and_one_person_arrive_in_commit_order(
    settings: Settings,
    make_key: Callable[..., str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
) -> None:
    headers = {"Authorization": f"Bearer {make_key('admin')}"}
    with (
        live_server(settings) as base,
        httpx.Client(base_url=base, headers=headers, timeout=60) as http,
    ):
        created = http.post(
            "/admin/webhooks",
            json={"url": receiver.url, "event_types": ["course.status_changed", "person.updated"]},
        )
        assert created.status_code == 201, created.text
        person = http.post("/admin/contacts", json=person_body()).json()["id"]
        product = http.post(
            "/admin/products", json={"name": "Learner", "code": "L1", "price": "249.00"}
        ).json()["id"]
        booked = http.post(
            "/crm/people/rider_courses", json={"people_product": [new_booking(person, product)]}
        ).json()["details"][0]
        course = booked["asset_id"]

        def write(writer: int) -> None:
            for n in range(WRITES):
                status = "cancelled" if (writer + n) % 2 else "booked"
                item = {"asset_id": course, "course_status": status, "city": f"City {writer}-{n}"}
                answer = http.post("/crm/people/rider_courses", json={"people_product": [item]})
                assert answer.status_code == 200, answer.text
                modified = http.post(
                    "/crm/modify", json={"people_data": [{"ID": person, "state": f"S{writer}{n}"}]}
                )
                assert modified.status_code == 200, modified.text

        # Two deliverers deliver while the writes are still being made.
        stop = threading.Event()
        deliverers = [make_deliverer(), make_deliverer()]
        threads = [threading.Thread(target=d.run, args=(stop,), daemon=True) for d in deliverers]
        for thread in threads:
            thread.start()
        try:
            with ThreadPoolExecutor(WRITERS) as pool:
                list(pool.map(write, range(WRITERS)))
            with session_scope(sessions) as session:
                history = session.execute(
                    select(AssetStatusChange.from_status, AssetStatusChange.to_status)
                    .where(AssetStatusChange.asset_id == course)
                    .order_by(AssetStatusChange.id)
                ).all()
                stored = session.scalars(
                    select(Delivery.event_id)
                    .join(Event, Event.id == Delivery.event_id)
                    .where(Delivery.subject == f"person:{person}")
                    .where(Event.type == "person.updated")
                    .order_by(Delivery.id)
                ).all()
                expected = session.query(Event).count()
            changes = len(history) - 1  # the first is the booking itself
            receiver.wait_for(changes + len(stored))
        finally:
            stop.set()
            for thread in threads:
                thread.join(timeout=30)
    assert expected >= changes + len(stored)
    got = receiver.delivered()
    statuses = [r.payload["data"] for r in got if r.type == "course.status_changed"]
    # Each change starts where the previous one ended: commit order, nothing missing.
    assert [(s["from"], s["to"]) for s in statuses] == [tuple(h) for h in history[1:]]
    for before, after in itertools.pairwise(statuses):
        assert after["from"] == before["to"]
    # The person's events arrive in the order they were stored (under the person's lock).
    assert [r.webhook_id for r in got if r.type == "person.updated"] == list(stored)
    assert len({r.webhook_id for r in got}) == len(got)  # each once: two deliverers, no twin


def test_a_persons_events_and_their_courses_arrive_in_the_order_they_were_made(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    register(client, admin_headers, receiver.url, *EVENT_TYPES)
    person = create_person(client, admin_headers)
    product = create_product(client, admin_headers)
    for change in ({"city": "Geelong"}, {"state": "VIC"}):
        modified = client.post(
            "/crm/modify", json={"people_data": [{"ID": person, **change}]}, headers=admin_headers
        )
        assert modified.json()["details"][0]["status"] is True, modified.text
    booked = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [new_booking(person, product)]},
        headers=admin_headers,
    ).json()["details"][0]
    changed = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [{"asset_id": booked["asset_id"], "course_status": "cancelled"}]},
        headers=admin_headers,
    ).json()["details"][0]
    assert changed["delivery"] == "true", changed
    # The receiver refuses the person's first update once: everything after it, the
    # course's events included, waits behind it instead of arriving first.
    refused = receiver.refuse(b'"person.updated"')
    deliverer.run_until_idle()
    with session_scope(sessions) as session:
        made = session.scalars(select(Event.id).order_by(Event.created_at, Event.id)).all()
    got = receiver.delivered()
    assert refused
    assert [r.webhook_id for r in got] == list(made)
    types = [r.type for r in got]
    story = ["person.created", "person.updated", "person.updated", "course.booked",
             "course.status_changed"]  # fmt: skip
    assert [t for t in types if t in story] == story, types
