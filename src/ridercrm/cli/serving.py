"""`ridercrm serve` and `ridercrm deliver`: the long-running commands, with the background
workers they start. Apart from ``cli/commands.py`` so that the short commands (keys, audit,
db...) do not import the deliverer, the sender and the timers (a third of their start)."""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer

from ridercrm.cli.commands import _sessions, console
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.duplicates.recheck import start_rechecker
from ridercrm.keys import service as keys
from ridercrm.notifications.commands import deliver_command, start_deliverer
from ridercrm.rosters.digest import start_digest_timer
from ridercrm.sessions.timer import start_waitlist_timer
from ridercrm.startup import StartupProblem, write_owner_only


def ensure_admin_key(settings: Settings) -> str | None:
    """On a database with no keys, create an admin key and return it (shown once)."""
    with session_scope(_sessions(settings, may_create=True), write=True) as session:
        if keys.has_any_key(session):
            return None
        _key, plaintext = keys.create_key(session, name="admin", scopes=["admin"])
        return plaintext


def serve(
    host: Annotated[str, typer.Option(help="Address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8000,
    workers: Annotated[
        int,
        typer.Option(
            min=1, help="Worker processes (use PostgreSQL for more than 1 in production)."
        ),
    ] = 1,
    demo: Annotated[
        bool, typer.Option(help="Load the demo data set first if the database has no people.")
    ] = False,
) -> None:
    """Upgrade the database, create the first admin key if there is none, and serve."""
    from ridercrm.web import server

    settings = Settings()
    config = server.server_config(settings, host=host, port=port, workers=workers)
    try:
        sock = server.bind(host, port, config.backlog)
    except OSError as exc:
        raise StartupProblem(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            " (choose another --port, or stop what is using it)"
        ) from None
    sessions = _sessions(settings, may_create=True)
    if demo:
        from ridercrm.demo import load_demo
        from ridercrm.rosters.demo import load_demo_sessions

        loaded = load_demo(sessions, only_if_empty=True)
        console.print(f"demo data: {loaded}")
        more = load_demo_sessions(sessions)
        if more:
            console.print(more)
        if not loaded.startswith("skipped"):
            from ridercrm.duplicates.commands import scan_demo

            # So the console's Duplicates page shows the demo's few riders stored twice.
            found = scan_demo(settings, sessions)
            console.print(f"duplicates scan: {found} clusters to review")
    plaintext = ensure_admin_key(settings)
    if plaintext:
        _hand_over_admin_key(plaintext, settings)
    _first_console_admin(sessions, sock, settings)
    if workers > 1 and not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ridercrm-metrics-")
    bound_host, bound_port = sock.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    base = settings.base_path or ""
    console.print(f"serving on http://{shown_host}:{bound_port}{base} with {workers} worker(s)")
    # Webhooks and messages are delivered beside the server (RIDERCRM_WEBHOOK_DELIVERER=false:
    # not here).
    stop_deliverer = start_deliverer(settings) if settings.webhook_deliverer else None
    # The waiting list's timer lives in the deliverer's process (lapsed offers pass on).
    stop_timer = start_waitlist_timer(settings) if settings.webhook_deliverer else None
    # So does the staff digest's (RIDERCRM_DIGEST_TO; docs/notifications.md).
    stop_digests = start_digest_timer(settings) if settings.webhook_deliverer else None
    # Duplicates: the people each write touched are re-checked here (docs/decisions.md).
    stop_rechecker = start_rechecker(settings) if settings.duplicates_recheck else None
    # The dashboard's weekly count deltas are folded into the counts here (reports.counts).
    from ridercrm.db import start_checkpointer
    from ridercrm.reports.counts import start_folder

    stop_folder = start_folder(settings)
    # SQLite's log is copied into the database here, not by requests' commits.
    stop_checkpointer = start_checkpointer(settings)
    try:
        server.run(config, sock)
    finally:
        if stop_checkpointer is not None:
            stop_checkpointer()
        stop_folder()
        if stop_rechecker is not None:
            stop_rechecker()
        if stop_deliverer is not None:
            stop_deliverer()
        if stop_timer is not None:
            stop_timer()
        if stop_digests is not None:
            stop_digests()


def _first_console_admin(sessions, sock, settings: Settings) -> None:  # type: ignore[no-untyped-def]
    """On a database without staff users, create the console's admin (docs/console.md)."""
    from ridercrm.staff.commands import ensure_console_admin, hand_over_console_admin

    password = ensure_console_admin(sessions, settings.console_admin_user)
    if password:
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        url = f"http://{shown}:{port}{settings.base_path}/console/login"
        hand_over_console_admin(password, url, settings)


def _hand_over_admin_key(plaintext: str, settings: Settings) -> None:
    """Show the first-start admin key to the person at the terminal, or else put it in an
    owner-only file: never on standard output or in the log stream, which are collected."""
    if sys.stderr.isatty():
        print(
            "First start: created an admin API key. It is shown once; keep it safe:",
            file=sys.stderr,
        )
        print(plaintext, file=sys.stderr, flush=True)
        return
    path = write_owner_only(Path(settings.admin_key_file).resolve(), plaintext + "\n")
    print(
        f"First start: created an admin API key; it is in {path} (readable by its owner only)."
        " Keep it safe and delete the file.",
        file=sys.stderr,
        flush=True,
    )


@functools.wraps(deliver_command)
def deliver_with_timer(*args: Any, **kwargs: Any) -> None:
    """Deliver webhooks and messages until stopped (SIGINT or SIGTERM); run as many as you like. The
    waiting list's timer runs beside it (lapsed offers pass to the next person), and the staff
    digest's (RIDERCRM_DIGEST_TO)."""
    settings = Settings()
    stop_timer = start_waitlist_timer(settings)
    stop_digests = start_digest_timer(settings)
    try:
        deliver_command(*args, **kwargs)
    finally:
        stop_timer()
        if stop_digests is not None:
            stop_digests()
