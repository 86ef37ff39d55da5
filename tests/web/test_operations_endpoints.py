"""Health, readiness and metrics (docs/decisions.md, "Wire", "Security, second round (issue 10)")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from prometheus_client.parser import text_string_to_metric_families
from testkit.factories import person_body

from ridercrm.app import create_app
from ridercrm.config import Settings


def test_healthz(client: TestClient) -> None:
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_readyz_on_a_working_database(client: TestClient) -> None:
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


@pytest.fixture(params=["sqlite-missing-directory", "postgresql-closed-port"])
def unreachable_client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TestClient]:
    if request.param == "sqlite-missing-directory":
        url = f"sqlite:///{tmp_path / 'no' / 'such' / 'directory' / 'ridercrm.db'}"
    else:
        url = "postgresql+psycopg://postgres@127.0.0.1:1/ridercrm?connect_timeout=2"
    # Building the app must not need the database.
    app = create_app(Settings(database_url=url))
    with TestClient(app) as client:
        yield client
    app.state.context.engine.dispose()


def test_readyz_is_503_when_the_database_is_unreachable(unreachable_client: TestClient) -> None:
    response = unreachable_client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "unreachable"}
    # The process itself is alive.
    assert unreachable_client.get("/healthz").status_code == 200
    assert unreachable_client.get("/metrics").status_code == 200


def test_requests_without_a_database_are_503_not_500(unreachable_client: TestClient) -> None:
    response = unreachable_client.post(
        "/admin/contacts", json=person_body(), headers={"X-API-Key": "rcrm_anything"}
    )
    assert response.status_code == 503
    assert "audit trail is unavailable" in response.json()["detail"]


def requests_total(client: TestClient, operation: str, status: str) -> float:
    response = client.get("/metrics")
    assert response.status_code == 200
    for family in text_string_to_metric_families(response.text):
        if family.name != "ridercrm_requests":
            continue
        for sample in family.samples:
            if sample.name == "ridercrm_requests_total" and sample.labels == {
                "operation": operation,
                "status": status,
            }:
                return sample.value
    return 0.0


def latency_count(client: TestClient, operation: str) -> float:
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for sample in family.samples:
            if sample.name == "ridercrm_request_duration_seconds_count" and sample.labels == {
                "operation": operation
            }:
                return sample.value
    return 0.0


def test_metrics_count_requests_by_operation_and_status(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    created = requests_total(client, "admin.create_contact", "201")
    refused = requests_total(client, "admin.create_contact", "401")
    unrouted = requests_total(client, "unrouted", "404")
    timed = latency_count(client, "admin.create_contact")

    assert (
        client.post("/admin/contacts", json=person_body(), headers=admin_headers).status_code == 201
    )
    assert (
        client.post("/admin/contacts", json=person_body(), headers=admin_headers).status_code == 201
    )
    assert client.post("/admin/contacts", json=person_body()).status_code == 401
    assert client.get("/nowhere").status_code == 404

    assert requests_total(client, "admin.create_contact", "201") == created + 2
    assert requests_total(client, "admin.create_contact", "401") == refused + 1
    assert requests_total(client, "unrouted", "404") == unrouted + 1
    assert latency_count(client, "admin.create_contact") == timed + 3


def test_metrics_are_prometheus_text(client: TestClient) -> None:
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    assert "# TYPE ridercrm_requests_total counter" in response.text
    assert "# TYPE ridercrm_request_duration_seconds histogram" in response.text


def test_operations_endpoints_need_no_key_and_stay_at_the_root(
    make_client: Callable[..., TestClient],
) -> None:
    client = make_client(base_path="/services/apexrest")
    for path in ("/healthz", "/readyz", "/metrics"):
        assert client.get(path).status_code == 200
        assert client.get(f"/services/apexrest{path}").status_code == 404
