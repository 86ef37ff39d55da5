"""The deliverer process: webhooks and messages side by side (`ridercrm deliver`, and the
deliverer threads of `ridercrm serve`)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from typing import Annotated

import typer
from rich.console import Console

from ridercrm.config import Settings
from ridercrm.events import commands as webhook_commands
from ridercrm.events.delivery import Deliverer
from ridercrm.notifications.sender import MessageSender
from ridercrm.startup import open_database

console = Console(markup=False, highlight=False, soft_wrap=True)


def start_deliverer(settings: Settings) -> Callable[[], None]:
    """Run the webhook deliverer and the message sender in background threads of this
    process; return what stops both."""
    stop_webhooks = webhook_commands.start_deliverer(settings)
    sender = MessageSender(settings)
    stop = threading.Event()
    thread = threading.Thread(
        target=sender.run, args=(stop,), name="ridercrm-messages", daemon=True
    )
    thread.start()

    def stop_both() -> None:
        stop.set()
        thread.join(timeout=settings.notify_timeout_seconds + 5)
        stop_webhooks()

    return stop_both


def deliver_command(
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port (127.0.0.1).")
    ] = None,
) -> None:
    """Deliver webhooks and send messages (e-mail, SMS) until stopped (SIGINT or SIGTERM);
    run as many as you like."""
    from ridercrm.logs import configure_logging

    settings = Settings()
    configure_logging(settings.log_level, as_json=settings.log_json)
    open_database(settings, may_create=False).dispose()  # says which; refuses a missing one
    if metrics_port is not None:
        from prometheus_client import start_http_server

        start_http_server(metrics_port, addr="127.0.0.1")
    deliverer = Deliverer(settings)
    sender = MessageSender(settings)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    messages = threading.Thread(
        target=sender.run, args=(stop,), name="ridercrm-messages", daemon=True
    )
    messages.start()
    console.print("delivering webhooks and messages; stop with Ctrl-C")
    try:
        deliverer.run(stop)
    finally:
        stop.set()
        messages.join(timeout=settings.notify_timeout_seconds + 5)
        deliverer.close()
