"""An endpoint's health — last success, failing since, pending count — in the admin API
and `ridercrm webhooks list`: `enabled` alone says nothing of an endpoint whose every
delivery fails."""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from testkit.factories import create_person
from testkit.receiver import Receiver
from typer.testing import CliRunner

from ridercrm.cli import app
from ridercrm.config import Settings
from ridercrm.events.delivery import Deliverer
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
        "last_success": None, "failing_since": None, "pending": 0,
    }  # fmt: skip
    create_person(client, admin_headers)
    deliverer.run_until_idle()
    good = health(client, admin_headers, endpoint)
    assert good["last_success"] is not None
    assert (good["failing_since"], good["pending"]) == (None, 0)

    # Every delivery fails now; the next retry is an hour away: still enabled.
    receiver.answer(500, 500)
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

    listed = CliRunner().invoke(
        app, ["webhooks", "list"], env={"RIDERCRM_DATABASE_URL": settings.database_url}
    )
    assert listed.exit_code == 0, listed.output
    line = next(line for line in listed.stdout.splitlines() if line.startswith(endpoint))
    assert f"failing since {failing['failing_since']}" in line
    assert "2 pending" in line
    assert f"last success {good['last_success']}" in line
