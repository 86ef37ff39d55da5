"""Delivery: retries with backoff and Retry-After, 410 and exhausted schedules disable an
endpoint (and say so), a failing endpoint holds back no other, secrets rotate, events
replay, and a claim whose deliverer died is sent again."""

from __future__ import annotations

import datetime as dt
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person
from testkit.receiver import Receiver, receiving

from ridercrm.db import session_scope, utcnow
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Delivery
from tests.events.conftest import register


def _deliveries(client: TestClient, headers: dict[str, str], endpoint: str) -> list[dict]:
    response = client.get(f"/admin/webhooks/{endpoint}/deliveries", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["deliveries"])


def _endpoint(client: TestClient, headers: dict[str, str], endpoint: str) -> dict:
    response = client.get(f"/admin/webhooks/{endpoint}", headers=headers)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_receiver_failing_twice_gets_the_event_on_the_third_attempt(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    endpoint, secret = register(client, admin_headers, receiver.url, "person.created")
    receiver.answer(500, 503)
    create_person(client, admin_headers)
    deliverer.run_until_idle()
    assert [r.answered for r in receiver.requests] == [500, 503, 200]
    # The same event, the same webhook-id every time; each attempt freshly signed.
    assert len({r.webhook_id for r in receiver.requests}) == 1
    assert all(r.verifies_with(secret) for r in receiver.requests)
    (entry,) = _deliveries(client, admin_headers, endpoint)
    assert entry["status"] == "delivered"
    assert entry["attempts"] == 3
    assert entry["response_code"] == 200
    assert entry["latency_ms"] is not None
    assert entry["next_attempt_at"] is None
    assert _endpoint(client, admin_headers, endpoint)["enabled"] is True


def test_backoff_waits_the_schedule_and_honours_retry_after(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
) -> None:
    deliverer = make_deliverer(webhook_retry_schedule="60,60")
    endpoint, _secret = register(client, admin_headers, receiver.url, "person.created")
    receiver.answer(500, (429, {"Retry-After": "3600"}))
    create_person(client, admin_headers)
    started = utcnow()
    deliverer.run_until_idle()
    (entry,) = _deliveries(client, admin_headers, endpoint)
    assert (entry["status"], entry["attempts"], entry["response_code"]) == ("pending", 1, 500)
    wait = dt.datetime.fromisoformat(entry["next_attempt_at"]) - started
    assert dt.timedelta(seconds=47) < wait < dt.timedelta(seconds=73)  # 60 s ± 20 % jitter
    assert len(receiver.requests) == 1  # not due yet: nothing more is sent

    _make_due(deliverer)
    deliverer.run_until_idle()
    (entry,) = _deliveries(client, admin_headers, endpoint)
    assert (entry["status"], entry["attempts"], entry["response_code"]) == ("pending", 2, 429)
    wait = dt.datetime.fromisoformat(entry["next_attempt_at"]) - utcnow()
    assert wait > dt.timedelta(seconds=3500)  # Retry-After beats the 60 s of the schedule


def test_a_hostile_retry_after_is_read_as_no_wait_or_at_most_a_day(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
) -> None:
    """A receiver's header is its own text: a digit int() cannot read ("²" passes
    str.isdigit) or a number no time span holds made the attempt an internal error, so an
    event the receiver had taken (200) was recorded as failed and sent again."""
    deliverer = make_deliverer(webhook_retry_schedule="60,60")
    endpoint, _secret = register(client, admin_headers, receiver.url, "person.created")
    receiver.answer((200, {"Retry-After": "\u00b2"}))
    create_person(client, admin_headers)
    deliverer.run_until_idle()
    (entry,) = _deliveries(client, admin_headers, endpoint)
    assert (entry["status"], entry["attempts"], entry["response_code"]) == ("delivered", 1, 200)

    receiver.answer((429, {"Retry-After": "9" * 30}), (429, {"Retry-After": "\u00b9\u00b2"}))
    create_person(client, admin_headers, first_name="Bo")
    started = utcnow()
    deliverer.run_until_idle()
    entry = _deliveries(client, admin_headers, endpoint)[0]
    assert (entry["status"], entry["attempts"], entry["response_code"]) == ("pending", 1, 429)
    wait = dt.datetime.fromisoformat(entry["next_attempt_at"]) - started
    assert dt.timedelta(hours=23) < wait <= dt.timedelta(hours=24, seconds=5)  # at most a day
    _make_due(deliverer)
    deliverer.run_until_idle()
    entry = _deliveries(client, admin_headers, endpoint)[0]
    assert (entry["status"], entry["attempts"], entry["response_code"]) == ("pending", 2, 429)
    wait = dt.datetime.fromisoformat(entry["next_attempt_at"]) - utcnow()
    assert dt.timedelta(seconds=40) < wait < dt.timedelta(seconds=80)  # the schedule's 60 s


@contextmanager
def dripping(seconds: float) -> Iterator[str]:
    """A receiver that reads the request, then sends its answer's header a byte at a time,
    each byte well within any read timeout, for ``seconds``; then a 200."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        with server:
            server.settimeout(10)
            try:
                connection, _ = server.accept()
            except TimeoutError:
                return
            with connection:
                connection.recv(65536)
                try:
                    connection.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                    started = time.monotonic()
                    while time.monotonic() - started < seconds and not stop.is_set():
                        time.sleep(0.2)
                        connection.sendall(b"a")
                    connection.sendall(b"\r\nContent-Length: 0\r\n\r\n")
                except OSError:
                    return  # the deliverer hung up: what it should do

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}/hook"
    finally:
        stop.set()
        thread.join(15)


def test_a_receiver_answering_a_byte_at_a_time_is_cut_off_at_the_timeout(
    client: TestClient, admin_headers: dict[str, str], make_deliverer: Callable[..., Deliverer]
) -> None:
    """httpx's timeout bounds each read, not the request: a receiver dripping its answer
    held a delivery slot (and a server's shutdown, which waits for requests under way) for
    as long as it liked. RIDERCRM_WEBHOOK_TIMEOUT_SECONDS bounds the whole attempt."""
    deliverer = make_deliverer(webhook_timeout_seconds=1.0)
    with dripping(seconds=10) as url:
        endpoint, _secret = register(client, admin_headers, url, "person.created")
        create_person(client, admin_headers)
        started = time.monotonic()
        assert deliverer.run_once() == 1
        took = time.monotonic() - started
    assert took < 5, f"the attempt took {took:.1f} s with a 1 s timeout"
    (entry,) = _deliveries(client, admin_headers, endpoint)
    assert (entry["status"], entry["attempts"], entry["error"]) == ("pending", 1, "timed out")


def _make_due(deliverer: Deliverer) -> None:
    with session_scope(deliverer.sessions, write=True) as session:
        for delivery in session.scalars(select(Delivery)):
            delivery.next_attempt_at = utcnow()


def test_410_disables_the_endpoint_and_other_endpoints_keep_receiving(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    with receiving() as gone:
        gone.answer(410)
        dead, _ = register(client, admin_headers, gone.url, "person.created")
        alive, _ = register(client, admin_headers, receiver.url, "person.created")
        create_person(client, admin_headers)
        deliverer.run_until_idle()
        create_person(client, admin_headers, first_name="Bo")
        deliverer.run_until_idle()
        assert len(gone.requests) == 1  # nothing after the 410
    assert len(receiver.delivered()) == 2
    state = _endpoint(client, admin_headers, dead)
    assert state["enabled"] is False
    assert "410" in state["disabled_reason"]
    assert state["disabled_at"] is not None
    (entry,) = _deliveries(client, admin_headers, dead)
    assert (entry["status"], entry["response_code"]) == ("failed", 410)
    assert _endpoint(client, admin_headers, alive)["enabled"] is True


def test_an_endpoint_failing_its_whole_schedule_is_disabled_and_the_operator_told(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    endpoint, _ = register(client, admin_headers, receiver.url, "person.created")
    receiver.answer(500, 500, 500, 500)  # the first attempt and the schedule's three retries
    create_person(client, admin_headers)
    deliverer.run_until_idle()
    assert len(receiver.requests) == 4
    state = _endpoint(client, admin_headers, endpoint)
    assert state["enabled"] is False
    assert "failed all 4 attempts" in state["disabled_reason"]
    (entry,) = _deliveries(client, admin_headers, endpoint)
    assert (entry["status"], entry["error"]) == ("failed", "HTTP 500")
    metrics = client.get("/metrics").text
    # The counters are the database's running totals: this test's attempts exactly.
    assert 'ridercrm_webhook_endpoints_disabled_total{reason="exhausted"} 1.0' in metrics
    assert 'ridercrm_webhook_deliveries_total{outcome="failed"} 1.0' in metrics
    assert 'ridercrm_webhook_deliveries_total{outcome="retry"} 3.0' in metrics
    assert 'ridercrm_webhook_deliveries_total{outcome="delivered"} 0.0' in metrics
    # Disabled, it is sent nothing; enabled again, a replay since it was disabled
    # sends what it missed.
    create_person(client, admin_headers, first_name="Bo")
    deliverer.run_until_idle()
    assert len(receiver.requests) == 4
    enabled = client.post(f"/admin/webhooks/{endpoint}/enable", headers=admin_headers)
    assert enabled.status_code == 200, enabled.text
    assert enabled.json()["enabled"] is True
    replayed = client.post(
        f"/admin/webhooks/{endpoint}/replay",
        json={"since": state["disabled_at"]},
        headers=admin_headers,
    )
    assert replayed.json() == {"replayed": 1}, replayed.text
    deliverer.run_until_idle()
    assert [r.payload["data"]["person"]["first_name"] for r in receiver.delivered()] == ["Bo"]


def test_a_subject_waits_for_its_failing_event_but_other_subjects_do_not(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    register(client, admin_headers, receiver.url, "person.created", "person.updated")
    ann = create_person(client, admin_headers)
    receiver.refuse(ann.encode())  # Ann's first attempt
    modified = client.post(
        "/crm/modify", json={"people_data": [{"ID": ann, "city": "Geelong"}]}, headers=admin_headers
    )
    assert modified.json()["status"] is True
    bo = create_person(client, admin_headers, first_name="Bo")
    deliverer.run_once()  # Ann's created fails; her update waits behind it; Bo's goes
    sent = {(r.answered, r.payload["data"]["person"]["id"]) for r in receiver.requests}
    assert sent == {(500, ann), (200, bo)}
    deliverer.run_until_idle()
    ann_events = [r.type for r in receiver.delivered() if ann in r.body.decode()]
    assert ann_events == ["person.created", "person.updated"]


def test_rotation_signs_with_old_and_new_secrets_during_the_grace_time(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    endpoint, old = register(client, admin_headers, receiver.url, "person.created")
    rotated = client.post(
        f"/admin/webhooks/{endpoint}/rotate", json={"grace_hours": 1}, headers=admin_headers
    )
    assert rotated.status_code == 200, rotated.text
    new = rotated.json()["secret"]
    assert new.startswith("whsec_")
    assert new != old
    create_person(client, admin_headers)
    deliverer.run_until_idle()
    (first,) = receiver.delivered()
    assert first.verifies_with(old)
    assert first.verifies_with(new)
    assert len(first.headers["webhook-signature"].split(" ")) == 2
    # A rotation without grace: only the newest secret signs.
    newest = client.post(
        f"/admin/webhooks/{endpoint}/rotate", json={"grace_hours": 0}, headers=admin_headers
    ).json()["secret"]
    create_person(client, admin_headers, first_name="Bo")
    deliverer.run_until_idle()
    second = receiver.delivered()[1]
    assert second.verifies_with(newest)
    assert not second.verifies_with(new)
    assert not second.verifies_with(old)
    assert _endpoint(client, admin_headers, endpoint)["previous_secret_until"] is None


def test_replay_sends_one_event_or_all_since_a_time_again(
    client: TestClient, admin_headers: dict[str, str], receiver: Receiver, deliverer: Deliverer
) -> None:
    endpoint, secret = register(client, admin_headers, receiver.url, "person.created")
    create_person(client, admin_headers)
    time.sleep(0.05)
    middle = utcnow()
    create_person(client, admin_headers, first_name="Bo")
    deliverer.run_until_idle()
    first, second = sorted(receiver.delivered(), key=lambda r: r.payload["timestamp"])

    one = client.post(
        f"/admin/webhooks/{endpoint}/replay",
        json={"event_id": first.webhook_id},
        headers=admin_headers,
    )
    assert one.json() == {"replayed": 1}, one.text
    deliverer.run_until_idle()
    assert receiver.delivered()[-1].webhook_id == first.webhook_id  # same id: receivers dedupe
    assert receiver.delivered()[-1].verifies_with(secret)

    since = client.post(
        f"/admin/webhooks/{endpoint}/replay",
        json={"since": middle.isoformat()},
        headers=admin_headers,
    )
    assert since.json() == {"replayed": 1}, since.text
    deliverer.run_until_idle()
    assert receiver.delivered()[-1].webhook_id == second.webhook_id
    assert len(receiver.delivered()) == 4

    unknown = client.post(
        f"/admin/webhooks/{endpoint}/replay", json={"event_id": "msg_nope"}, headers=admin_headers
    )
    assert unknown.status_code == 400
    assert "no event" in unknown.json()["detail"]


def test_a_claim_whose_deliverer_died_is_sent_again_after_its_lease(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
    sessions: sessionmaker[Session],
) -> None:
    register(client, admin_headers, receiver.url, "person.created")
    create_person(client, admin_headers)
    dying = make_deliverer(webhook_lease_seconds=0.3)
    other = make_deliverer(webhook_lease_seconds=0.3)
    (job,) = dying.claim(10)  # claimed, then never sent: its deliverer "died"
    assert other.claim(10) == []  # leased: nobody else takes it meanwhile
    time.sleep(0.4)
    other.run_until_idle()
    (got,) = receiver.delivered()
    assert got.webhook_id == job.event_id
    # The dead claim's late outcome is ignored: the delivery stays delivered, once.
    dying.record(job, dying.send(job))
    with session_scope(sessions) as session:
        (delivery,) = session.scalars(select(Delivery)).all()
    assert (delivery.status, delivery.attempts) == ("delivered", 2)
