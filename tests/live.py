"""A real uvicorn server on a free loopback port, for tests that need real concurrency."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from testkit.serve import free_port

from ridercrm.app import create_app
from ridercrm.config import Settings

__all__ = ["free_port", "live_server"]


@contextmanager
def live_server(settings: Settings, *, http: str = "auto") -> Iterator[str]:
    """Serve the app in a background thread; yield its base URL; stop it afterwards.

    ``http="h11"``: the HTTP implementation `ridercrm serve` uses, which refuses to send a
    header value the protocol does not allow."""
    app = create_app(settings)
    port = free_port()
    # Idle connections are kept for the whole test: with uvicorn's 5 s, a loaded machine
    # let a pooled connection idle past it, and the server closed it just as the client
    # sent a request on it (ECONNRESET in tests/events/test_ordering.py, 2026-11-28).
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        access_log=False,
        http=http,
        timeout_keep_alive=300,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("test server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        app.state.context.engine.dispose()
