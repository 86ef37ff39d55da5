"""Audit bodies are stored compactly and read back unchanged (docs/decisions.md, "Audit")."""

from __future__ import annotations

import json

from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope


def _stored_lengths(sessions: sessionmaker[Session], audit_id: str) -> tuple[int, int]:
    """The request and response bodies' lengths as the database holds them."""
    with session_scope(sessions) as session:
        row = session.execute(
            text(
                "SELECT length(request_body) AS request, length(response_body) AS response"
                " FROM audit_records WHERE id = :id"
            ),
            {"id": audit_id},
        ).one()
    return int(row.request), int(row.response)


def test_a_large_batch_is_stored_in_a_fraction_of_its_size_and_read_back_whole(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    people = [
        {"ID": f"003{n:012d}", "city": f"Ballarat {n}", "MobilePhone": f"04{n:08d}"}
        for n in range(200)
    ]
    sent = json.dumps({"people_data": people})
    response = client.post(
        "/crm/modify",
        content=sent,
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 200, response.text
    audit_id = response.headers["x-audit-id"]
    stored_request, stored_response = _stored_lengths(sessions, audit_id)
    assert stored_request * 4 < len(sent)
    assert stored_response * 4 < len(response.text)

    record = client.get(f"/admin/audit/{audit_id}", headers=admin_headers).json()
    assert record["request_body"] == sent
    assert record["response_body"] == response.text


def test_short_bodies_stay_readable_in_the_database(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    response = client.get("/crm/products", headers=admin_headers)
    with session_scope(sessions) as session:
        stored = session.execute(
            text("SELECT response_body FROM audit_records WHERE id = :id"),
            {"id": response.headers["x-audit-id"]},
        ).scalar_one()
    assert stored == response.text


def test_a_body_that_looks_packed_is_kept_as_sent(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    sent = "\x01z:not packed at all"
    response = client.post(
        "/admin/contacts",
        content=sent.encode(),
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    record = client.get(
        f"/admin/audit/{response.headers['x-audit-id']}", headers=admin_headers
    ).json()
    assert record["request_body"] == sent
