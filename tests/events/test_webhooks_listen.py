"""`ridercrm webhooks listen`, the README's receiver: it prints each event it verified as
one JSON line, answers a bad signature 401, and stops after --count events or fails
after --timeout without them."""

from __future__ import annotations

import datetime as dt
import json
import socket
import threading
import time
from typing import Any

import httpx
from standardwebhooks.webhooks import Webhook
from typer.testing import CliRunner, Result

from ridercrm.cli import app
from ridercrm.events.manage import new_secret
from tests.live import free_port

SECRET = new_secret()


def _post(port: int, body: str, secret: str) -> int:
    now = dt.datetime.now(dt.UTC)
    headers = {
        "webhook-id": "msg_test",
        "webhook-timestamp": str(int(now.timestamp())),
        "webhook-signature": Webhook(secret).sign(msg_id="msg_test", timestamp=now, data=body),
        "content-type": "application/json",
    }
    deadline = time.monotonic() + 20
    while True:
        try:
            url = f"http://127.0.0.1:{port}/hooks"
            return httpx.post(url, content=body, headers=headers, timeout=5).status_code
        except httpx.ConnectError:  # not listening yet
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _listen(*args: str) -> tuple[threading.Thread, dict[str, Result]]:
    done: dict[str, Result] = {}

    def run() -> None:
        done["result"] = CliRunner().invoke(app, ["webhooks", "listen", *args])

    thread = threading.Thread(target=run)
    thread.start()
    return thread, done


def test_listen_prints_verified_events_and_refuses_bad_signatures() -> None:
    port = free_port()
    thread, done = _listen("--port", str(port), "--secret", SECRET, "--count", "1")
    event: dict[str, Any] = {"type": "course.status_changed", "data": {"to": "booked"}}
    assert _post(port, json.dumps(event), new_secret()) == 401  # another secret's signature
    assert _post(port, json.dumps(event), SECRET) == 204
    thread.join(timeout=20)
    result = done["result"]
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [(line["verified"], line["event"]) for line in lines] == [(False, event), (True, event)]


def test_listen_fails_when_the_events_do_not_arrive_in_time() -> None:
    thread, done = _listen("--port", str(free_port()), "--count", "1", "--timeout", "0.5")
    thread.join(timeout=20)
    assert done["result"].exit_code == 1
    assert "0 of 1 event(s) arrived in 0.5 s" in done["result"].output


def test_listen_answers_a_bad_length_and_outlives_a_stalled_client() -> None:
    port = free_port()
    thread, done = _listen("--port", str(port), "--secret", SECRET, "--count", "1")
    event: dict[str, Any] = {"type": "course.status_changed", "data": {"to": "booked"}}
    _post(port, "{}", new_secret())  # listening now
    stalled = socket.create_connection(("127.0.0.1", port))
    try:
        # Headers promising a body that never comes: the receiver must not wait for ever.
        stalled.sendall(b"POST /hooks HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
        for length in ("-1", "abc"):
            with socket.create_connection(("127.0.0.1", port), timeout=15) as bad:
                bad.sendall(
                    f"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: {length}\r\n\r\n".encode()
                )
                assert bad.recv(100).startswith(b"HTTP/1.0 400"), length
        assert _post(port, json.dumps(event), SECRET) == 204
        thread.join(timeout=20)
    finally:
        stalled.close()
        thread.join(timeout=20)
    assert done["result"].exit_code == 0
