"""A real webhook receiver on a free loopback port, verifying signatures with standardwebhooks."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from standardwebhooks.webhooks import Webhook, WebhookVerificationError


@dataclass
class Received:
    """One request the receiver got."""

    path: str
    headers: dict[str, str]
    body: bytes
    answered: int

    @property
    def payload(self) -> dict[str, Any]:
        return dict(json.loads(self.body))

    @property
    def type(self) -> str:
        return str(self.payload["type"])

    @property
    def webhook_id(self) -> str:
        return self.headers["webhook-id"]

    def verifies_with(self, secret: str) -> bool:
        try:
            Webhook(secret).verify(self.body, self.headers)
        except WebhookVerificationError:
            return False
        return True


@dataclass
class Receiver:
    """Answers each POST with the next planned answer (default 200) and keeps what it got."""

    url: str = ""
    requests: list[Received] = field(default_factory=list)
    arrivals: list[float] = field(default_factory=list)  # perf_counter() of each request
    plan: deque[tuple[int, dict[str, str]]] = field(default_factory=deque)
    delay: float = 0.0
    # Answers chosen by the body (None: follow the plan), for races between subjects.
    by_body: Callable[[bytes], int | None] | None = None
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, *answers: int | tuple[int, dict[str, str]]) -> None:
        """Plan the next answers: a status, or (status, headers)."""
        for item in answers:
            self.plan.append(item if isinstance(item, tuple) else (item, {}))

    def refuse(self, marker: bytes, times: int = 1, status: int = 500) -> list[bytes]:
        """Answer ``status`` to the first ``times`` requests whose body holds ``marker``
        (others follow the plan); the refused bodies, as they come."""
        refused: list[bytes] = []

        def choose(body: bytes) -> int | None:
            if marker in body and len(refused) < times:
                refused.append(body)
                return status
            return None

        self.by_body = choose
        return refused

    def delivered(self) -> list[Received]:
        """The requests answered 2xx, in the order they arrived."""
        with self.lock:
            return [r for r in self.requests if 200 <= r.answered < 300]

    def types(self) -> list[str]:
        return [r.type for r in self.delivered()]

    def wait_for(self, count: int, timeout: float = 30.0) -> list[Received]:
        """Wait until ``count`` requests were answered 2xx; return them."""
        deadline = time.monotonic() + timeout
        while len(self.delivered()) < count:
            if time.monotonic() > deadline:
                raise AssertionError(f"{len(self.delivered())} of {count} events arrived")
            time.sleep(0.02)
        return self.delivered()


def _handler(receiver: Receiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            if receiver.delay:
                time.sleep(receiver.delay)
            arrived = time.perf_counter()
            with receiver.lock:
                receiver.arrivals.append(arrived)
                chosen = receiver.by_body(body) if receiver.by_body else None
                if chosen is not None:
                    status, headers = chosen, {}
                else:
                    status, headers = receiver.plan.popleft() if receiver.plan else (200, {})
                receiver.requests.append(
                    Received(
                        path=self.path,
                        headers={k.lower(): v for k, v in self.headers.items()},
                        body=body,
                        answered=status,
                    )
                )
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("content-length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def log_message(self, *_args: Any) -> None:
            pass

    return Handler


@contextmanager
def receiving(path: str = "/hook") -> Iterator[Receiver]:
    """Run a receiver on 127.0.0.1 at a free port; yield it with its URL."""
    receiver = Receiver()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(receiver))
    server.daemon_threads = True
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()


def eventually(check: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("condition not met in time")
        time.sleep(0.02)
