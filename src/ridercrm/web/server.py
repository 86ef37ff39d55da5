"""`ridercrm serve`'s HTTP server: uvicorn with h11, bounded headers and read timeouts.

uvicorn's default parser (httptools) puts no limit on a request's header block, and
uvicorn has no timeout for receiving headers or a body: a client could hold a
connection, and memory equal to what it sent, for as long as it liked. Here requests
are parsed by h11, whose receive buffer is bounded (``h11_max_incomplete_event_size``,
from RIDERCRM_MAX_HEADER_BYTES), and ``GuardedH11Protocol`` adds what h11 and uvicorn
lack: a most number of headers, a deadline for the header block (from the connection's
or request's first byte) and one for the body (from the end of the headers). A request
over a limit gets 431 or 408 and the connection is closed. docs/decisions.md, Serving.
"""

from __future__ import annotations

import asyncio
import functools
import socket
import sys
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.supervisors import Multiprocess

from ridercrm.config import Settings

STARTUP_FAILURE = 3  # uvicorn's exit code when the app did not start


@functools.cache
def _limits() -> Settings:
    # Read in each worker process from the same RIDERCRM_* environment as `serve`.
    return Settings()


def _plain_response(status: int, reason: str, text: str) -> bytes:
    body = text.encode("ascii")
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: text/plain; charset=utf-8\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header count limit and header and body deadlines."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = _limits()
        self.max_headers = settings.max_headers
        self.header_timeout = settings.header_timeout_seconds
        self.body_timeout = settings.body_timeout_seconds
        self._deadline: asyncio.TimerHandle | None = None
        self._refusal: tuple[int, str, str] | None = None
        parse = self.conn.next_event

        # uvicorn handles every event inside one loop; watching them where h11 hands
        # them out sees the end of the headers and of the body without copying that loop.
        def next_event() -> Any:
            try:
                event = parse()
            except h11.RemoteProtocolError as exc:
                if exc.error_status_hint == 431:  # h11: the header block is over the limit
                    self._refusal = (431, "Request Header Fields Too Large", "header too large")
                raise
            if isinstance(event, h11.Request):
                self._headers_received(event)
            elif isinstance(event, h11.EndOfMessage | h11.ConnectionClosed):
                self._disarm()
            return event

        self.conn.next_event = next_event  # type: ignore[method-assign]

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm(self.header_timeout)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        # The first byte of the next request on a kept-alive connection starts its clock.
        if self._deadline is None and self.conn.their_state is h11.IDLE:
            self._arm(self.header_timeout)
        super().data_received(data)

    def _headers_received(self, event: h11.Request) -> None:
        self._disarm()
        if len(event.headers) > self.max_headers:
            self._refusal = (431, "Request Header Fields Too Large", "too many header fields")
            raise h11.RemoteProtocolError("too many header fields", error_status_hint=431)
        self._arm(self.body_timeout)

    def send_400_response(self, msg: str) -> None:
        if self._refusal is None:
            super().send_400_response(msg)
            return
        status, reason, text = self._refusal
        self.logger.warning("request refused: %s", text)
        self.transport.write(_plain_response(status, reason, text))
        self.transport.close()

    def _arm(self, seconds: float) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        """The headers or the body did not arrive in time: 408 if nothing was answered yet."""
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or not self.cycle.response_started:
            self.transport.write(_plain_response(408, "Request Timeout", "request timeout"))
        # The app, if it is waiting for the body, is told the client went away.
        self.transport.close()


def bind(host: str, port: int, backlog: int) -> socket.socket:
    """Listen on host:port, or raise OSError saying why not (e.g. the port is taken)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sock.listen(backlog)
    except OSError:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def server_config(settings: Settings, *, host: str, port: int, workers: int) -> uvicorn.Config:
    """The uvicorn configuration `ridercrm serve` runs with."""
    return uvicorn.Config(
        "ridercrm.app:served_app",
        factory=True,
        host=host,
        port=port,
        workers=workers,
        http=GuardedH11Protocol,
        h11_max_incomplete_event_size=settings.max_header_bytes,
        # uvicorn's access log would print every request line, query strings included.
        log_level="warning",
        access_log=False,
        # A new worker process must answer the supervisor's ping within this; uvicorn's
        # 5 s was too short for spawning and importing on a busy machine (workers were
        # killed and restarted in a loop at load average 20 on 2 CPUs).
        timeout_worker_healthcheck=30,
    )


def run(config: uvicorn.Config, sock: socket.socket) -> None:
    """Serve on the bound socket until stopped (as uvicorn.run does, with our socket)."""
    server = uvicorn.Server(config)
    try:
        if config.workers > 1:
            Multiprocess(config, sockets=[sock]).run()
        else:
            config.load_app()
            server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    if config.workers == 1 and not server.started:
        sys.exit(STARTUP_FAILURE)
