"""Rate limiting per API key (429 with Retry-After, and the audit record says so: docs/decisions.md, "Wire", "Audit")."""

from __future__ import annotations

import logging
import math
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis
from fastapi.testclient import TestClient
from httpx import Response
from pydantic import ValidationError
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product, person_body

from ridercrm import ratelimit
from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.models import Base
from ridercrm.ratelimit import KeyRateLimiter, parse_limits
from tests.courses.helpers import new_booking

REDIS_ENV = "RIDERCRM_TEST_REDIS_URL"


# --- what each keyed route looks like when it is refused -----------------------------


@dataclass(frozen=True)
class Route:
    name: str
    operation: str
    method: str
    path: str
    scope: str
    body: Callable[[dict[str, str], int], Any]  # (stored ids, request number) -> JSON body
    shape: Callable[[Response], None]  # asserts the refusal is in the route's own shape


def text_shape(response: Response) -> None:
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "Status update failed."


def modify_shape(response: Response) -> None:
    body = response.json()
    assert body == {
        "status": False,
        "receipt": body["receipt"],
        "audit_ID": response.headers["x-audit-id"],
        "details": [],
        "items_failed": 0,
    }
    assert body["receipt"].startswith("rate limited")


def match_shape(response: Response) -> None:
    body = response.json()
    assert body == {
        "delivery": "false",
        "receipt": body["receipt"],
        "ID": "",
        "audit_ID": response.headers["x-audit-id"],
    }
    assert body["receipt"].startswith("rate limited")


def admin_shape(response: Response) -> None:
    body = response.json()
    assert body == {"detail": body["detail"], "audit_id": response.headers["x-audit-id"]}
    assert body["detail"].startswith("rate limited")


ROUTES = [
    Route(
        "rider_courses",
        "crm.rider_courses",
        "POST",
        "/crm/people/rider_courses",
        "courses",
        lambda ids, n: {
            "people_product": [
                new_booking(ids["contact"], ids["product"], booking_number=f"HB-{n}")
            ]
        },
        text_shape,
    ),
    Route(
        "modify",
        "crm.modify",
        "POST",
        "/crm/modify",
        "people",
        lambda ids, n: {"people_data": [{"ID": ids["contact"], "city": f"Town {n}"}]},
        modify_shape,
    ),
    Route(
        "people_match",
        "crm.people_match",
        "POST",
        "/crm/people/match",
        "match",
        lambda _ids, _n: {"person_data": person_body()},
        match_shape,
    ),
    Route(
        "leads_match",
        "crm.leads_match",
        "POST",
        "/crm/leads/match",
        "match",
        lambda _ids, _n: {"person_data": person_body(lead_source="Web")},
        match_shape,
    ),
    Route(
        "products", "crm.products", "GET", "/crm/products", "products", lambda *_: None, admin_shape
    ),
    Route(
        "admin",
        "admin.create_contact",
        "POST",
        "/admin/contacts",
        "admin",
        lambda _ids, n: person_body(email=f"rider{n}@example.com", first_name=f"Rider{n}"),
        admin_shape,
    ),
]


def send(client: TestClient, route: Route, key: str, ids: dict[str, str], n: int) -> Response:
    return client.request(
        route.method, route.path, json=route.body(ids, n), headers={"X-API-Key": key}
    )


def snapshot(engine: Engine) -> dict[str, list[str]]:
    """Every row of every table but the audit trail, in a comparable form."""
    tables: dict[str, list[str]] = {}
    with engine.connect() as connection:
        for table in Base.metadata.sorted_tables:
            if table.name != AuditRecord.__tablename__:
                tables[table.name] = sorted(
                    repr(tuple(row)) for row in connection.execute(select(table))
                )
    return tables


def audit_record(sessions: sessionmaker[Session], audit_id: str) -> AuditRecord:
    with session_scope(sessions) as session:
        record = session.get(AuditRecord, audit_id)
        assert record is not None
        session.expunge(record)
        return record


def assert_refused(response: Response, route: Route, window_seconds: int) -> None:
    assert response.status_code == 429, response.text
    assert 1 <= int(response.headers["retry-after"]) <= window_seconds
    assert response.headers["x-failure-reason"].startswith("rate limited")
    route.shape(response)


# Three seconds, not one: on a loaded machine a request can take over a second, and
# the window must not pass before the refusal it is meant to cause.
WINDOW = "2 per 3 seconds"


def warm_up(make_key: Callable[..., str], *clients: TestClient) -> None:
    """Each app's first request (which opens its connections) is made by a key of its own."""
    warm = {"X-API-Key": make_key("products", name="warm")}
    for client in clients:
        assert client.get("/crm/products", headers=warm).status_code == 200


def assert_the_window_passes(
    first: TestClient, second: TestClient, make_key: Callable[..., str]
) -> None:
    """Two requests through ``first`` and ``second`` fill a WINDOW; the third waits it out."""
    warm_up(make_key, first, second)
    headers = {"X-API-Key": make_key("products")}
    started = time.monotonic()
    assert first.get("/crm/products", headers=headers).status_code == 200
    counted = time.monotonic()  # the first request was counted before this
    assert second.get("/crm/products", headers=headers).status_code == 200
    refused = first.get("/crm/products", headers=headers)
    assert refused.status_code == 429
    # The first request leaves the window 3 s after it was counted: what is left, rounded up.
    waited = time.monotonic() - started
    assert math.ceil(3.0 - waited) <= int(refused.headers["retry-after"]) <= 3
    sleep_past_window(counted, 3.0)
    assert second.get("/crm/products", headers=headers).status_code == 200


def sleep_past_window(counted: float, window_seconds: float) -> None:
    """Sleep until a request counted before monotonic time ``counted`` has left the window."""
    time.sleep(max(0.0, counted + window_seconds + 0.05 - time.monotonic()))


@pytest.fixture
def ids(client: TestClient, admin_headers: dict[str, str]) -> dict[str, str]:
    """A contact and a product, made through an app of its own (its counters are its own)."""
    return {
        "contact": create_person(client, admin_headers),
        "product": create_product(client, admin_headers),
    }


# --- the limit -------------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=[route.name for route in ROUTES])
def test_the_fourth_request_is_429_in_the_routes_shape_and_runs_nothing(
    route: Route,
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    ids: dict[str, str],
    engine: Engine,
    sessions: sessionmaker[Session],
) -> None:
    limited = make_client(rate_limit="3/minute")
    key = make_key(route.scope, name="busy")
    other = make_key(route.scope, name="other")
    for n in range(3):
        response = send(limited, route, key, ids, n)
        assert response.status_code in (200, 201), response.text

    before = snapshot(engine)
    refused = send(limited, route, key, ids, 3)
    assert_refused(refused, route, 60)
    assert int(refused.headers["retry-after"]) >= 50  # the first request left just now
    assert snapshot(engine) == before  # nothing was written

    record = audit_record(sessions, refused.headers["x-audit-id"])
    assert record.response_status == 429
    assert record.operation == route.operation
    assert record.api_key_name == "busy"
    assert record.failure_reason == "rate limited: more than 3 per 1 minute for this API key"

    # Another key is counted on its own.
    response = send(limited, route, other, ids, 4)
    assert response.status_code in (200, 201), response.text
    # The busy key stays refused.
    assert send(limited, route, key, ids, 5).status_code == 429


def test_the_limit_is_per_key_not_per_route(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    limited = make_client(rate_limit="3/minute")
    headers = {"X-API-Key": make_key("admin")}
    assert limited.get("/crm/products", headers=headers).status_code == 200
    assert limited.get("/admin/people", params={"q": "Ann"}, headers=headers).status_code == 200
    assert limited.get("/admin/audit", headers=headers).status_code == 200
    response = limited.post(
        "/crm/people/match", json={"person_data": person_body()}, headers=headers
    )
    assert response.status_code == 429
    match_shape(response)


def test_requests_refused_for_their_scope_count_too(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    limited = make_client(rate_limit="2/minute")
    headers = {"X-API-Key": make_key("match")}
    assert limited.get("/crm/products", headers=headers).status_code == 403
    assert limited.get("/crm/products", headers=headers).status_code == 403
    assert limited.get("/crm/products", headers=headers).status_code == 429


def test_keyless_and_bad_keys_are_401_not_429(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    limited = make_client(rate_limit="1/minute")
    key = make_key("products")
    assert limited.get("/crm/products", headers={"X-API-Key": key}).status_code == 200
    assert limited.get("/crm/products", headers={"X-API-Key": key}).status_code == 429
    for headers in ({}, {"X-API-Key": key + "x"}, {"X-API-Key": "rcrm_wrong"}):
        for _ in range(3):
            response = limited.get("/crm/products", headers=headers)
            assert response.status_code == 401
            assert "retry-after" not in response.headers


def test_health_metrics_and_readiness_are_not_limited(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    limited = make_client(rate_limit="1/minute")
    key = make_key("admin")
    for _ in range(5):
        for path in ("/healthz", "/readyz", "/metrics"):
            assert limited.get(path, headers={"X-API-Key": key}).status_code == 200
    assert limited.get("/crm/products", headers={"X-API-Key": key}).status_code == 200


def test_the_window_passes(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    limited = make_client(rate_limit=WINDOW)
    assert_the_window_passes(limited, limited, make_key)


def test_a_refused_request_is_not_kept_for_its_idempotency_key(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    ids: dict[str, str],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    limited = make_client(rate_limit=WINDOW)
    warm_up(make_key, limited)
    headers = {"X-API-Key": make_key("people")}
    body = {"people_data": [{"ID": ids["contact"], "city": "Ballarat"}]}
    counted = []
    for city in ("Bendigo", "Geelong"):
        other = {"people_data": [{"ID": ids["contact"], "city": city}]}
        assert limited.post("/crm/modify", json=other, headers=headers).status_code == 200
        counted.append(time.monotonic())
    retried = {**headers, "Idempotency-Key": "modify-ballarat"}
    assert limited.post("/crm/modify", json=body, headers=retried).status_code == 429
    sleep_past_window(counted[0], 3.0)
    response = limited.post("/crm/modify", json=body, headers=retried)
    assert response.status_code == 200, response.text
    assert response.json()["status"] is True
    person = client.get(f"/admin/people/{ids['contact']}", headers=admin_headers).json()
    assert person["city"] == "Ballarat"


def test_multiple_limits_must_all_hold(
    make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    limited = make_client(rate_limit=f"100/minute;{WINDOW}")
    warm_up(make_key, limited)
    headers = {"X-API-Key": make_key("products")}
    statuses = [limited.get("/crm/products", headers=headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]


@pytest.mark.parametrize("value", ["off", "OFF", "", "none"])
def test_the_limit_can_be_turned_off(
    value: str, make_client: Callable[..., TestClient], make_key: Callable[..., str]
) -> None:
    unlimited = make_client(rate_limit=value)
    assert unlimited.app.state.context.rate_limiter is None  # type: ignore[attr-defined]
    headers = {"X-API-Key": make_key("products")}
    assert all(
        unlimited.get("/crm/products", headers=headers).status_code == 200 for _ in range(20)
    )


def test_settings_are_checked_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("RIDERCRM_RATE_LIMIT", "RIDERCRM_RATE_LIMIT_STORAGE"):
        monkeypatch.delenv(name, raising=False)
    assert parse_limits(Settings().rate_limit) == []  # off unless the operator sets one
    assert Settings().rate_limit_storage == ""
    assert Settings(rate_limit_storage=" memory ").rate_limit_storage == ""
    url = "redis://127.0.0.1:6379/3"
    assert Settings(rate_limit_storage=url).rate_limit_storage == url
    for bad in ({"rate_limit": "lots"}, {"rate_limit": "0/minute"}, {"rate_limit": "5/fortnight"}):
        with pytest.raises(ValidationError):
            Settings(**bad)
    with pytest.raises(ValidationError, match="redis://"):
        Settings(rate_limit_storage="memcached://127.0.0.1:11211")


def test_counting_in_memory_starts_no_thread_and_keeps_only_the_window() -> None:
    limiter = KeyRateLimiter(parse_limits("5/minute;3/second"))
    time.sleep(0.05)  # the storage's constructor starts one short timer; let it end
    threads = threading.active_count()
    results = [limiter.check(key_id) for _ in range(20) for key_id in (1, 2)]
    assert results.count(None) == 6  # three per key, then the per-second limit
    assert threading.active_count() == threads
    storage = limiter._local.storage
    assert isinstance(storage, ratelimit.MovingWindowMemory)
    assert sorted(len(entries) for entries in storage.events.values()) == [3, 3, 3, 3]


# --- Redis: shared counters, and what happens when it is away -------------------------


def redis_url() -> str:
    return os.environ.get(REDIS_ENV) or "redis://127.0.0.1:6379/0"


@pytest.fixture
def shared_storage() -> Iterator[dict[str, str]]:
    """Settings of a Redis-backed limit under a prefix of this test's own, removed after."""
    url = redis_url()
    connection = redis.Redis.from_url(url, socket_connect_timeout=1, socket_timeout=1)
    try:
        connection.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis does not answer at {url} ({type(exc).__name__}); set {REDIS_ENV}")
    prefix = f"ridercrm-test-{uuid.uuid4().hex}"
    yield {"rate_limit_storage": url, "rate_limit_key_prefix": prefix}
    keys = list(connection.scan_iter(match=f"{prefix}:*"))
    if keys:
        connection.delete(*keys)
    connection.close()


def test_redis_counters_are_shared_between_apps(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    shared_storage: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    first = make_client(rate_limit="3/minute", **shared_storage)
    second = make_client(rate_limit="3/minute", **shared_storage)
    headers = {"X-API-Key": make_key("products", name="shared")}
    other = {"X-API-Key": make_key("products", name="other")}
    assert first.get("/crm/products", headers=headers).status_code == 200
    assert second.get("/crm/products", headers=headers).status_code == 200
    assert first.get("/crm/products", headers=headers).status_code == 200
    for client in (second, first):
        refused = client.get("/crm/products", headers=headers)
        assert_refused(refused, ROUTES[4], 60)
        record = audit_record(sessions, refused.headers["x-audit-id"])
        assert record.failure_reason is not None
        assert record.failure_reason.startswith("rate limited")
    assert second.get("/crm/products", headers=other).status_code == 200

    stored = redis.Redis.from_url(shared_storage["rate_limit_storage"])
    assert list(stored.scan_iter(match=f"{shared_storage['rate_limit_key_prefix']}:*"))
    stored.close()


def test_redis_window_passes(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    shared_storage: dict[str, str],
) -> None:
    first = make_client(rate_limit=WINDOW, **shared_storage)
    second = make_client(rate_limit=WINDOW, **shared_storage)
    assert_the_window_passes(first, second, make_key)


class Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def limiter_log() -> Iterator[list[logging.LogRecord]]:
    handler = Records()
    logger = logging.getLogger("ridercrm.ratelimit")
    logger.addHandler(handler)
    yield handler.records
    logger.removeHandler(handler)


def test_unreachable_redis_falls_back_to_counting_in_process_with_a_warning(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    limiter_log: list[logging.LogRecord],
) -> None:
    # Nothing listens on port 1: every connection is refused at once.
    limited = make_client(rate_limit="3/minute", rate_limit_storage="redis://127.0.0.1:1/0")
    headers = {"X-API-Key": make_key("products")}
    statuses = [limited.get("/crm/products", headers=headers).status_code for _ in range(4)]
    assert statuses == [200, 200, 200, 429]  # answered, and still limited: never a 500

    warnings = [record for record in limiter_log if record.levelno == logging.WARNING]
    assert len(warnings) == 1  # once per outage, not once per request
    assert "unavailable" in warnings[0].getMessage()
    assert warnings[0].__dict__["error"] == "ConnectionError"
    assert "127.0.0.1:1" not in warnings[0].getMessage()


@dataclass
class SilentServer:
    """A Redis server that takes connections and never answers; it counts them."""

    url: str
    connections: list[socket.socket]


@pytest.fixture
def silent_server() -> Iterator[SilentServer]:
    with socket.create_server(("127.0.0.1", 0)) as server:
        silent = SilentServer(f"redis://127.0.0.1:{server.getsockname()[1]}/0", [])

        def accept() -> None:
            while True:
                try:
                    connection, _ = server.accept()
                except OSError:
                    return  # closed at the end of the test
                silent.connections.append(connection)

        threading.Thread(target=accept, daemon=True).start()
        yield silent
        for connection in silent.connections:
            connection.close()


def test_a_redis_that_does_not_answer_holds_back_one_request_briefly(
    make_client: Callable[..., TestClient],
    make_key: Callable[..., str],
    limiter_log: list[logging.LogRecord],
    silent_server: SilentServer,
) -> None:
    limited = make_client(rate_limit="3/minute", rate_limit_storage=silent_server.url)
    headers = {"X-API-Key": make_key("products")}
    started = time.monotonic()
    assert limited.get("/crm/products", headers=headers).status_code == 200
    waited = time.monotonic() - started
    assert waited >= ratelimit.REDIS_TIMEOUT_SECONDS  # held back by the timeout, once
    tried = len(silent_server.connections)
    assert tried >= 1
    statuses = [limited.get("/crm/products", headers=headers).status_code for _ in range(3)]
    assert statuses == [200, 200, 429]
    assert len(silent_server.connections) == tried  # Redis not tried again yet
    assert [record.__dict__["error"] for record in limiter_log] == ["TimeoutError"]


def test_the_limiter_goes_back_to_redis_when_it_answers(
    shared_storage: dict[str, str],
    limiter_log: list[logging.LogRecord],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(ratelimit, "REDIS_RETRY_SECONDS", 0.0)
    limiter = KeyRateLimiter(
        parse_limits("2/minute"),
        storage_url=shared_storage["rate_limit_storage"],
        key_prefix=shared_storage["rate_limit_key_prefix"],
    )
    assert limiter._shared is not None
    working = limiter._shared.hit
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> bool:
        calls["n"] += 1
        if calls["n"] == 1:
            raise redis.ConnectionError("down")
        return working(*args, **kwargs)

    monkeypatch.setattr(limiter._shared, "hit", flaky)
    assert limiter.check(7) is None  # Redis failed: counted in memory
    assert limiter.check(7) is None  # Redis again: its first count of this key
    assert limiter.check(7) is None
    refusal = limiter.check(7)
    assert refusal is not None
    assert refusal.limit == "2 per 1 minute"
    assert 1 <= refusal.retry_after <= 60
    messages = [record.getMessage() for record in limiter_log]
    assert len(messages) == 2
    assert "unavailable" in messages[0]
    assert "answers again" in messages[1]
