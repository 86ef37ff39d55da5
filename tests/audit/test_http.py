"""The audit trail over HTTP (docs/decisions.md, "Audit"): one record per request, what it keeps, search."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm.audit.models import AuditRecord
from ridercrm.db import session_scope, utcnow


def count_records(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return int(session.scalar(select(func.count()).select_from(AuditRecord)) or 0)


def read_record(client: TestClient, headers: dict[str, str], audit_id: str) -> dict[str, Any]:
    response = client.get(f"/admin/audit/{audit_id}", headers=headers)
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def age(sessions: sessionmaker[Session], audit_id: str, days: float) -> None:
    with session_scope(sessions, write=True) as session:
        record = session.get(AuditRecord, audit_id)
        assert record is not None
        record.created_at = utcnow() - dt.timedelta(days=days)


def test_one_record_per_request_whatever_happens(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    client = make_client(max_body_bytes=2000)
    match_only = {"X-API-Key": make_key("match", name="matcher")}
    before = count_records(sessions)
    responses = [
        client.post("/admin/contacts", json=person_body(), headers=admin_headers),
        client.post("/admin/contacts", json={"first_name": "A"}, headers=admin_headers),
        client.post("/admin/contacts", json=person_body()),
        client.post("/admin/contacts", json=person_body(), headers={"X-API-Key": "wrong"}),
        client.post("/admin/contacts", json=person_body(), headers=match_only),
        client.get("/no/such/path"),
        client.put("/admin/contacts", json={}, headers=admin_headers),
        client.post("/admin/contacts", content=b" " * 3000, headers=admin_headers),
        client.post(
            "/admin/contacts",
            content=b"<a/>",
            headers={**admin_headers, "Content-Type": "application/xml"},
        ),
        client.get("/crm/products", headers=match_only),
    ]
    statuses = [r.status_code for r in responses]
    assert statuses == [201, 400, 401, 401, 403, 404, 405, 413, 415, 403]
    assert count_records(sessions) == before + len(responses)
    ids = [r.headers["x-audit-id"] for r in responses]
    assert len(set(ids)) == len(ids)
    for response in responses:
        record = read_record(client, admin_headers, response.headers["x-audit-id"])
        assert record["response_status"] == response.status_code
        assert record["response_body"] == response.text


def test_health_and_metrics_are_not_audited(
    client: TestClient, sessions: sessionmaker[Session]
) -> None:
    before = count_records(sessions)
    for path in ("/healthz", "/readyz", "/metrics"):
        response = client.get(path)
        assert response.status_code == 200
        assert "x-audit-id" not in response.headers
    assert count_records(sessions) == before


def test_a_successful_request_is_recorded_in_full(
    client: TestClient, make_key: Callable[..., str]
) -> None:
    key = make_key("admin", name="front desk")
    headers = {"X-API-Key": key, "Content-Type": "text/json; charset=utf-8"}
    raw = json.dumps(person_body(first_name="Zoë"), ensure_ascii=False).encode()
    response = client.post("/admin/contacts", content=raw, headers=headers)
    assert response.status_code == 201
    record = read_record(client, {"X-API-Key": key}, response.headers["x-audit-id"])
    assert record["id"] == response.headers["x-audit-id"]
    assert record["operation"] == "admin.create_contact"
    assert record["method"] == "POST"
    assert record["path"] == "/admin/contacts"
    assert record["api_key_name"] == "front desk"
    assert isinstance(record["api_key_id"], int)
    assert record["content_type"] == "text/json; charset=utf-8"
    assert record["request_body"] == raw.decode()
    assert record["response_status"] == 201
    assert json.loads(record["response_body"]) == response.json()
    assert record["duration_ms"] > 0
    assert record["failure_reason"] is None
    assert record["idempotency_key"] is None
    assert record["replay_of"] is None
    created = dt.datetime.fromisoformat(record["created_at"])
    assert abs(utcnow() - created) < dt.timedelta(minutes=1)


def test_a_refused_request_is_recorded_with_its_reason(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    raw = b'{"first_name": "Ann", "last_name": "Lee", "postcode": "12"}'
    response = client.post(
        "/admin/contacts", content=raw, headers={**admin_headers, "Content-Type": "text/plain"}
    )
    assert response.status_code == 400
    record = read_record(client, admin_headers, response.headers["x-audit-id"])
    reason = 'postcode: must be 4 digits, or 3 (800 is "0800"), as text or a whole number (received text of 2 characters)'
    assert record["failure_reason"] == reason
    assert record["request_body"] == raw.decode()
    assert record["content_type"] == "text/plain"
    assert record["api_key_name"] == "admin"
    assert json.loads(record["response_body"])["errors"] == [reason]


def test_an_unauthenticated_request_is_recorded_without_a_key(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post("/admin/contacts", json=person_body(), headers={"X-API-Key": "nope"})
    assert response.status_code == 401
    record = read_record(client, admin_headers, response.headers["x-audit-id"])
    assert record["api_key_id"] is None
    assert record["api_key_name"] is None
    assert record["operation"] == "admin.create_contact"
    assert record["failure_reason"] == "invalid or revoked API key"
    assert record["response_status"] == 401
    # Refused before its body was read: a note of its size, not the body (issue 10).
    assert record["request_body"].startswith("[body not read: ")
    assert "Nguyen" not in record["request_body"]


def test_a_request_out_of_scope_is_recorded_with_its_key(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    response = client.get("/admin/audit", headers={"X-API-Key": make_key("match", name="m")})
    assert response.status_code == 403
    record = read_record(client, admin_headers, response.headers["x-audit-id"])
    assert record["api_key_name"] == "m"
    assert record["operation"] == "admin.search_audit"
    assert record["failure_reason"] == "API key lacks scope 'admin'"


def test_bodies_that_are_not_text_are_recorded_visibly(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    raw = b'{"first_name": "A\x00\xff", "last_name": "B"}'
    response = client.post(
        "/admin/contacts", content=raw, headers={**admin_headers, "Content-Type": "text/json"}
    )
    assert response.status_code == 400
    record = read_record(client, admin_headers, response.headers["x-audit-id"])
    assert record["request_body"] == '{"first_name": "A\\x00\\xff", "last_name": "B"}'


def test_odd_methods_and_long_paths_are_recorded(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    odd = client.request("PROPFINDEXTENDED", "/admin/contacts", headers=admin_headers)
    assert odd.status_code == 405
    assert read_record(client, admin_headers, odd.headers["x-audit-id"])["method"].startswith(
        "PROPFIND"
    )
    long_path = "/admin/people/" + "x" * 3000
    response = client.get(long_path, headers=admin_headers)
    assert response.status_code == 404
    record = read_record(client, admin_headers, response.headers["x-audit-id"])
    assert long_path.startswith(record["path"])
    assert len(record["path"]) >= 400


def test_search_filters_by_operation_and_time_newest_first(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    made = [
        client.post("/admin/contacts", json=person_body(), headers=admin_headers),
        client.get("/admin/people", params={"q": "Ann"}, headers=admin_headers),
        client.post("/admin/contacts", json=person_body(), headers=admin_headers),
        client.post("/admin/leads", json=person_body(), headers=admin_headers),
        client.post("/admin/contacts", json={}, headers=admin_headers),
    ]
    ids = [r.headers["x-audit-id"] for r in made]
    old_contact, recent_contacts = ids[0], [ids[2], ids[4]]
    age(sessions, old_contact, days=10)
    age(sessions, ids[1], days=5)

    def search(**params: Any) -> list[dict[str, Any]]:
        response = client.get("/admin/audit", params=params, headers=admin_headers)
        assert response.status_code == 200, response.text
        records: list[dict[str, Any]] = response.json()["records"]
        return records

    contacts = search(operation="admin.create_contact")
    assert [r["id"] for r in contacts] == [*reversed(recent_contacts), old_contact]
    assert {r["operation"] for r in contacts} == {"admin.create_contact"}

    since = (utcnow() - dt.timedelta(days=1)).isoformat()
    recent = search(operation="admin.create_contact", since=since)
    assert [r["id"] for r in recent] == list(reversed(recent_contacts))

    # A time without a zone is UTC; one with a zone is converted.
    naive = (utcnow() - dt.timedelta(days=7)).replace(tzinfo=None).isoformat()
    assert ids[1] in [r["id"] for r in search(since=naive)]
    assert old_contact not in [r["id"] for r in search(since=naive)]
    eastern = (utcnow() - dt.timedelta(days=6)).astimezone(dt.timezone(dt.timedelta(hours=10)))
    assert ids[1] in [r["id"] for r in search(since=eastern.isoformat())]

    everything = search()
    created = [dt.datetime.fromisoformat(r["created_at"]) for r in everything]
    assert created == sorted(created, reverse=True)
    assert everything[-1]["id"] == old_contact
    # The searches above were audited too.
    assert set(ids) <= {r["id"] for r in everything}
    assert len(everything) == len(made) + 5

    limited = search(operation="admin.create_contact", limit=2)
    assert [r["id"] for r in limited] == [r["id"] for r in contacts[:2]]
    assert len(search(limit=1)) == 1
    assert search(operation="admin.create_lead")[0]["id"] == ids[3]
    assert search(operation="no.such.operation") == []


def test_search_pages_with_before_until_next_before_is_null(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    made = [
        client.post("/admin/contacts", json=person_body(), headers=admin_headers) for _ in range(5)
    ]
    same_time = [r.headers["x-audit-id"] for r in made[1:4]]
    with session_scope(sessions, write=True) as session:  # ties are ordered by id
        moment = utcnow() - dt.timedelta(minutes=1)
        for audit_id in same_time:
            record = session.get(AuditRecord, audit_id)
            assert record is not None
            record.created_at = moment
    params = {"operation": "admin.create_contact"}
    whole = client.get("/admin/audit", params=params, headers=admin_headers).json()
    assert whole["next_before"] is None
    expected = [r["id"] for r in whole["records"]]
    assert sorted(expected) == sorted(r.headers["x-audit-id"] for r in made)

    paged: list[str] = []
    before = None
    for _ in range(10):
        page = client.get(
            "/admin/audit",
            params={**params, "limit": 2, **({"before": before} if before else {})},
            headers=admin_headers,
        ).json()
        paged += [r["id"] for r in page["records"]]
        before = page["next_before"]
        if before is None:
            break
        assert before == paged[-1]
    assert paged == expected


def test_a_page_stops_at_its_body_budget_and_says_where_to_go_on(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    # Each request stores about 900 KB of body; 8 MiB of bodies make a page.
    bulky = b'{"first_name": "' + b"x" * 900_000 + b'"}'
    headers = {**admin_headers, "Content-Type": "application/json"}
    ids = [
        client.post("/admin/contacts", content=bulky, headers=headers).headers["x-audit-id"]
        for _ in range(12)
    ]
    params = {"operation": "admin.create_contact", "limit": 1000}
    first = client.get("/admin/audit", params=params, headers=admin_headers).json()
    carried = sum(len(r["request_body"]) + len(r["response_body"]) for r in first["records"])
    assert 0 < len(first["records"]) < 12
    assert carried <= 8 * 1024 * 1024
    assert first["next_before"] == first["records"][-1]["id"]
    rest = client.get(
        "/admin/audit", params={**params, "before": first["next_before"]}, headers=admin_headers
    ).json()
    assert rest["next_before"] is None
    assert [r["id"] for r in first["records"] + rest["records"]] == list(reversed(ids))


@pytest.mark.parametrize(
    "params",
    [
        {"before": "a0Anonsense"},
        {"before": "a0A000000000000"},
        {"before": "003000000000000"},
        {"limit": 0},
        {"limit": 1001},
        {"limit": "many"},
        {"since": "last week"},
        {"since": "0001-01-01T00:00:00+10:00"},
        {"since": "9999-12-31T23:00:00-05:00"},
    ],
)
def test_search_with_bad_parameters_is_400(
    client: TestClient, admin_headers: dict[str, str], params: dict[str, Any]
) -> None:
    response = client.get("/admin/audit", params=params, headers=admin_headers)
    assert response.status_code == 400
    assert response.json()["errors"]


def test_record_is_found_by_either_id_form(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    audit_id = client.get("/no/where").headers["x-audit-id"]
    for form in (audit_id, audit_id[:15], audit_id.lower(), audit_id.upper()):
        assert read_record(client, admin_headers, form)["id"] == audit_id


@pytest.mark.parametrize(
    "audit_id",
    ["a0A000000000000AAA", "a0A000000000000", "003000000000000AAA", "nonsense", "a" * 18],
)
def test_unknown_record_is_404(
    client: TestClient, admin_headers: dict[str, str], audit_id: str
) -> None:
    response = client.get(f"/admin/audit/{audit_id}", headers=admin_headers)
    assert response.status_code == 404
    assert audit_id in response.json()["detail"]
