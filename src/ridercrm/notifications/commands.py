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
    deliverer = Deliverer(settings)
    sender = MessageSender(settings)
    if metrics_port is not None:
        from prometheus_client import start_http_server

        from ridercrm.events.metrics import WebhookMetrics, registry_with
        from ridercrm.notifications.metrics import MessageMetrics

        found = registry_with(WebhookMetrics(deliverer.sessions), MessageMetrics(sender.sessions))
        start_http_server(metrics_port, addr="127.0.0.1", registry=found)
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


messages_app = typer.Typer(
    help="Messages to riders (e-mail, SMS): the outbox.", no_args_is_help=True
)


@messages_app.command("list")
def messages_list(
    person: Annotated[
        str | None, typer.Option(help="Only this person's (contact or lead id).")
    ] = None,
    status: Annotated[
        str | None,
        typer.Option(help="Only pending, sending, sent, failed, skipped or unsent."),
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 50,
) -> None:
    """List messages as JSON lines: kind, channel, status, due and sent times (UTC), reason."""
    import json

    from ridercrm.db import session_factory, session_scope
    from ridercrm.notifications import service
    from ridercrm.notifications.models import STATUSES
    from ridercrm.people import service as people

    errors = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)
    if status is not None and status not in STATUSES:
        errors.print(f"error: --status must be one of {', '.join(STATUSES)}")
        raise typer.Exit(2)
    settings = Settings()
    engine = open_database(settings, may_create=False)
    try:
        with session_scope(session_factory(engine)) as session:
            if person is not None:
                found = people.resolve(session, person)
                if found is None:
                    errors.print(f"error: no contact or lead with id {person}")
                    raise typer.Exit(2)
                rows = [
                    m
                    for m in service.messages_of(session, found.id, limit=limit)
                    if status is None or m.status == status
                ]
            else:
                rows = service.find_messages(session, status=status or "", limit=limit)
            for m in rows:
                print(
                    json.dumps(
                        {
                            "id": m.id,
                            "person_id": m.person_id,
                            "course_id": m.asset_id,
                            "kind": m.kind,
                            "channel": m.channel,
                            "status": m.status,
                            "due_at": m.due_at.isoformat(),
                            "sent_at": m.sent_at.isoformat() if m.sent_at else None,
                            "recipient": m.recipient,
                            "subject": m.subject,
                            "reason": m.reason,
                        }
                    ),
                    flush=True,
                )
    finally:
        engine.dispose()


@messages_app.command("send-test")
def messages_send_test(
    to: Annotated[str, typer.Option(help="The address to send the test e-mail to.")],
) -> None:
    """Send a sample booking confirmation (with its invitation) through RIDERCRM_SMTP_URL,
    to check the SMTP settings; nothing is stored."""
    from ridercrm.notifications import compose, templates
    from ridercrm.notifications.models import CONFIRMATION, EMAIL, Message
    from ridercrm.notifications.sender import Job, send_email
    from ridercrm.notifications.service import new_key

    errors = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)
    settings = Settings()
    if not settings.smtp_url:
        errors.print(
            "error: RIDERCRM_SMTP_URL is not set (e.g. smtp://user:pass@host:587?starttls=true)"
        )
        raise typer.Exit(1)
    sample = Message(
        key=new_key(),
        kind=CONFIRMATION,
        channel=EMAIL,
        asset_id="test",
        location="somerton",
        course_datetime="2026-12-05 08:30:00",
        course_date_end="2026-12-05 16:30:00",
        booking_number="TEST-1",
        sequence=0,
    )
    rendered = templates.render(
        templates.DEFAULTS[(CONFIRMATION, EMAIL)], compose.sample_context(settings)
    )
    mail = compose.build_email(sample, rendered, settings, to=to)
    outcome = send_email(settings, Job(0, 1, EMAIL, to, rendered, mail=mail))
    if not outcome.sent:
        errors.print(f"error: not sent: {outcome.reason}")
        raise typer.Exit(1)
    console.print(f"sent a test e-mail to {to} (Message-ID {outcome.provider_id})")
