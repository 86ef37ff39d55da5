"""Fixtures of the event tests: settings that allow the loopback receiver, a deliverer."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from testkit.receiver import Receiver, receiving

from ridercrm.config import Settings
from ridercrm.events.delivery import Deliverer

TEST_WEBHOOKS = {
    "webhook_allowed_hosts": "127.0.0.1",
    "webhook_retry_schedule": "0,0,0",
    "webhook_timeout_seconds": 5.0,
    "webhook_poll_seconds": 0.05,
}


@pytest.fixture
def settings(db_url: str) -> Settings:
    return Settings(database_url=db_url, log_json=True, **TEST_WEBHOOKS)


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as running:
        yield running


@pytest.fixture
def make_deliverer(settings: Settings) -> Iterator[Callable[..., Deliverer]]:
    """A deliverer on the test database, with some settings changed."""
    made: list[Deliverer] = []

    def make(**changes: Any) -> Deliverer:
        deliverer = Deliverer(Settings(**{**settings.model_dump(), **changes}))
        made.append(deliverer)
        return deliverer

    yield make
    for deliverer in made:
        deliverer.close()
        deliverer.sessions.kw["bind"].dispose()


@pytest.fixture
def deliverer(make_deliverer: Callable[..., Deliverer]) -> Deliverer:
    return make_deliverer()


def register(
    client: TestClient, headers: dict[str, str], url: str, *event_types: str
) -> tuple[str, str]:
    """Register an endpoint through the admin API; its id and secret."""
    response = client.post(
        "/admin/webhooks",
        json={"url": url, "event_types": list(event_types), "description": "test"},
        headers=headers,
    )
    assert response.status_code == 201, response.text
    body = response.json()
    return body["id"], body["secret"]
