"""A deadline for a whole webhook attempt, not for each network operation.

httpx's timeout bounds each connect, write and read: a receiver that sends its answer a
byte at a time, each byte within the timeout, would hold a delivery slot for as long as
it liked (and ``ridercrm serve``'s shutdown, which waits for the requests under way).
The deliverer's client reads and writes through streams that end every operation at the
deadline of the attempt its thread is making, so RIDERCRM_WEBHOOK_TIMEOUT_SECONDS is the
time a receiver has to answer, connection and TLS included, new or kept-alive.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import httpcore
import httpx

_attempt = threading.local()


@contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Bound every network operation of this thread inside the block to ``seconds`` in all."""
    _attempt.until = time.monotonic() + seconds
    try:
        yield
    finally:
        _attempt.until = None


def _left(timeout: float | None, late: type[Exception]) -> float | None:
    """The operation's timeout, cut to what is left of the attempt (raise ``late`` at 0)."""
    until = getattr(_attempt, "until", None)
    if until is None:
        return timeout
    left = until - time.monotonic()
    if left <= 0:
        raise late("the receiver did not answer within the attempt's time")
    return left if timeout is None else min(timeout, left)


class _Stream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        tls = self._stream.start_tls(
            ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)
        )
        return _Stream(tls)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _Backend(httpcore.NetworkBackend):
    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._backend.connect_tcp(
            host, port, _left(timeout, httpcore.ConnectTimeout), local_address, socket_options
        )
        return _Stream(stream)

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise httpcore.ConnectError("webhooks are sent over TCP only")

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def client(timeout: float) -> httpx.Client:
    """An httpx client (no redirects, no proxies) whose requests honour :func:`deadline`."""
    transport = httpx.HTTPTransport(trust_env=False)
    # httpx builds its httpcore pool without a way to give it a network backend; the pool
    # takes its backend from this attribute when it opens a connection. If a release of
    # httpx moves it, the deliverer refuses to start rather than send without a deadline.
    pool = getattr(transport, "_pool", None)
    if not isinstance(pool, httpcore.ConnectionPool) or not hasattr(pool, "_network_backend"):
        raise RuntimeError("this httpx keeps no httpcore pool where ridercrm expects it")
    pool._network_backend = _Backend(pool._network_backend)
    return httpx.Client(
        transport=transport, timeout=timeout, follow_redirects=False, trust_env=False
    )
