"""The webhook counters on /metrics count every deliverer's work, whichever process or
host delivers: `ridercrm serve --workers 2` delivering in its parent process, or a
separate `ridercrm deliver`. Every worker's scrape shows the same totals, and a purge
of the delivered events takes nothing from them."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body
from testkit.receiver import Receiver
from testkit.serve import free_port, ridercrm_command, tail

from ridercrm.events.purge import Purged, purge
from tests.events.conftest import register

METRIC = re.compile(r"^(ridercrm_webhook_\w+?)(?:\{\w+=\"(\w+)\"\})? (\S+)$", re.M)


def webhook_metrics(text: str) -> dict[str, float]:
    """The webhook samples of a scrape: "name" or "name/label" -> value."""
    found = {
        f"{name}/{label}" if label else name: float(value)
        for name, label, value in METRIC.findall(text)
    }
    assert "ridercrm_webhook_queue_depth" in found, text
    return found


def expected(*, delivered: int, retry: int = 0, failed: int = 0) -> dict[str, float]:
    return {
        "ridercrm_webhook_deliveries_total/delivered": delivered,
        "ridercrm_webhook_deliveries_total/retry": retry,
        "ridercrm_webhook_deliveries_total/failed": failed,
        "ridercrm_webhook_endpoints_disabled_total/gone": 0,
        "ridercrm_webhook_endpoints_disabled_total/exhausted": 0,
        "ridercrm_webhook_queue_depth": 0,
        "ridercrm_webhook_oldest_undelivered_seconds": 0,
    }


def environment(db_url: str, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "RIDERCRM_DATABASE_URL": db_url,
        "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1",
        "RIDERCRM_WEBHOOK_RETRY_SCHEDULE": "0,0,0",
        "RIDERCRM_WEBHOOK_POLL_SECONDS": "0.05",
        "RIDERCRM_LOG_LEVEL": "WARNING",
        **extra,
    }
    env.pop("PROMETHEUS_MULTIPROC_DIR", None)
    return env


@contextmanager
def process(args: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        child = subprocess.Popen(
            [ridercrm_command(), *args],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=log.parent,  # where a first start writes the console admin's sign-in
        )
    try:
        yield child
    finally:
        child.terminate()
        child.wait(timeout=30)


def wait_until_up(url: str, child: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 180  # a loaded machine starts two workers slowly
    while True:
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert child.poll() is None, tail(log)
        assert time.monotonic() < deadline, tail(log)
        time.sleep(0.1)


def create_contacts(base: str, headers: dict[str, str], count: int) -> None:
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
        for n in range(count):
            made = http.post("/admin/contacts", json=person_body(first_name=f"W{n}"))
            assert made.status_code == 201, made.text


def scrape(base: str, headers: dict[str, str]) -> dict[str, float]:
    """One /metrics scrape on a new connection, then an audited request on the same
    connection (so the worker that answered the scrape counts a request)."""
    with httpx.Client(base_url=base, headers=headers, timeout=10) as http:
        found = webhook_metrics(http.get("/metrics").text)
        assert http.get("/admin/webhooks").status_code == 200
    return found


def workers_that_answered(prom_dir: Path, scratch: Path) -> set[str]:
    """The pids whose own metrics files count answered requests."""
    answered = set()
    for path in prom_dir.glob("counter_*.db"):
        pid = path.stem.rsplit("_", 1)[-1]
        alone = scratch / pid
        alone.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, alone / path.name)
        registry = CollectorRegistry()
        MultiProcessCollector(registry, str(alone))
        if any(
            sample.value
            for family in registry.collect()
            if family.name == "ridercrm_requests"
            for sample in family.samples
        ):
            answered.add(pid)
    return answered


def settled(
    read: Callable[[], dict[str, float]], want: dict[str, float], timeout: float = 60.0
) -> None:
    """Wait until a scrape shows ``want`` (the last outcomes are stored just after the
    receiver answers)."""
    deadline = time.monotonic() + timeout
    while (got := read()) != want:
        assert time.monotonic() < deadline, got
        time.sleep(0.1)


def every_worker_shows(
    base: str,
    headers: dict[str, str],
    want: dict[str, float] | Callable[[dict[str, float]], bool],
    prom_dir: Path,
    scratch: Path,
) -> None:
    """Scrape until both workers answered (at least 6 scrapes): each shows ``want``."""
    for scrapes in range(1, 61):
        got = scrape(base, headers)
        assert want(got) if callable(want) else got == want, got
        if scrapes >= 6 and len(workers_that_answered(prom_dir, scratch)) >= 2:
            return
    raise AssertionError("60 scrapes, all answered by one worker")


def test_serve_with_two_workers_shows_its_deliverers_counts_on_every_worker(
    db_url: str,
    tmp_path: Path,
    receiver: Receiver,
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    prom_dir = tmp_path / "prom"
    prom_dir.mkdir()
    env = environment(db_url)
    headers = admin_headers
    register(client, admin_headers, receiver.url, "person.created")
    receiver.answer(503, 503)  # two failed attempts: two retries
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    serve_env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(prom_dir)}
    log = tmp_path / "serve.log"
    with process(serve, serve_env, log) as server:  # its deliverer runs in the parent
        wait_until_up(f"{base}/healthz", server, log)
        create_contacts(base, headers, 5)
        receiver.wait_for(5)
        want = expected(delivered=5, retry=2)
        settled(lambda: scrape(base, headers), want)
        every_worker_shows(base, headers, want, prom_dir, tmp_path / "scratch")
        # The purge deletes the delivered events and their log, not the totals.
        assert purge(sessions, retention_days=0) == Purged(events=5, deliveries=5)
        for _ in range(4):
            assert scrape(base, headers) == want
    assert len(receiver.delivered()) == 5


def test_the_queue_and_a_separate_deliverers_counts_show_on_every_worker_and_its_port(
    db_url: str,
    tmp_path: Path,
    receiver: Receiver,
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    prom_dir = tmp_path / "prom"
    prom_dir.mkdir()
    env = environment(db_url)
    headers = admin_headers
    register(client, admin_headers, receiver.url, "person.created")
    port, metrics_port = free_port(), free_port()
    base = f"http://127.0.0.1:{port}"
    serve = ["serve", "--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    serve_env = {**env, "PROMETHEUS_MULTIPROC_DIR": str(prom_dir)}
    serve_env["RIDERCRM_WEBHOOK_DELIVERER"] = "false"  # only the separate one delivers
    serve_log, deliver_log = tmp_path / "serve.log", tmp_path / "deliver.log"
    scratch = tmp_path / "scratch"
    with process(serve, serve_env, serve_log) as server:
        wait_until_up(f"{base}/healthz", server, serve_log)
        create_contacts(base, headers, 4)

        def waiting(got: dict[str, float]) -> bool:  # nothing delivers yet: the queue stays
            rest = dict(got)
            oldest = rest.pop("ridercrm_webhook_oldest_undelivered_seconds")
            queued = {**expected(delivered=0), "ridercrm_webhook_queue_depth": 4}
            del queued["ridercrm_webhook_oldest_undelivered_seconds"]
            return oldest > 0 and rest == queued

        every_worker_shows(base, headers, waiting, prom_dir, scratch)
        with process(["deliver", "--metrics-port", str(metrics_port)], env, deliver_log) as other:
            own = f"http://127.0.0.1:{metrics_port}/metrics"
            wait_until_up(own, other, deliver_log)
            receiver.wait_for(4)
            want = expected(delivered=4)
            settled(lambda: scrape(base, headers), want)
            every_worker_shows(base, headers, want, prom_dir, scratch)
            assert webhook_metrics(httpx.get(own, timeout=10).text) == want
