"""Every route refuses a missing, a wrong, a revoked and an out-of-scope key (docs/decisions.md, "Keys and scopes"),
route by route, and a refused request writes nothing but its audit record.

The routes are enumerated from the app, so a new route fails
:func:`test_every_route_is_in_the_table` until it is given its scope here.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi.routing import iter_route_contexts
from fastapi.testclient import TestClient

from ridercrm.db import session_scope
from ridercrm.keys.service import SCOPES, revoke_key
from tests.hostile.conftest import MODIFY, PRODUCTS, RIDER_COURSES, World

# Served without a key, on purpose: probes (/healthz, /readyz) and Prometheus (/metrics)
# must work without credentials, and the OpenAPI document and its pages describe the
# API without touching any data. None of them is audited (docs/decisions.md, Wire).
UNAUTHENTICATED = frozenset(
    {"/healthz", "/readyz", "/metrics", "/docs", "/docs-assets", "/openapi.json", "/redoc"}
)

# Each route and the scope it needs (README, "The interface" and "Admin API").
SCOPE_OF: dict[tuple[str, str], str] = {
    ("POST", "/crm/people/rider_courses"): "courses",
    ("POST", "/crm/modify"): "people",
    ("POST", "/crm/people/match"): "match",
    ("POST", "/crm/leads/match"): "match",
    ("GET", "/crm/products"): "products",
    ("POST", "/admin/contacts"): "admin",
    ("POST", "/admin/leads"): "admin",
    ("GET", "/admin/people"): "admin",
    ("GET", "/admin/people/{person_id}"): "admin",
    ("POST", "/admin/products"): "admin",
    ("GET", "/admin/products/{product_id}"): "admin",
    ("GET", "/admin/assets/{asset_id}"): "admin",
    ("GET", "/admin/audit"): "admin",
    ("GET", "/admin/audit/{audit_id}"): "admin",
    ("POST", "/admin/webhooks"): "admin",
    ("GET", "/admin/webhooks"): "admin",
    ("GET", "/admin/webhooks/{webhook_id}"): "admin",
    ("POST", "/admin/webhooks/{webhook_id}/disable"): "admin",
    ("POST", "/admin/webhooks/{webhook_id}/enable"): "admin",
    ("POST", "/admin/webhooks/{webhook_id}/rotate"): "admin",
    ("GET", "/admin/webhooks/{webhook_id}/deliveries"): "admin",
    ("POST", "/admin/webhooks/{webhook_id}/replay"): "admin",
    ("POST", "/admin/people/merge"): "admin",
    ("POST", "/admin/people/merge/{merge_id}/undo"): "admin",
    ("GET", "/admin/duplicates"): "admin",
    ("GET", "/admin/duplicates/{cluster_id}"): "admin",
    ("POST", "/admin/duplicates/{cluster_id}/decide"): "admin",
    # Availability is for the booking website: a products or a courses key will do.
    ("GET", "/crm/sessions"): "products|courses",
    ("GET", "/crm/sessions/{session_id}/waitlist"): "courses",
    ("POST", "/crm/sessions/{session_id}/waitlist"): "courses",
    ("DELETE", "/crm/sessions/{session_id}/waitlist/{person_id}"): "courses",
    ("POST", "/admin/sessions"): "admin",
    ("GET", "/admin/sessions"): "admin",
    ("GET", "/admin/sessions/{session_id}"): "admin",
    ("PATCH", "/admin/sessions/{session_id}"): "admin",
}
SESSION = {"location": "somerton", "course_datetime": "2027-03-01 08:30:00", "capacity": 4}
WEBHOOK = {"url": "https://93.184.216.34/hook", "event_types": ["person.created"]}


def app_routes(client: TestClient) -> set[tuple[str, str]]:
    """(method, path) of every route of the app but the unauthenticated ones."""
    routes = set()
    for context in iter_route_contexts(client.app.routes):  # type: ignore[attr-defined]
        methods = getattr(context.original_route, "methods", None) or set()
        if context.path in UNAUTHENTICATED:
            continue
        routes |= {(method, str(context.path)) for method in methods if method != "HEAD"}
    return routes


def test_every_route_is_in_the_table(client: TestClient) -> None:
    assert app_routes(client) == set(SCOPE_OF)


def _request(world: World, method: str, route: str) -> tuple[str, dict[str, Any]]:
    """A request to the route that would do its work (and write, for a POST) if let in."""
    audit_id = world.client.get("/admin/audit", params={"limit": 1}, headers=world.headers)
    webhook_id = ""
    if "{webhook_id}" in route:
        created = world.client.post("/admin/webhooks", json=WEBHOOK, headers=world.headers)
        webhook_id = created.json()["id"]
    session_id = ""
    if "{session_id}" in route:
        created = world.client.post(
            "/admin/sessions", json={**SESSION, "product_id": world.product}, headers=world.headers
        )
        assert created.status_code == 201, created.text
        session_id = created.json()["id"]
    path = route.format(
        webhook_id=webhook_id,
        session_id=session_id,
        person_id=world.contact,
        product_id=world.product,
        asset_id=world.asset,
        audit_id=audit_id.json()["records"][0]["id"],
        merge_id=1,
        cluster_id=1,
    )
    bodies: dict[str, Any] = {
        "/crm/people/rider_courses": RIDER_COURSES.body(world.valid_item(RIDER_COURSES)),
        "/crm/modify": MODIFY.body(world.valid_item(MODIFY)),
        "/crm/people/match": {"person_data": {"first_name": "Ann"}},
        "/crm/leads/match": {"person_data": {"first_name": "Ann"}},
        "/admin/contacts": world.valid_item(RIDER_COURSES)
        and {"first_name": "A", "last_name": "B"},
        "/admin/leads": {"first_name": "A", "last_name": "B"},
        "/admin/products": world.valid_item(PRODUCTS),
        "/admin/webhooks": WEBHOOK,
        "/admin/webhooks/{webhook_id}/disable": {},
        "/admin/webhooks/{webhook_id}/enable": {},
        "/admin/webhooks/{webhook_id}/rotate": {},
        "/admin/webhooks/{webhook_id}/replay": {"since": "2026-01-01T00:00:00Z"},
        "/admin/people/merge": {"people": [world.contact, world.lead], "dry_run": True},
        "/admin/people/merge/1/undo": {},
        "/admin/duplicates/1/decide": {"decision": "skip", "dry_run": True},
        "/crm/sessions/{session_id}/waitlist": {"person_id": world.contact},
        "/admin/sessions": {**SESSION, "product_id": world.product},
        "/admin/sessions/{session_id}": {"minimum": 1},
    }
    kwargs: dict[str, Any] = {}
    if method in ("POST", "PATCH"):
        kwargs["content"] = json.dumps(bodies[path if path in bodies else route]).encode()
        kwargs["headers"] = {"Content-Type": "application/json"}
    if route == "/admin/people":
        path += "?q=Ann"
    return path, kwargs


def _send(
    world: World, method: str, path: str, kwargs: dict[str, Any], key: dict[str, str]
) -> httpx.Response:
    headers = {**kwargs.get("headers", {}), **key}
    return world.client.request(method, path, content=kwargs.get("content"), headers=headers)


@pytest.mark.parametrize(("method", "route"), SCOPE_OF, ids=[" ".join(r) for r in SCOPE_OF])
def test_route_refuses_missing_wrong_revoked_and_out_of_scope_keys(
    world: World, make_key: Callable[..., str], method: str, route: str
) -> None:
    wanted = SCOPE_OF[(method, route)].split("|")
    scope = wanted[0]
    path, kwargs = _request(world, method, route)
    right = make_key(scope, name="right-scope")
    revoked = make_key(scope, name="revoked")
    other_scopes = [s for s in SCOPES if s not in (*wanted, "admin")]
    out_of_scope = make_key(*other_scopes, name="out-of-scope")
    with session_scope(world.sessions, write=True) as session:
        revoke_key(session, ident="revoked")

    refusals: list[tuple[str, dict[str, str], int, str]] = [
        ("missing", {}, 401, "missing API key"),
        ("empty bearer", {"Authorization": "Bearer "}, 401, "missing API key"),
        ("wrong", {"Authorization": "Bearer rcrm_" + "A" * 43}, 401, "invalid or revoked"),
        ("wrong x-api-key", {"X-API-Key": right[:-1] + ("B" if right[-1] != "B" else "C")}, 401, "invalid or revoked"),
        ("revoked", {"Authorization": f"Bearer {revoked}"}, 401, "invalid or revoked"),
        ("revoked x-api-key", {"X-API-Key": revoked}, 401, "invalid or revoked"),
        ("out of scope", {"X-API-Key": out_of_scope}, 403, "lacks scope " + " or ".join(map(repr, wanted))),
    ]  # fmt: skip
    for label, key, status, reason in refusals:
        ledger = world.ledger()
        response = _send(world, method, path, kwargs, key)
        assert response.status_code == status, (label, response.status_code, response.text)
        assert reason in response.headers["x-failure-reason"], (label, response.headers)
        if status == 401:
            assert response.headers["www-authenticate"] == "Bearer", label
        else:
            assert "www-authenticate" not in response.headers, label
        ledger.unchanged(response)
        record = world.audit(response)
        expected_key = "out-of-scope" if status == 403 else None
        assert record["api_key_name"] == expected_key, (label, record)

    # The key with the scope, and an admin key, are let in (so the refusals above were
    # about the key, not about the request).
    for key in (right, world.headers["Authorization"].removeprefix("Bearer ")):
        response = _send(world, method, path, kwargs, {"X-API-Key": key})
        assert response.status_code not in (401, 403), (key[:12], response.text)
        assert response.status_code < 500, response.text
