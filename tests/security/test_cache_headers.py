"""Answers of the API hold personal data and secrets: no cache may keep them.

A key sent as ``X-API-Key`` is not the ``Authorization`` header that RFC 9111 (3.5)
keeps shared caches away from, and a cache in front of the service (Varnish keeps a GET
answered 200 for two minutes by default) would hand a person's record, a match or a
webhook's secret to the next caller of the same address, key or not.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi.testclient import TestClient
from testkit.factories import create_person, person_body


def test_every_api_answer_says_no_store(
    client: TestClient, admin_headers: dict[str, str], make_key: Callable[..., str]
) -> None:
    person = create_person(client, admin_headers)
    match = {"X-API-Key": make_key("match", name="match")}
    query = {
        name: person_body()[name]
        for name in ("first_name", "last_name", "date_of_birth", "email", "postcode")
    }
    asked: list[tuple[str, str, dict[str, str], Any]] = [
        ("GET", f"/admin/people/{person}", admin_headers, None),
        ("GET", "/admin/audit", admin_headers, None),
        ("POST", "/crm/people/match", match, {"person_data": query}),
        ("POST", "/crm/people/match", match, {"person_data": {}}),  # 400
        ("GET", f"/admin/people/{person}", match, None),  # 403
        ("GET", "/admin/people/003000000000000AAA", admin_headers, None),  # 404
        ("GET", f"/admin/people/{person}", {}, None),  # 401
        (
            "POST",
            "/admin/webhooks",
            admin_headers,
            {"url": "https://hooks.example.com/x", "event_types": ["person.created"]},
        ),  # 201 with the secret, or 400 where example.com does not resolve
    ]
    for method, path, headers, body in asked:
        answer = client.request(method, path, headers=headers, json=body)
        assert answer.headers.get("cache-control") == "no-store", (method, path, answer.status_code)
