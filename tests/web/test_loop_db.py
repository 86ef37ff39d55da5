"""PostgreSQL's light reads and reads' audit records run on the event loop (web.loop_db):
no worker thread, a lost connection replaced, the connections closed at shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, make_url, text

from ridercrm import db
from ridercrm.app import create_app
from ridercrm.audit.call import Call
from ridercrm.audit.service import Finished
from ridercrm.config import Settings
from ridercrm.products import service as products
from ridercrm.web.audit_batch import AuditBatcher
from ridercrm.web.loop_db import LoopConnections
from tests.live import free_port

pytestmark = pytest.mark.postgresql

ON_POSTGRESQL = [pytest.param("postgresql", marks=pytest.mark.postgresql)]


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """What each product list's read saw: whether it ran on an event loop, in which thread,
    on which connection (the read itself is the service's own)."""
    seen: list[dict[str, Any]] = []
    listed = products.listed_products

    def watched(reads: Any) -> Any:
        try:
            asyncio.get_running_loop()
            on_loop = True
        except RuntimeError:
            on_loop = False
        seen.append(
            {"on_loop": on_loop, "thread": threading.get_ident(), "connection": reads.connection}
        )
        return listed(reads)

    monkeypatch.setattr(products, "listed_products", watched)
    return seen


@contextmanager
def product_client(
    settings: Settings, make_key: Callable[..., str]
) -> Iterator[tuple[TestClient, dict[str, str]]]:
    """A client of the app (started and shut down) and a products key's headers."""
    app = create_app(settings)
    try:
        with TestClient(app) as client:
            yield client, {"Authorization": f"Bearer {make_key('products')}"}
    finally:
        app.state.context.engine.dispose()


@pytest.mark.parametrize("db_url", ON_POSTGRESQL, indirect=True)
def test_a_product_read_runs_on_the_event_loop_and_is_audited(
    settings: Settings, make_key: Callable[..., str], seen: list[dict[str, Any]]
) -> None:
    with product_client(settings, make_key) as (client, headers):
        answers = [client.get("/crm/products", headers=headers) for _ in range(3)]
        audit_ids = [answer.headers["x-audit-id"] for answer in answers]
        refused = client.get("/crm/products", headers={"Authorization": "Bearer rcrm_nope"})
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert refused.status_code == 401
    assert [read["on_loop"] for read in seen] == [True, True, True]
    # One connection served the three reads in turn: kept idle between them, not reopened.
    assert len({id(read["connection"]) for read in seen}) == 1
    # Every answered read's record, and the refusal's, is stored (the group commit on the loop).
    engine = create_engine(settings.database_url)
    with engine.connect() as connection:
        stored = connection.execute(
            text("SELECT id, response_status FROM audit_records WHERE operation = 'crm.products'")
        ).all()
    engine.dispose()
    assert {row.id for row in stored} >= set(audit_ids)
    assert sorted(row.response_status for row in stored) == [200, 200, 200, 401]


@pytest.mark.parametrize("db_url", ON_POSTGRESQL, indirect=True)
def test_a_connection_lost_while_idle_is_replaced_before_it_serves(
    settings: Settings,
    make_key: Callable[..., str],
    seen: list[dict[str, Any]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(db, "PING_AFTER_IDLE_SECONDS", 0.1)
    with product_client(settings, make_key) as (client, headers):
        assert client.get("/crm/products", headers=headers).status_code == 200
        lost = seen[-1]["connection"]
        other = create_engine(settings.database_url)
        with other.connect() as connection:
            connection.execute(
                text("SELECT pg_terminate_backend(:pid)"), {"pid": lost.info.backend_pid}
            )
        other.dispose()
        time.sleep(0.3)  # idle past the (shortened) ping interval
        again = client.get("/crm/products", headers=headers)
        assert again.status_code == 200, again.text
        assert seen[-1]["connection"] is not lost


@pytest.mark.parametrize("db_url", ON_POSTGRESQL, indirect=True)
def test_the_apps_loop_connections_are_closed_at_shutdown(
    settings: Settings, make_key: Callable[..., str], seen: list[dict[str, Any]]
) -> None:
    with product_client(settings, make_key) as (client, headers):
        assert client.get("/crm/products", headers=headers).status_code == 200
        assert not seen[-1]["connection"].closed
    assert seen[-1]["connection"].closed


@pytest.mark.parametrize("db_url", ON_POSTGRESQL, indirect=True)
def test_records_with_no_connection_to_be_had_fail_at_once_with_one_attempt(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The server is out of reach: a batch's requests all fail after one attempt to
    connect (as the writer thread's do), not one attempt more for each record, each of
    which could wait out a connection timeout."""
    unreachable = make_url(settings.database_url).set(host="127.0.0.1", port=free_port())
    engine = create_engine(unreachable)
    batcher = AuditBatcher(
        engine, redact=False, max_batch=10, loop_connections=LoopConnections(engine, 10)
    )
    attempts: list[int] = []
    connect = psycopg.AsyncConnection.connect

    async def counted(*args: Any, **kwargs: Any) -> Any:
        attempts.append(1)
        return await connect(*args, **kwargs)

    monkeypatch.setattr(psycopg.AsyncConnection, "connect", counted)

    async def three() -> list[str]:
        async def one(index: int) -> str:
            call = Call(method="GET", path=f"/r{index}")
            try:
                await batcher.write(Finished(call, 200, b"[]", 1))
            except psycopg.OperationalError:
                return "refused"
            return "stored"

        return list(await asyncio.wait_for(asyncio.gather(*map(one, range(3))), timeout=60))

    # A thread of its own: this worker's main thread may hold a running loop that another
    # test left (Playwright's sync API keeps one), where asyncio.run refuses to start.
    with ThreadPoolExecutor(max_workers=1) as pool:
        outcomes = pool.submit(asyncio.run, three()).result()
    assert outcomes == ["refused", "refused", "refused"]
    assert len(attempts) == 1
    engine.dispose()
