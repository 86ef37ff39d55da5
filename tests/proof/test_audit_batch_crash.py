"""Group-committed audit records survive SIGKILL (README "Guarantees").

The records of reads and refusals are committed many to a transaction
(ridercrm.web.audit_batch), and a request is answered only once its batch is committed.
So a SIGKILL in the middle of many concurrent reads, refusals and writes loses no record
of an answered request: after the kill every ``X-Audit-Id`` a client received names a
stored record with the status the client saw. The kill lands while batches are being
written: eight clients never pause.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from testkit.factories import person_body
from testkit.serve import free_port, ridercrm_command, run_cli, tail

from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope

pytestmark = pytest.mark.crash

CLIENTS = 8
ANSWERS_BEFORE_KILL = 150
LOAD_DEADLINE_S = 120.0


def _serve(env: dict[str, str], port: int, log: Path) -> subprocess.Popen[bytes]:
    child = subprocess.Popen(
        [ridercrm_command(), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        cwd=log.parent,  # a first start writes its credentials files where it runs
    )
    deadline = time.monotonic() + 60
    while True:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return child
        except httpx.TransportError:
            pass
        if child.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"serve did not start (exit code {child.poll()}):\n{tail(log)}")
        time.sleep(0.1)


def _load(
    base: str, n: int, key: str, stop: threading.Event, answered: list[tuple[str, int]]
) -> None:
    """Reads, refusals (wrong scope, bad key, unknown path) and a few writes, until the
    server goes away; every answer's audit id and status."""
    good = {"Authorization": f"Bearer {key}"}
    requests = [
        ("GET", "/crm/products", good, None),
        ("GET", "/admin/audit", good, None),  # 403: the key lacks the admin scope
        ("GET", "/crm/products", {"Authorization": "Bearer rcrm_not-a-key"}, None),  # 401
        ("GET", "/crm/nowhere", good, None),  # 404
        ("POST", "/admin/contacts", good, person_body(first_name=f"W{n}")),  # 403
    ]
    with httpx.Client(base_url=base, timeout=10) as http:
        i = n
        while not stop.is_set():
            method, path, headers, body = requests[i % len(requests)]
            i += 1
            try:
                response = http.request(method, path, headers=headers, json=body)
            except httpx.TransportError:
                return  # killed
            audit_id = response.headers.get("x-audit-id")
            if audit_id:
                answered.append((audit_id, response.status_code))


def test_no_answered_request_loses_its_audit_record_at_a_sigkill(
    db_url: str, tmp_path: Path
) -> None:
    env = {**os.environ, "RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_LOG_LEVEL": "WARNING"}
    key = run_cli(["keys", "create", "--name", "reader", "--scope", "products"], env, timeout=60)
    key = key.strip().splitlines()[-1]
    server = _serve(env, free_port(), tmp_path / "serve.log")
    base = f"http://127.0.0.1:{server.args[-1]}"
    stop = threading.Event()
    answered: list[tuple[str, int]] = []
    clients = [
        threading.Thread(target=_load, args=(base, n, key, stop, answered)) for n in range(CLIENTS)
    ]
    try:
        for thread in clients:
            thread.start()
        # Enough answers to prove something, however busy the machine (bounded wait).
        deadline = time.monotonic() + LOAD_DEADLINE_S
        while len(answered) < ANSWERS_BEFORE_KILL and time.monotonic() < deadline:
            time.sleep(0.05)
        server.send_signal(signal.SIGKILL)  # mid-load: the clients never pause
        server.wait()
    finally:
        stop.set()
        for thread in clients:
            thread.join(timeout=30)
        if server.poll() is None:
            server.kill()
            server.wait()

    assert len(answered) >= ANSWERS_BEFORE_KILL, "the load made too few requests to prove anything"
    assert {status for _, status in answered} >= {200, 401, 403, 404}
    engine = build_engine(Settings(database_url=db_url))
    try:
        with session_scope(session_factory(engine)) as session:
            rows = session.execute(select(AuditRecord.id, AuditRecord.response_status))
            stored = {row.id: row.response_status for row in rows}
    finally:
        engine.dispose()
    missing = [audit_id for audit_id, _ in answered if audit_id not in stored]
    assert not missing, f"{len(missing)} answered requests have no audit record: {missing[:5]}"
    assert all(stored[audit_id] == status for audit_id, status in answered)
