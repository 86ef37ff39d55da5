"""Refused requests cannot fill the disk (issue 10, findings 2 and 5).

The key is checked from the headers before the body is read; a request refused for its
key stores a note of its declared size, not its body; requests refused without a valid
key are bounded per client address (429 without an audit record past the bound); a
client that hangs up mid-body is recorded as 499, not as a server error.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Iterator

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.web.runtime import unread_note
from tests.live import live_server

BOOK = "/crm/people/rider_courses"


def audit_count(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return int(session.scalar(select(func.count()).select_from(AuditRecord)) or 0)


def test_a_request_refused_for_its_key_stores_a_note_not_its_body(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    body = b'{"people_product": [' + b" " * 512 * 1024 + b"]}"
    for headers, status in (
        ({}, 401),
        ({"X-API-Key": "rcrm_" + "A" * 43}, 401),
        ({"X-API-Key": make_key("match")}, 403),
    ):
        response = client.post(
            BOOK, content=body, headers={**headers, "Content-Type": "application/json"}
        )
        assert response.status_code == status
        record = client.get(
            f"/admin/audit/{response.headers['x-audit-id']}", headers=admin_headers
        ).json()
        assert record["request_body"] == unread_note(str(len(body)))
        assert record["content_type"] == "application/json"


def _first_line(sock: socket.socket) -> bytes:
    sock.settimeout(5)
    received = b""
    while b"\r\n" not in received:
        chunk = sock.recv(4096)
        if not chunk:
            break
        received += chunk
    return received.split(b"\r\n", 1)[0]


@pytest.fixture
def live(settings: Settings) -> Iterator[str]:
    with live_server(settings) as base:
        yield base


def _connect(base: str) -> socket.socket:
    host, port = base.removeprefix("http://").split(":")
    return socket.create_connection((host, int(port)), timeout=5)


def test_the_key_is_checked_before_the_body_is_read(live: str) -> None:
    # Headers announcing 1 MiB, and no body: the refusal must not wait for it.
    with _connect(live) as sock:
        sock.sendall(
            b"POST " + BOOK.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
        )
        assert _first_line(sock) == b"HTTP/1.1 401 Unauthorized"


def test_refused_requests_are_bounded_per_address(
    make_client: Callable[..., TestClient],
    sessions: sessionmaker[Session],
    admin_headers: dict[str, str],
) -> None:
    client = make_client(refused_rate_limit="3/minute")
    answers = [
        client.post(BOOK, content=b"{}"),
        client.get("/no/such/path"),
        client.post(BOOK, content=b"{}", headers={"X-API-Key": "rcrm_wrong"}),
    ]
    assert [a.status_code for a in answers] == [401, 404, 401]
    assert all(a.headers.get("x-audit-id") for a in answers)
    stored = audit_count(sessions)
    flood = [client.post(BOOK, content=b"x" * 1000) for _ in range(20)]
    assert {a.status_code for a in flood} == {429}
    assert flood[0].text == "Status update failed."  # operation 1's own shape
    assert "refused requests from this address" in flood[0].headers["x-failure-reason"]
    assert int(flood[0].headers["retry-after"]) >= 1
    assert not any("x-audit-id" in a.headers for a in flood)
    assert audit_count(sessions) == stored, "a flood past the bound stores nothing"
    # A valid key from the same address is not held back.
    ok = client.get("/crm/products", headers=admin_headers)
    assert ok.status_code == 200
    assert ok.headers["x-audit-id"]


def test_the_refused_bound_is_on_by_default() -> None:
    assert Settings(_env_file=None).refused_rate_limit not in ("", "off")  # type: ignore[call-arg]


class _Collected(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _requests_total(base: str, status: str) -> float:
    text = httpx.get(f"{base}/metrics").text
    line = f'ridercrm_requests_total{{operation="crm.rider_courses",status="{status}"}}'
    return sum(float(row.split()[-1]) for row in text.splitlines() if row.startswith(line))


def test_a_client_hanging_up_mid_body_is_499_not_a_server_error(
    live: str, make_key: Callable[..., str], sessions: sessionmaker[Session]
) -> None:
    key = make_key("courses")
    collected = _Collected()
    logger = logging.getLogger("ridercrm")
    logger.addHandler(collected)
    errors_before = _requests_total(live, "500")
    try:
        for _ in range(3):
            with _connect(live) as sock:
                sock.sendall(
                    b"POST "
                    + BOOK.encode()
                    + b" HTTP/1.1\r\nHost: x\r\nX-API-Key: "
                    + key.encode()
                    + b"\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
                )
                time.sleep(0.2)
        deadline = time.monotonic() + 10
        statuses: list[int] = []
        while time.monotonic() < deadline:
            with session_scope(sessions) as session:
                statuses = list(
                    session.scalars(
                        select(AuditRecord.response_status).where(
                            AuditRecord.operation == "crm.rider_courses"
                        )
                    )
                )
            if len(statuses) == 3:
                break
            time.sleep(0.1)
    finally:
        logger.removeHandler(collected)
    assert statuses == [499, 499, 499]
    assert _requests_total(live, "500") == errors_before
    assert _requests_total(live, "499") >= 3
    assert not [r for r in collected.records if r.levelno >= logging.ERROR or r.exc_info]
