"""Idempotency-Key on POSTs (docs/decisions.md, "Retries (Idempotency-Key)"): replay, conflicts, takeover, expiry, per key."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import session_scope, utcnow
from ridercrm.ids import RecordKind, new_id
from ridercrm.keys import service as keys
from ridercrm.web.idempotency import service as idempotency
from ridercrm.web.idempotency.models import IdempotencyRecord

PATH = "/admin/contacts"


def raw_person(**overrides: Any) -> bytes:
    return json.dumps(person_body(**overrides)).encode()


def post(
    client: TestClient, key: str, raw: bytes, idempotency_key: str | None, path: str = PATH
) -> httpx.Response:
    headers = {"X-API-Key": key, "Content-Type": "application/json"}
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    return client.post(path, content=raw, headers=headers)


def people_named(client: TestClient, key: str, name: str) -> list[str]:
    response = client.get("/admin/people", params={"q": name}, headers={"X-API-Key": key})
    assert response.status_code == 200
    return [person["id"] for person in response.json()["people"]]


def audit(client: TestClient, key: str, audit_id: str) -> dict[str, Any]:
    response = client.get(f"/admin/audit/{audit_id}", headers={"X-API-Key": key})
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


@pytest.fixture
def admin_key(make_key: Callable[..., str]) -> str:
    return make_key("admin", name="booking site")


def key_id(sessions: sessionmaker[Session], plaintext: str) -> int:
    with session_scope(sessions) as session:
        key = keys.authenticate(session, plaintext)
        assert key is not None
        return key.id


def stored(sessions: sessionmaker[Session], idempotency_key: str) -> list[IdempotencyRecord]:
    with session_scope(sessions) as session:
        return list(
            session.scalars(
                select(IdempotencyRecord).where(IdempotencyRecord.key == idempotency_key)
            )
        )


def claim_in_progress(
    sessions: sessionmaker[Session], plaintext: str, idempotency_key: str, raw: bytes
) -> None:
    """Leave the key claimed by a request that has not answered (yet)."""
    with session_scope(sessions, write=True) as session:
        result = idempotency.claim(
            session,
            api_key_id=key_id(sessions, plaintext),
            key=idempotency_key,
            fingerprint=idempotency.request_hash(
                "POST", PATH, raw, content_type="application/json"
            ),
            audit_id=new_id(RecordKind.AUDIT),
            ttl=dt.timedelta(hours=24),
            lock=dt.timedelta(seconds=60),
        )
        assert isinstance(result, idempotency.Claim)


def test_repeat_with_the_same_body_replays_and_does_the_work_once(
    client: TestClient, admin_key: str
) -> None:
    raw = raw_person(first_name="Idem")
    first = post(client, admin_key, raw, "booking-41")
    again = post(client, admin_key, raw, "booking-41")
    third = post(client, admin_key, raw, "booking-41")
    assert first.status_code == 201
    for repeat in (again, third):
        assert repeat.status_code == first.status_code
        assert repeat.content == first.content
        assert repeat.headers["content-type"] == first.headers["content-type"]
    assert people_named(client, admin_key, "Idem") == [first.json()["id"]]

    original = audit(client, admin_key, first.headers["x-audit-id"])
    assert original["idempotency_key"] == "booking-41"
    assert original["replay_of"] is None
    for repeat in (again, third):
        assert repeat.headers["x-audit-id"] != first.headers["x-audit-id"]
        record = audit(client, admin_key, repeat.headers["x-audit-id"])
        assert record["replay_of"] == first.headers["x-audit-id"]
        assert record["idempotency_key"] == "booking-41"
        assert record["response_status"] == 201
        assert record["request_body"] == raw.decode()


def test_without_a_key_every_request_does_the_work(client: TestClient, admin_key: str) -> None:
    raw = raw_person(first_name="Twice")
    assert post(client, admin_key, raw, None).status_code == 201
    assert post(client, admin_key, raw, None).status_code == 201
    assert len(people_named(client, admin_key, "Twice")) == 2


def test_different_keys_do_separate_work(client: TestClient, admin_key: str) -> None:
    raw = raw_person(first_name="Pair")
    assert post(client, admin_key, raw, "a").status_code == 201
    assert post(client, admin_key, raw, "b").status_code == 201
    assert len(people_named(client, admin_key, "Pair")) == 2


@pytest.mark.parametrize(
    ("second_raw", "second_path"),
    [
        (raw_person(first_name="Other"), PATH),
        (raw_person(first_name="Same", email="same.other@example.com"), PATH),
        (raw_person(first_name="Same"), "/admin/leads"),
    ],
    ids=["other-body", "other-field", "other-path"],
)
def test_same_key_with_a_different_request_is_422(
    client: TestClient, admin_key: str, second_raw: bytes, second_path: str
) -> None:
    first = post(client, admin_key, raw_person(first_name="Same"), "k-1")
    assert first.status_code == 201
    second = post(client, admin_key, second_raw, "k-1", path=second_path)
    assert second.status_code == 422
    assert "different request" in second.json()["detail"]
    assert people_named(client, admin_key, "Other") == []
    assert len(people_named(client, admin_key, "Same")) == 1
    record = audit(client, admin_key, second.headers["x-audit-id"])
    assert record["response_status"] == 422
    assert record["idempotency_key"] == "k-1"
    # The first answer is still what the original request gets.
    assert post(client, admin_key, raw_person(first_name="Same"), "k-1").content == first.content


def test_a_repeat_serialised_another_way_is_the_same_request(
    client: TestClient, admin_key: str, sessions: sessionmaker[Session]
) -> None:
    """A retry whose JSON lists the members in another order, or spaced otherwise, holds
    the same data: it replays rather than being refused as a different request. A key
    claimed by the earlier version (the body's bytes as its fingerprint) still replays."""
    body = person_body(first_name="Ordered")
    first = post(client, admin_key, json.dumps(body).encode(), "order-1")
    assert first.status_code == 201
    reordered = json.dumps(dict(reversed(list(body.items()))), indent=2).encode() + b" "
    again = post(client, admin_key, reordered, "order-1")
    assert (again.status_code, again.content) == (first.status_code, first.content)
    assert len(people_named(client, admin_key, "Ordered")) == 1
    changed = json.dumps({**body, "first_name": "Reordered"}).encode()
    assert post(client, admin_key, changed, "order-1").status_code == 422

    # A key given twice is no data: the refused body and its correction are two requests.
    twice = b'{"first_name": "Twice", "first_name": "Twice", "last_name": "Lee"}'
    assert post(client, admin_key, twice, "twice-1").status_code == 400
    once = json.dumps(person_body(first_name="Twice")).encode()
    assert post(client, admin_key, once, "twice-1").status_code == 422
    # The same bytes in another declared charset are another request (another text).
    latin = json.dumps(person_body(first_name="Zoë"), ensure_ascii=False).encode()
    headers = {"X-API-Key": admin_key, "Idempotency-Key": "charset-1"}
    first_charset = client.post(
        PATH, content=latin, headers={**headers, "Content-Type": "application/json; charset=utf-8"}
    )
    assert first_charset.status_code == 201, first_charset.text
    other_charset = client.post(
        PATH,
        content=latin,
        headers={**headers, "Content-Type": "application/json; charset=latin-1"},
    )
    assert other_charset.status_code == 422, other_charset.text

    raw = raw_person(first_name="Legacy")
    with session_scope(sessions, write=True) as session:
        claimed = idempotency.claim(
            session,
            api_key_id=key_id(sessions, admin_key),
            key="legacy-1",
            fingerprint=idempotency.request_hash("POST", PATH, raw, as_sent=True),
            audit_id=new_id(RecordKind.AUDIT),
            ttl=dt.timedelta(hours=24),
            lock=dt.timedelta(seconds=0),
        )
        assert isinstance(claimed, idempotency.Claim)
    taken_over = post(client, admin_key, raw, "legacy-1")
    assert taken_over.status_code == 201, taken_over.text


def test_repeat_while_the_first_is_in_progress_is_409(
    client: TestClient, admin_key: str, sessions: sessionmaker[Session]
) -> None:
    raw = raw_person(first_name="Busy")
    claim_in_progress(sessions, admin_key, "slow-1", raw)
    response = post(client, admin_key, raw, "slow-1")
    assert response.status_code == 409
    assert response.headers["retry-after"] == "1"
    assert "still being processed" in response.json()["detail"]
    assert people_named(client, admin_key, "Busy") == []
    assert audit(client, admin_key, response.headers["x-audit-id"])["response_status"] == 409
    # A different body with the same key is still a different request.
    assert post(client, admin_key, raw_person(first_name="Else"), "slow-1").status_code == 422


def test_a_claim_whose_lock_has_expired_is_taken_over(
    client: TestClient, admin_key: str, sessions: sessionmaker[Session]
) -> None:
    raw = raw_person(first_name="Crashed")
    claim_in_progress(sessions, admin_key, "died-1", raw)
    assert post(client, admin_key, raw, "died-1").status_code == 409
    with session_scope(sessions, write=True) as session:
        record = session.scalar(select(IdempotencyRecord).where(IdempotencyRecord.key == "died-1"))
        assert record is not None
        record.locked_until = utcnow() - dt.timedelta(seconds=1)
    retry = post(client, admin_key, raw, "died-1")
    assert retry.status_code == 201
    assert people_named(client, admin_key, "Crashed") == [retry.json()["id"]]
    replay = post(client, admin_key, raw, "died-1")
    assert replay.content == retry.content
    assert (
        audit(client, admin_key, replay.headers["x-audit-id"])["replay_of"]
        == (retry.headers["x-audit-id"])
    )
    assert len(stored(sessions, "died-1")) == 1


def test_expired_keys_are_forgotten(
    client: TestClient, admin_key: str, sessions: sessionmaker[Session]
) -> None:
    first = post(client, admin_key, raw_person(first_name="Old"), "daily")
    assert first.status_code == 201
    with session_scope(sessions, write=True) as session:
        record = session.scalar(select(IdempotencyRecord).where(IdempotencyRecord.key == "daily"))
        assert record is not None
        record.expires_at = utcnow() - dt.timedelta(seconds=1)
    # After expiry the key is free: the same body does the work again, another body is fine.
    again = post(client, admin_key, raw_person(first_name="Old"), "daily")
    assert again.status_code == 201
    assert again.json()["id"] != first.json()["id"]
    assert len(people_named(client, admin_key, "Old")) == 2
    assert audit(client, admin_key, again.headers["x-audit-id"])["replay_of"] is None
    assert len(stored(sessions, "daily")) == 1


def test_keys_last_as_long_as_configured(
    make_client: Callable[..., TestClient], admin_key: str, sessions: sessionmaker[Session]
) -> None:
    client = make_client(idempotency_ttl_hours=2)
    before = utcnow()
    assert post(client, admin_key, raw_person(), "ttl-1").status_code == 201
    (record,) = stored(sessions, "ttl-1")
    expected = before + dt.timedelta(hours=2)
    assert (
        expected - dt.timedelta(minutes=1)
        <= record.expires_at
        <= expected + dt.timedelta(minutes=1)
    )


def test_keys_are_per_api_key(
    client: TestClient, admin_key: str, make_key: Callable[..., str]
) -> None:
    other_key = make_key("admin", name="staff tool")
    raw = raw_person(first_name="Shared")
    mine = post(client, admin_key, raw, "order-7")
    theirs = post(client, other_key, raw, "order-7")
    assert mine.status_code == theirs.status_code == 201
    assert mine.json()["id"] != theirs.json()["id"]
    assert len(people_named(client, admin_key, "Shared")) == 2
    # Each key replays its own answer; another body under the other key is its own business.
    assert post(client, admin_key, raw, "order-7").content == mine.content
    assert post(client, other_key, raw, "order-7").content == theirs.content
    assert post(client, other_key, raw_person(first_name="X"), "order-7").status_code == 422


def test_an_error_response_is_replayed_too(
    client: TestClient, admin_key: str, sessions: sessionmaker[Session]
) -> None:
    raw = json.dumps({"first_name": "Broken", "last_name": "Body", "postcode": "12"}).encode()
    first = post(client, admin_key, raw, "bad-1")
    assert first.status_code == 400
    again = post(client, admin_key, raw, "bad-1")
    assert again.status_code == 400
    assert again.content == first.content
    assert again.headers["x-failure-reason"] == first.headers["x-failure-reason"]
    assert again.json()["audit_id"] == first.headers["x-audit-id"]
    assert (
        audit(client, admin_key, again.headers["x-audit-id"])["replay_of"]
        == (first.headers["x-audit-id"])
    )
    assert people_named(client, admin_key, "Broken") == []


def test_an_unusable_body_is_replayed_too(client: TestClient, admin_key: str) -> None:
    first = post(client, admin_key, b"{not json", "bad-2")
    again = post(client, admin_key, b"{not json", "bad-2")
    assert first.status_code == again.status_code == 400
    assert again.content == first.content


@pytest.mark.parametrize("value", ["", "   ", "k" * 256, "tab\tinside"])
def test_an_unusable_idempotency_key_is_400(client: TestClient, admin_key: str, value: str) -> None:
    response = post(client, admin_key, raw_person(first_name="Never"), value)
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["detail"]
    assert people_named(client, admin_key, "Never") == []


def test_the_longest_idempotency_key_is_fine(client: TestClient, admin_key: str) -> None:
    raw = raw_person(first_name="Long")
    first = post(client, admin_key, raw, "k" * 255)
    assert first.status_code == 201
    assert post(client, admin_key, raw, "k" * 255).content == first.content
    assert len(people_named(client, admin_key, "Long")) == 1


def refuse_new_people(engine: Engine, on: bool) -> None:
    """Make the database itself fail every insert into people (a real server error, as a
    full disk or a broken constraint would give), or stop doing so."""
    with engine.begin() as connection:
        if engine.dialect.name == "sqlite":
            connection.exec_driver_sql(
                "CREATE TRIGGER refuse_people BEFORE INSERT ON people"
                " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END"
                if on
                else "DROP TRIGGER refuse_people"
            )
        elif on:
            connection.exec_driver_sql(
                "CREATE FUNCTION refuse_people() RETURNS trigger LANGUAGE plpgsql AS"
                " $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$"
            )
            connection.exec_driver_sql(
                "CREATE TRIGGER refuse_people BEFORE INSERT ON people"
                " FOR EACH ROW EXECUTE FUNCTION refuse_people()"
            )
        else:
            connection.exec_driver_sql("DROP TRIGGER refuse_people ON people")
            connection.exec_driver_sql("DROP FUNCTION refuse_people()")


def test_a_server_error_frees_the_key_for_an_immediate_retry(
    settings: Settings, engine: Engine, make_key: Callable[..., str]
) -> None:
    """A 5xx answer is not kept, and the key is not left claimed: the client's retry runs
    the request again at once, not a 409 until the claim's lock time has passed."""
    plaintext = make_key("admin")
    raw = raw_person(first_name="Retried")
    app = create_app(settings)
    with TestClient(app, raise_server_exceptions=False) as client:
        refuse_new_people(engine, True)
        try:
            failed = post(client, plaintext, raw, "after-500")
        finally:  # the PostgreSQL database outlives the test
            refuse_new_people(engine, False)
        assert failed.status_code == 500, failed.text
        retry = post(client, plaintext, raw, "after-500")
        assert retry.status_code == 201, retry.text
        assert people_named(client, plaintext, "Retried") == [retry.json()["id"]]
        assert post(client, plaintext, raw, "after-500").content == retry.content
    app.state.context.engine.dispose()
