"""An endpoint's health — last success, failing since and its last error, pending count — in the admin API,
`ridercrm webhooks list` and the console's Webhooks page (admins): `enabled` alone says nothing of an endpoint whose every
delivery fails."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person
from testkit.receiver import Receiver
from typer.testing import CliRunner

from ridercrm.cli import app
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.events.delivery import Deliverer
from ridercrm.staff import service as staff_service
from tests.console.conftest import PASSWORD, sign_in
from tests.events.conftest import register


def health(client: TestClient, headers: dict[str, str], endpoint: str) -> dict[str, object]:
    one = client.get(f"/admin/webhooks/{endpoint}", headers=headers).json()["health"]
    (listed,) = client.get("/admin/webhooks", headers=headers).json()["webhooks"]
    assert listed["health"] == one
    return one  # type: ignore[no-any-return]


def test_health_shows_last_success_failing_since_and_pending(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
    make_deliverer: Callable[..., Deliverer],
    settings: Settings,
) -> None:
    endpoint, _ = register(client, admin_headers, receiver.url, "person.created")
    assert health(client, admin_headers, endpoint) == {
        "last_success": None, "failing_since": None, "pending": 0, "last_error": None,
    }  # fmt: skip
    create_person(client, admin_headers)
    deliverer.run_until_idle()
    good = health(client, admin_headers, endpoint)
    assert good["last_success"] is not None
    assert (good["failing_since"], good["pending"], good["last_error"]) == (None, 0, None)

    # Every delivery fails now; the next retry is an hour away: still enabled.
    receiver.answer(500, 503)
    patient = make_deliverer(webhook_retry_schedule="3600,3600")
    create_person(client, admin_headers, first_name="Bo", email="bo@example.com")
    create_person(client, admin_headers, first_name="Cy", email="cy@example.com")
    patient.run_until_idle()
    failing = health(client, admin_headers, endpoint)
    assert client.get(f"/admin/webhooks/{endpoint}", headers=admin_headers).json()["enabled"]
    assert failing["last_success"] == good["last_success"]
    assert failing["failing_since"] is not None
    assert str(failing["failing_since"]) >= str(good["last_success"])
    assert failing["pending"] == 2  # Bo's, waiting for its retry, and Cy's
    # What the newest failing delivery (Cy's) was told; the two may be sent side by side.
    log = client.get(f"/admin/webhooks/{endpoint}/deliveries", headers=admin_headers).json()
    newest, older = log["deliveries"][:2]
    assert {newest["error"], older["error"]} == {"HTTP 500", "HTTP 503"}
    assert failing["last_error"] == newest["error"]

    listed = CliRunner().invoke(
        app, ["webhooks", "list"], env={"RIDERCRM_DATABASE_URL": settings.database_url}
    )
    assert listed.exit_code == 0, listed.output
    line = next(line for line in listed.stdout.splitlines() if line.startswith(endpoint))
    assert f"failing since {failing['failing_since']} ({newest['error']})" in line
    assert "2 pending" in line
    assert f"last success {good['last_success']}" in line


def test_the_console_lists_endpoints_with_their_health_for_admins(
    client: TestClient,
    make_client: Callable[..., TestClient],
    admin_headers: dict[str, str],
    receiver: Receiver,
    make_deliverer: Callable[..., Deliverer],
    sessions: sessionmaker[Session],
) -> None:
    endpoint, _ = register(client, admin_headers, receiver.url, "person.created")
    receiver.answer(500)
    create_person(client, admin_headers)
    make_deliverer(webhook_retry_schedule="3600").run_until_idle()
    with session_scope(sessions, write=True) as session:
        staff_service.create_user(session, name="boss", role="admin", password=PASSWORD)
        staff_service.create_user(session, name="desk", role="staff", password=PASSWORD)
    admin = make_client()
    admin.follow_redirects = False
    assert sign_in(admin, "boss").status_code == 303
    page = admin.get("/console/admin/webhooks")
    assert page.status_code == 200
    assert 'href="/console/admin/webhooks"' in page.text  # in the navigation
    row = page.text.split(f'<span class="badge">{endpoint}</span>', 1)[1].split("</tr>", 1)[0]
    assert receiver.url in row
    assert '<span class="ok">enabled</span>' in row  # enabled, yet failing:
    failing = row.split('data-label="Failing since">', 1)[1].split("</td>", 1)[0]
    assert '<span class="error">' in failing
    assert "last: HTTP 500" in failing  # what the failing delivery was told
    assert 'data-label="Pending">1</td>' in row
    assert 'data-label="Last success">never</td>' in row
    assert "127.0.0.1/32" in row  # the allowance it was registered with
    staff = make_client()
    staff.follow_redirects = False
    assert sign_in(staff, "desk").status_code == 303
    assert staff.get("/console/admin/webhooks").status_code == 403
    assert "/console/admin/webhooks" not in staff.get("/console/people").text
