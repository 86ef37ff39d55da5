"""The `ridercrm webhooks ...` and `ridercrm deliver` commands."""

from __future__ import annotations

import datetime as dt
import json
import math
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Annotated, Any

import typer
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker
from standardwebhooks.webhooks import Webhook, WebhookVerificationError

from ridercrm.config import Settings
from ridercrm.db import session_factory, session_scope
from ridercrm.events import manage
from ridercrm.events.delivery import Deliverer
from ridercrm.events.purge import purge
from ridercrm.events.service import KNOWN_TYPES
from ridercrm.netsafety import AllowList, UnsafeUrl
from ridercrm.startup import open_database

webhooks_app = typer.Typer(help="Webhook endpoints that receive events.", no_args_is_help=True)
# No Rich markup: URLs and descriptions are printed as written.
console = Console(markup=False, highlight=False, soft_wrap=True)
errors = Console(stderr=True, markup=False, highlight=False, soft_wrap=True)

EndpointId = Annotated[str, typer.Argument(help="The endpoint's id (ep_...).")]


def _sessions(settings: Settings) -> sessionmaker[Session]:
    """Sessions on the configured database; a missing one is refused, never created."""
    return session_factory(open_database(settings, may_create=False))


@contextmanager
def _work(settings: Settings, *, write: bool = False) -> Iterator[Session]:
    """A unit of work; a refused request exits 2 with its reason."""
    try:
        with session_scope(_sessions(settings), write=write) as session:
            yield session
    except manage.NoSuchEndpoint as exc:
        errors.print(f"error: no webhook endpoint {exc.endpoint_id}")
        raise typer.Exit(2) from None
    except (UnsafeUrl, manage.EndpointProblem) as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None


@webhooks_app.command("add")
def webhooks_add(
    url: Annotated[str, typer.Argument(help="Where to POST events (http:// or https://).")],
    event: Annotated[
        list[str],
        typer.Option(
            "--event", help=f"Event type to send; repeat for several: {', '.join(KNOWN_TYPES)}."
        ),
    ],
    description: Annotated[str, typer.Option(help="What the endpoint is for.")] = "",
) -> None:
    """Register an endpoint. Its signing secret is printed once, alone on the last line."""
    settings = Settings()
    allow = AllowList.parse(settings.webhook_allowed_hosts)
    checked = manage.check_url(url, allow)  # DNS before the write transaction
    with _work(settings, write=True) as session:
        endpoint, secret = manage.create_endpoint(
            session,
            url=url,
            event_types=event,
            description=description,
            allow=allow,
            checked=checked,
        )
        console.print(
            f"created webhook endpoint {endpoint.id} for {', '.join(endpoint.event_types)}"
        )
    print(secret, flush=True)


@webhooks_app.command("list")
def webhooks_list() -> None:
    """List endpoints, one a line: id, state and health, event types, URL, why disabled
    (never secrets). Health: failing since when, how many deliveries wait, last success;
    then the internal addresses its registration allowed, if any."""
    with _work(Settings()) as session:
        for endpoint in manage.list_endpoints(session):
            health = manage.endpoint_health(session, endpoint.id)
            state = "enabled" if endpoint.enabled else f"disabled ({endpoint.disabled_reason})"
            if health["failing_since"]:
                state += f", failing since {health['failing_since']}"
                if health["last_error"]:
                    state += f" ({health['last_error']})"
            state += f", {health['pending']} pending"
            state += f", last success {health['last_success'] or 'never'}"
            if endpoint.allowed_hosts:
                state += f", allowed {endpoint.allowed_hosts}"
            console.print(
                f"{endpoint.id}  {state}  {','.join(endpoint.event_types)}  {endpoint.url}"
                + (f"  {endpoint.description}" if endpoint.description else "")
            )


class _Listener(BaseHTTPRequestHandler):
    """One request to `webhooks listen`: verify, print, answer."""

    server: _ListenServer
    # A client that sends headers and stalls would hold this one-at-a-time receiver (and
    # its --timeout) for ever; its socket times out instead.
    timeout = 5

    def do_POST(self) -> None:
        length_text = (self.headers.get("content-length") or "0").strip()
        if not (length_text.isascii() and length_text.isdigit()) or len(length_text) > 12:
            # int() of "-1" would read until the client closes; "abc" would drop the connection.
            self.send_error(400, "Content-Length must be a whole number of bytes")
            return
        body = self.rfile.read(min(int(length_text), 1 << 20))
        headers = {name.lower(): value for name, value in self.headers.items()}
        verified: bool | None = None
        if self.server.secret:
            try:
                Webhook(self.server.secret).verify(body, headers)
                verified = True
            except WebhookVerificationError:
                verified = False
        try:
            payload = json.loads(body)
        except ValueError:
            payload = body.decode("utf-8", "replace")
        # A bad signature answers 401: the delivery fails and the endpoint's health says so.
        self.send_response(401 if verified is False else 204)
        self.end_headers()
        line = {"webhook-id": headers.get("webhook-id"), "verified": verified, "event": payload}
        print(json.dumps(line, ensure_ascii=False), flush=True)
        if verified is not False:
            self.server.received += 1

    def log_message(self, format: str, *args: object) -> None:
        pass  # the events are the output


class _ListenServer(HTTPServer):
    secret: str | None = None
    received = 0

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that stalled or hung up: one line, not a traceback."""
        errors.print(f"a request from {client_address[0]} failed: {sys.exc_info()[1]!r}")


@webhooks_app.command("listen")
def webhooks_listen(
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 9000,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    secret: Annotated[
        str | None,
        typer.Option(help="The endpoint's secret (whsec_...): verify each signature with it."),
    ] = None,
    count: Annotated[
        int | None, typer.Option(min=1, help="Stop after this many events (verified ones).")
    ] = None,
    timeout: Annotated[
        float | None,
        typer.Option(
            min=0, help="Stop after this many seconds; exit 1 if --count was not reached."
        ),
    ] = None,
) -> None:
    """A receiver to try webhooks with: print each event as one JSON line (its id, whether
    its signature verified, the event), answer 204 (401 to a bad signature). Not for
    production: a receiver belongs in the system that acts on the events."""
    server = _ListenServer((host, port), _Listener)
    server.secret = secret
    server.timeout = 0.2
    errors.print(f"listening on http://{host}:{port}/ (any path)")
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while count is None or server.received < count:
            if deadline is not None and time.monotonic() >= deadline:
                if count is not None:
                    errors.print(
                        f"error: {server.received} of {count} event(s) arrived in {timeout:g} s"
                    )
                    raise typer.Exit(1)
                break
            server.handle_request()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


@webhooks_app.command("rotate")
def webhooks_rotate(
    endpoint_id: EndpointId,
    grace_hours: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="How long the old secret also signs (default RIDERCRM_WEBHOOK_SECRET_GRACE_HOURS).",
        ),
    ] = None,
) -> None:
    """Give an endpoint a new secret, printed alone on the last line; the old one signs too for a while."""
    settings = Settings()
    hours = settings.webhook_secret_grace_hours if grace_hours is None else grace_hours
    with _work(settings, write=True) as session:
        endpoint, secret = manage.rotate_secret(
            session, endpoint_id=endpoint_id, grace=dt.timedelta(hours=hours)
        )
        console.print(
            f"rotated the secret of {endpoint.id}; the old one also signs for {hours:g} hour(s)"
        )
    print(secret, flush=True)


@webhooks_app.command("disable")
def webhooks_disable(endpoint_id: EndpointId) -> None:
    """Disable an endpoint: its deliveries wait until it is enabled."""
    with _work(Settings(), write=True) as session:
        manage.set_enabled(session, endpoint_id=endpoint_id, enabled=False)
    console.print(f"disabled {endpoint_id}")


@webhooks_app.command("enable")
def webhooks_enable(endpoint_id: EndpointId) -> None:
    """Enable an endpoint: its waiting deliveries are sent."""
    with _work(Settings(), write=True) as session:
        manage.set_enabled(session, endpoint_id=endpoint_id, enabled=True)
    console.print(f"enabled {endpoint_id}")


@webhooks_app.command("deliveries")
def webhooks_deliveries(
    endpoint_id: EndpointId,
    status: Annotated[
        str | None, typer.Option(help="Only pending, sending, delivered or failed.")
    ] = None,
    limit: Annotated[int, typer.Option(min=1, max=1000, help="How many, newest first.")] = 50,
) -> None:
    """List an endpoint's deliveries as JSON lines: status, response code, latency, next attempt."""
    with _work(Settings()) as session:
        rows = manage.list_deliveries(session, endpoint_id=endpoint_id, limit=limit, status=status)
        for delivery, event_type in rows:
            print(json.dumps(manage.delivery_json(delivery, event_type)), flush=True)


@webhooks_app.command("replay")
def webhooks_replay(
    endpoint_id: EndpointId,
    event: Annotated[str | None, typer.Option("--event", help="One event id (msg_...).")] = None,
    since: Annotated[
        dt.datetime | None,
        typer.Option(
            help="Every event of the endpoint's types since this time (UTC unless given).",
            # An offset or Z as the admin API takes it (2026-11-23T02:59:30Z, ...+11:00).
            formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S", "%Y-%m-%dT%H:%M:%S%z"],
        ),
    ] = None,
) -> None:
    """Send one event, or every event since a time, to an endpoint again."""
    if since is not None and since.tzinfo is None:
        since = since.replace(tzinfo=dt.UTC)
    with _work(Settings(), write=True) as session:
        count = manage.replay(session, endpoint_id=endpoint_id, event_id=event, since=since)
    console.print(f"replaying {count} event(s) to {endpoint_id}")


@webhooks_app.command("purge")
def webhooks_purge(
    older_than_days: Annotated[
        float | None,
        typer.Option(
            min=0.0, help="Purge events older than this (default RIDERCRM_EVENT_RETENTION_DAYS)."
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count what would be purged; delete nothing.")
    ] = False,
) -> None:
    """Delete delivered events and their delivery log older than the retention time."""
    settings = Settings()
    days = settings.event_retention_days if older_than_days is None else older_than_days
    if math.isnan(days):  # as `audit purge --older-than`
        errors.print("error: --older-than-days must be a number of days")
        raise typer.Exit(2)
    done = purge(_sessions(settings), retention_days=days, dry_run=dry_run)
    verb = "would purge" if dry_run else "purged"
    console.print(
        f"{verb} {done.events} event(s) and {done.deliveries} delivery record(s)"
        f" older than {days:g} day(s)"
    )


def start_deliverer(settings: Settings) -> Callable[[], None]:
    """Run a deliverer in a background thread of this process; return what stops it."""
    deliverer = Deliverer(settings)
    stop = threading.Event()
    thread = threading.Thread(
        target=deliverer.run, args=(stop,), name="ridercrm-deliverer", daemon=True
    )
    thread.start()

    def stop_it() -> None:
        stop.set()
        thread.join(timeout=settings.webhook_timeout_seconds + 5)
        deliverer.close()

    return stop_it


def deliver_command(
    metrics_port: Annotated[
        int | None, typer.Option(help="Serve Prometheus metrics on this port (127.0.0.1).")
    ] = None,
) -> None:
    """Deliver webhooks until stopped (SIGINT or SIGTERM); run as many as you like."""
    from ridercrm.logs import configure_logging

    settings = Settings()
    configure_logging(settings.log_level, as_json=settings.log_json)
    open_database(settings, may_create=False).dispose()  # says which; refuses a missing one
    deliverer = Deliverer(settings)
    if metrics_port is not None:
        from prometheus_client import start_http_server

        from ridercrm.events.metrics import WebhookMetrics, registry_with

        found = registry_with(WebhookMetrics(deliverer.sessions))
        start_http_server(metrics_port, addr="127.0.0.1", registry=found)
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    console.print("delivering webhooks; stop with Ctrl-C")
    try:
        deliverer.run(stop)
    finally:
        deliverer.close()
