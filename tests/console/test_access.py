"""Every console route's access rules: no session → sign-in; a lower role → 403; a form
without its CSRF token → 403, nothing changed. A new route must be added to ROUTES."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from ridercrm.web.console.pages import ROUTERS

PERSON = "003DEMO00000BENYD2"
# (method, path below /console, the least role; None: open to anyone)
ROUTES: list[tuple[str, str, str | None]] = [
    ("GET", "/login", None),
    ("POST", "/login", None),
    ("GET", "/", "viewer"),
    ("POST", "/logout", "viewer"),
    ("POST", "/logout-everywhere", "viewer"),
    ("GET", "/people", "viewer"),
    ("GET", f"/people/{PERSON}", "viewer"),
    ("POST", f"/people/{PERSON}", "staff"),
    ("POST", f"/people/{PERSON}/convert", "staff"),
    ("POST", f"/people/{PERSON}/courses/02iDEMO00000001YDA", "staff"),
    ("GET", "/daysheet", "viewer"),
    ("POST", "/daysheet", "staff"),
    ("GET", "/dashboard", "viewer"),
    ("GET", "/sessions", "viewer"),
    ("GET", "/sessions/a0SDEMO0000FULL2D4", "viewer"),
    ("POST", "/sessions/a0SDEMO0000FULL2D4/move", "staff"),
    ("POST", "/sessions/a0SDEMO0000FULL2D4/waitlist", "staff"),
    ("GET", "/audit", "viewer"),
    ("GET", "/audit/a0A000000000001AAA", "viewer"),
    ("GET", "/duplicates", "viewer"),
    ("GET", "/duplicates/merges", "viewer"),
    ("GET", "/duplicates/merges/1", "viewer"),
    ("POST", "/duplicates/merges/1/undo", "staff"),
    ("GET", "/duplicates/7", "viewer"),
    ("POST", "/duplicates/7/preview", "staff"),
    ("POST", "/duplicates/7/merge", "staff"),
    ("POST", "/duplicates/7/dismiss", "staff"),
    ("POST", "/duplicates/7/skip", "staff"),
    ("GET", "/admin/products", "admin"),
    ("POST", "/admin/products", "admin"),
    ("POST", "/admin/products/01tDEMO00LAPSOMYT5/active", "admin"),
    ("GET", "/admin/keys", "admin"),
    ("POST", "/admin/keys", "admin"),
    ("POST", "/admin/keys/1/revoke", "admin"),
    ("GET", "/admin/users", "admin"),
    ("POST", "/admin/users", "admin"),
    ("POST", "/admin/users/someone/disable", "admin"),
    ("POST", "/admin/users/someone/enable", "admin"),
    ("POST", "/admin/users/someone/reset-password", "admin"),
    ("GET", "/admin/webhooks", "admin"),
    ("GET", "/messages", "viewer"),
    ("GET", "/messages/5", "viewer"),
    ("POST", f"/people/{PERSON}/reminders", "staff"),
    ("GET", "/stop-reminders/some-token", None),
    ("POST", "/stop-reminders/some-token", None),
    ("GET", "/admin/templates", "admin"),
    ("GET", "/admin/templates/reminder/email", "admin"),
    ("POST", "/admin/templates/reminder/email", "admin"),
]
LOWER = {"staff": "viewer", "admin": "staff"}


def _template(path: str) -> str:
    return (
        path.replace(PERSON, "{person_id}")
        .replace("02iDEMO00000001YDA", "{asset_id}")
        .replace("a0A000000000001AAA", "{audit_id}")
        .replace("01tDEMO00LAPSOMYT5", "{product_id}")
        .replace("/keys/1/", "/keys/{key_id}/")
        .replace("/users/someone/", "/users/{name}/")
        .replace("/merges/1", "/merges/{merge_id}")
        .replace("/duplicates/7", "/duplicates/{cluster_id}")
        .replace("a0SDEMO0000FULL2D4", "{session_id}")
        .replace("/messages/5", "/messages/{message_id}")
        .replace("/stop-reminders/some-token", "/stop-reminders/{token}")
        .replace("/templates/reminder/email", "/templates/{kind}/{channel}")
    )


def test_every_route_is_declared_with_the_role_the_table_gives() -> None:
    """Routes come from ConsoleRouter.page/form, which do the session, role and CSRF
    checks; one added with a bare FastAPI decorator would skip them."""
    declared = {
        (route.method, route.path, route.role) for router in ROUTERS for route in router.declared
    }
    served = {
        (method, route.path.removeprefix("/console"))
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    assert {(method, path) for method, path, _role in declared} == served
    assert declared == {(method, _template(path), role) for method, path, role in ROUTES}
    for router in ROUTERS:
        for route in router.declared:
            if route.method == "POST":
                assert route.audit, route  # every form's change is audited under a name
                assert route.csrf == (route.role is not None), route


def test_the_table_names_every_console_route() -> None:
    served = {
        (method, route.path.removeprefix("/console"))
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    }
    listed = {(method, _template(path)) for method, path, _role in ROUTES}
    assert served == listed


@pytest.mark.parametrize(("method", "path", "role"), [r for r in ROUTES if r[2]])
def test_no_session_is_sent_to_sign_in(
    make_client: Callable[..., TestClient], method: str, path: str, role: str
) -> None:
    client = make_client()
    answer = client.request(method, "/console" + path, follow_redirects=False)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/console/login")


def test_a_lower_role_is_refused_everywhere(console_as: Callable[..., TestClient]) -> None:
    clients = {role: console_as(role) for role in ("viewer", "staff")}
    for method, path, role in ROUTES:
        if role not in LOWER:
            continue
        client = clients[LOWER[role]]
        answer = client.request(
            method, "/console" + path, data={"csrf": "x"} if method == "POST" else None
        )
        assert answer.status_code == 403, (method, path)
        assert f"it needs the {role} role" in answer.text


def test_every_form_refuses_a_missing_or_wrong_csrf_token(
    console_as: Callable[..., TestClient],
) -> None:
    client = console_as("admin")
    for method, path, role in ROUTES:
        if method != "POST" or role is None:
            continue
        for data in ({}, {"csrf": "forged", "name": "x"}):
            answer = client.post("/console" + path, data=data)
            assert answer.status_code == 403, (path, data)
            assert "CSRF check" in answer.text
    assert client.get("/console/people").status_code == 200  # still signed in
