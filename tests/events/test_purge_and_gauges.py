"""Delivered events are purged after the retention time (the deliverer and `ridercrm
webhooks purge`); the queue gauges are read from the database at scrape time (every
worker of `serve --workers 2`: test_metrics_across_processes.py)."""

from __future__ import annotations

import datetime as dt
import re
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person
from testkit.receiver import Receiver

from ridercrm.db import session_scope
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Delivery, Event
from tests.events.conftest import register
from tests.transfer.helpers import cli


def _age(sessions: sessionmaker[Session], days: float) -> None:
    """Make every stored event and delivery ``days`` older."""
    with session_scope(sessions, write=True) as session:
        for event in session.scalars(select(Event)):
            event.created_at -= dt.timedelta(days=days)
        for delivery in session.scalars(select(Delivery)):
            delivery.created_at -= dt.timedelta(days=days)


def _stored(sessions: sessionmaker[Session]) -> tuple[set[str], list[tuple[str, str]]]:
    with session_scope(sessions) as session:
        events = set(session.scalars(select(Event.subject)))
        deliveries = [(d.subject, d.status) for d in session.scalars(select(Delivery))]
    return events, deliveries


def _history(
    client: TestClient,
    headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
) -> dict[str, str]:
    """An old delivered event, an old one nobody wanted, an old one still pending, a new one."""
    register(client, headers, receiver.url, "person.created")
    delivered = create_person(client, headers, first_name="Del")
    deliverer.run_until_idle()
    unwanted = create_person(client, headers, first_name="Un")
    # person.updated: its only endpoint is disabled, so the event is stored (enabled
    # again, the endpoint could replay it) but has no delivery. An event of a type no
    # endpoint lists at all is not stored (docs/decisions.md, "Events (webhooks)").
    idle, _secret = register(client, headers, receiver.url, "person.updated")
    disabled = client.post(f"/admin/webhooks/{idle}/disable", json={}, headers=headers)
    assert disabled.status_code == 200, disabled.text
    client.post(
        "/crm/modify", json={"people_data": [{"ID": unwanted, "city": "Geelong"}]}, headers=headers
    )
    with session_scope(sessions, write=True) as session:  # the creation is delivered too
        session.execute(update(Delivery).values(status="delivered"))
    receiver.answer(503)
    waiting = create_person(client, headers, first_name="Wait")
    deliverer.run_once()  # fails once: pending, to be retried tomorrow
    with session_scope(sessions, write=True) as session:
        session.execute(
            update(Delivery)
            .where(Delivery.status == "pending")
            .values(next_attempt_at=dt.datetime.now(dt.UTC) + dt.timedelta(days=1))
        )
    _age(sessions, 40)
    recent = create_person(client, headers, first_name="New")
    deliverer.run_until_idle()
    return {"delivered": delivered, "unwanted": unwanted, "waiting": waiting, "recent": recent}


def test_webhooks_purge_deletes_only_delivered_events_past_the_retention(
    db_url: str,
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    people = _history(client, admin_headers, sessions, receiver, deliverer)
    events_before, _ = _stored(sessions)
    counted = cli(db_url, "webhooks", "purge", "--dry-run")
    assert counted.exit_code == 0, counted.output
    assert "would purge 3 event(s) and 2 delivery record(s) older than 30 day(s)" in counted.output
    assert _stored(sessions)[0] == events_before
    assert cli(db_url, "webhooks", "purge", "--older-than-days", "50").output.startswith(
        "purged 0 event(s)"
    )
    # Ages past the calendar purge nothing; not a number is a usage error (as `audit purge`).
    for beyond in ("1e308", "inf", "100000000"):
        for dry in ([], ["--dry-run"]):
            far = cli(db_url, "webhooks", "purge", "--older-than-days", beyond, *dry)
            assert far.exit_code == 0, (beyond, far.output, far.exception)
            assert " 0 event(s)" in far.output, far.output
    nan = cli(db_url, "webhooks", "purge", "--older-than-days", "nan")
    assert nan.exit_code == 2, nan.output
    assert "--older-than-days must be a number of days" in nan.output
    assert _stored(sessions)[0] == events_before
    purged = cli(db_url, "webhooks", "purge")
    assert purged.exit_code == 0, purged.output
    assert "purged 3 event(s) and 2 delivery record(s)" in purged.output
    events, deliveries = _stored(sessions)
    # Kept: the old event whose delivery is still pending, and the recent one.
    assert events == {f"person:{people['waiting']}", f"person:{people['recent']}"}
    assert sorted(deliveries) == sorted(
        [(f"person:{people['waiting']}", "pending"), (f"person:{people['recent']}", "delivered")]
    )


def test_the_deliverer_purges_as_it_runs(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
) -> None:
    people = _history(client, admin_headers, sessions, receiver, make_deliverer())
    running = make_deliverer(event_retention_days=30)
    stop = threading.Event()
    thread = threading.Thread(target=running.run, args=(stop,))
    thread.start()
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            events, _ = _stored(sessions)
            if f"person:{people['delivered']}" not in events:
                break
            time.sleep(0.1)
    finally:
        stop.set()
        thread.join(timeout=30)
    events, _ = _stored(sessions)
    assert f"person:{people['delivered']}" not in events
    assert f"person:{people['waiting']}" in events


def _gauges(text: str) -> tuple[float, float]:
    depth = re.search(r"^ridercrm_webhook_queue_depth (\S+)$", text, re.M)
    oldest = re.search(r"^ridercrm_webhook_oldest_undelivered_seconds (\S+)$", text, re.M)
    assert depth is not None, text
    assert oldest is not None, text
    return float(depth.group(1)), float(oldest.group(1))


def test_queue_gauges_are_read_at_scrape_time(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver
) -> None:
    assert _gauges(client.get("/metrics").text) == (0.0, 0.0)
    register(client, admin_headers, receiver.url, "person.created")
    for name in ("A", "B"):
        create_person(client, admin_headers, first_name=name)
    depth, oldest = _gauges(client.get("/metrics").text)
    assert depth == 2.0
    assert oldest > 0


def test_each_app_reports_its_own_database(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_client: Callable[..., TestClient],
    sqlite_template: Path,
    tmp_path: Path,
) -> None:
    register(client, admin_headers, receiver.url, "person.created")
    create_person(client, admin_headers, first_name="A")
    other = tmp_path / "other.db"
    shutil.copy(sqlite_template, other)
    # A second app in this process, on an empty database, made after the first.
    elsewhere = make_client(database_url=f"sqlite:///{other}")
    assert _gauges(elsewhere.get("/metrics").text) == (0.0, 0.0)
    assert _gauges(client.get("/metrics").text)[0] == 1.0
