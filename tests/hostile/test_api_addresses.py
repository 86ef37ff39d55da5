"""Hostile addresses on every route of the API (the interface, /admin, the rest): whatever
a path parameter or a query value holds, the answer is a 4xx or the answer itself, never
a 500. Every route of the OpenAPI document is tried, so a route added later is swept
too; the console has its own sweep (test_console_addresses.py)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient

# Integers just past what a 32-bit and a 64-bit column hold (PostgreSQL refuses them
# where SQLite does not), signs, zero, and ids of other kinds.
HOSTILE_VALUES = [
    "2147483648",
    "9223372036854775808",
    "9" * 30,
    "-1",
    "0",
    "01tDEMO00LAPSOMYT5",
    "a0A000000000001AAA",
]
QUERY_NAMES = ("before", "limit", "since", "from", "to", "person_id", "product_id")


def _routes(client: TestClient) -> list[tuple[str, str]]:
    """Every (method, path) the app's OpenAPI document declares (the console's pages are
    not in it)."""
    paths = client.app.openapi()["paths"]  # type: ignore[attr-defined]
    return [(method.upper(), path) for path, methods in paths.items() for method in methods]


def test_hostile_path_values_never_reach_a_500(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    routes = _routes(client)
    assert len(routes) > 20  # the sweep sees the app's routes
    for method, template in routes:
        if "{" not in template:
            continue
        for value in HOSTILE_VALUES:
            path = re.sub(r"{\w+}", value, template)
            body = None if method in ("GET", "DELETE") else {}
            answer = client.request(method, path, json=body, headers=admin_headers)
            assert answer.status_code < 500, (method, path, answer.text[:300])


def test_hostile_query_values_never_reach_a_500(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    for method, template in _routes(client):
        if method != "GET" or "{" in template:
            continue
        for value in HOSTILE_VALUES:
            for name in QUERY_NAMES:
                answer = client.get(template, params={name: value}, headers=admin_headers)
                assert answer.status_code < 500, (template, name, value, answer.text[:300])
