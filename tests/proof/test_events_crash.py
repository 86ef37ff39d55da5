"""Events survive SIGKILL, short form: a deliverer killed mid-delivery and the server killed
mid-write, on SQLite and PostgreSQL, with two deliverers (the server's and `ridercrm
deliver`) and a real receiver.

After the kills and restarts, every stored event reached the receiver (none lost), the
receiver got no event that is not stored (none for a write that rolled back with the
kill), every acknowledged write has its event, and each person's events arrived in the
stored order.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import select
from testkit.factories import person_body
from testkit.receiver import Receiver, receiving
from testkit.serve import free_port, ridercrm_command, run_cli, tail

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.events.models import OPEN_STATUSES, Delivery, Event

pytestmark = pytest.mark.crash

PHASE_SECONDS = 3.0
WRITERS = 3


def _env(db_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "RIDERCRM_DATABASE_URL": db_url,
        "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        "RIDERCRM_WEBHOOK_RETRY_SCHEDULE": "0.2,0.2,0.5,1,1,1,1,1,1,1",
        "RIDERCRM_WEBHOOK_LEASE_SECONDS": "2",
        "RIDERCRM_WEBHOOK_POLL_SECONDS": "0.05",
        "RIDERCRM_LOG_LEVEL": "WARNING",
    }


class Processes:
    """`ridercrm serve` and `ridercrm deliver` children that the test can SIGKILL."""

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.children: list[subprocess.Popen[bytes]] = []

    def log_of(self, index: int, command: str) -> Path:
        return self.logs / f"{command}-{index}.log"

    def start(self, *args: str) -> subprocess.Popen[bytes]:
        log = self.log_of(len(self.children), args[0]).open("wb")
        child = subprocess.Popen(
            [ridercrm_command(), *args],
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=self.logs,  # a first start's credentials files go here
        )
        self.children.append(child)
        return child

    def serve(self) -> subprocess.Popen[bytes]:
        child = self.start("serve", "--host", "127.0.0.1", "--port", str(self.port))
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{self.base}/healthz", timeout=1).status_code == 200:
                    return child
            except httpx.TransportError:
                pass
            if child.poll() is not None or time.monotonic() > deadline:
                log = self.log_of(len(self.children) - 1, "serve")
                raise AssertionError(
                    f"serve did not start (exit code {child.poll()}):\n{tail(log)}"
                )
            time.sleep(0.1)

    def stop_all(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGINT)
        for child in self.children:
            try:
                child.wait(timeout=20)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def _kill(child: subprocess.Popen[bytes]) -> None:
    child.send_signal(signal.SIGKILL)
    child.wait()


@pytest.fixture
def slow_receiver() -> Iterator[Receiver]:
    with receiving() as receiver:
        receiver.delay = 0.05  # requests are in flight when a deliverer is killed
        yield receiver


def _write_load(base: str, key: str, stop: threading.Event, acknowledged: list[str]) -> None:
    """Create people and change them until stopped; note every acknowledged id."""
    headers = {"Authorization": f"Bearer {key}"}
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
        n = 0
        while not stop.is_set():
            n += 1
            try:
                created = http.post("/admin/contacts", json=person_body(first_name=f"P{n}"))
                if created.status_code == 201:
                    person = created.json()["id"]
                    acknowledged.append(person)
                    http.post(
                        "/crm/modify",
                        json={"people_data": [{"ID": person, "city": f"C{n}"}]},
                    )
            except httpx.TransportError:
                time.sleep(0.05)  # the server is down (killed); try again once it is back


def test_no_event_lost_or_invented_across_sigkills(
    db_url: str, slow_receiver: Receiver, tmp_path: Path
) -> None:
    env = _env(db_url)
    run_cli(["db", "upgrade"], env, timeout=120)
    key = run_cli(["keys", "create", "--name", "load", "--scope", "admin"], env, timeout=60)
    key = key.strip().splitlines()[-1]
    run_cli(
        [
            "webhooks",
            "add",
            slow_receiver.url,
            "--event",
            "person.created",
            "--event",
            "person.updated",
        ],
        env,
        timeout=60,
    )
    processes = Processes(env, tmp_path)
    acknowledged: list[str] = []
    try:
        server = processes.serve()
        deliverer = processes.start("deliver")
        stop = threading.Event()
        writers = [
            threading.Thread(target=_write_load, args=(processes.base, key, stop, acknowledged))
            for _ in range(WRITERS)
        ]
        for thread in writers:
            thread.start()
        time.sleep(PHASE_SECONDS)
        _kill(deliverer)  # mid-delivery: the receiver is slow and busy
        time.sleep(PHASE_SECONDS)
        _kill(server)  # mid-write: the writers never pause
        processes.serve()
        processes.start("deliver")
        time.sleep(PHASE_SECONDS)
        stop.set()
        for thread in writers:
            thread.join(timeout=30)
        sessions = session_factory(build_engine(Settings(database_url=db_url)))
        deadline = time.monotonic() + 90
        while True:
            with session_scope(sessions) as session:
                open_count = len(
                    session.scalars(
                        select(Delivery.id).where(Delivery.status.in_(OPEN_STATUSES))
                    ).all()
                )
            if open_count == 0:
                break
            assert time.monotonic() < deadline, f"{open_count} deliveries still open"
            time.sleep(0.2)
    finally:
        processes.stop_all()

    with session_scope(sessions) as session:
        stored = {
            row.id: row for row in session.execute(select(Event.id, Event.type, Event.subject))
        }
        order = session.execute(
            select(Delivery.subject, Delivery.event_id).order_by(Delivery.id)
        ).all()
        statuses = set(session.scalars(select(Delivery.status)))
    received = {r.webhook_id for r in slow_receiver.delivered()}
    assert statuses == {"delivered"}
    assert len(acknowledged) > 20, "the load made too few writes to prove anything"
    assert set(stored) <= received, "stored events were never delivered"
    assert received <= set(stored), "an event was delivered for a write that is not stored"
    created = {
        s.removeprefix("person:")
        for s in (e.subject for e in stored.values() if e.type == "person.created")
    }
    assert set(acknowledged) <= created, "an acknowledged write has no event"
    # Each person's events arrived (first arrival) in the stored order.
    first_seen: dict[str, int] = {}
    for index, request in enumerate(slow_receiver.delivered()):
        first_seen.setdefault(request.webhook_id, index)
    by_subject: dict[str, list[str]] = {}
    for subject, event_id in order:
        by_subject.setdefault(subject, []).append(event_id)
    for subject, events in by_subject.items():
        assert sorted(events, key=first_seen.__getitem__) == events, subject
