"""The `ridercrm` command. It calls the same services as the HTTP API.

This module is all that `ridercrm --help` imports (typer and rich, no database, web or
feature code): each command and group is named here with its one-line help and loaded
from its module when it runs or shows its own help (``lazy.LazyGroup``). A new command
or group: write it in its module (a feature's ``commands.py``, or ``cli/commands.py``)
and add a line to COMMANDS (docs/decisions.md, "The CLI starts without the features").
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Annotated

import typer

from ridercrm.cli.lazy import Lazy, LazyGroup

_HERE = "ridercrm.cli.commands"

# In the order `ridercrm --help` lists them. The help is the command's first paragraph
# (a function's docstring, a group's Typer(help=...)); tests/cli/test_cli_start.py
# checks that each matches what loading the command gives.
COMMANDS = (
    Lazy("serve", "ridercrm.cli.serving", "serve",
         "Upgrade the database, create the first admin key if there is none, and serve."),
    Lazy("deliver", "ridercrm.cli.serving", "deliver_with_timer",
         "Deliver webhooks and send messages (e-mail, SMS) until stopped (SIGINT or SIGTERM);"
         "\nrun as many as you like."),
    Lazy("export", "ridercrm.transfer.commands", "export_command",
         "Write contacts, leads or products as CSV, id first; `ridercrm import` reads it back."),
    Lazy("demo", _HERE, "demo_command",
         "Load the demo data: the products of every course location and a few hundred people."),
    Lazy("db", _HERE, "db_app", "Database schema."),
    Lazy("keys", _HERE, "keys_app", "API keys.", audited=("create", "revoke")),
    Lazy("audit", _HERE, "audit_app", "The audit trail."),
    Lazy("reports", _HERE, "reports_app", "The dashboard's figures."),
    Lazy("match", _HERE, "match_app", "The matcher's model."),
    Lazy("import", "ridercrm.transfer.commands", "import_app",
         "Import contacts, leads or products from CSV.",
         audited=("contacts", "leads", "products")),
    Lazy("webhooks", "ridercrm.events.commands", "webhooks_app",
         "Webhook endpoints that receive events.",
         audited=("add", "rotate", "disable", "enable", "replay", "purge")),
    Lazy("messages", "ridercrm.notifications.commands", "messages_app",
         "Messages to riders (e-mail, SMS): the outbox."),
    Lazy("duplicates", "ridercrm.duplicates.commands", "duplicates_app",
         "Duplicate people: scan, review, merge."),
    Lazy("users", "ridercrm.staff.commands", "users_app", "Staff users of the console.",
         audited=("create", "reset-password", "disable", "enable")),
    Lazy("sessions", "ridercrm.rosters.commands", "sessions_app",
         "Course sessions: seats, schedules, cancelling."),
)  # fmt: skip


class RidercrmGroup(LazyGroup):
    lazy = {command.name: command for command in COMMANDS}


# `-h` as well as `--help`, on every command: click's child contexts inherit the names.
HELP = {"help_option_names": ["-h", "--help"]}
app = typer.Typer(
    cls=RidercrmGroup,
    help="ridercrm: CRM service for a rider-training business.",
    no_args_is_help=True,
    context_settings=HELP,
    # A traceback's locals could hold keys and personal data.
    pretty_exceptions_show_locals=False,
)


@app.callback()
def _options(
    debug: Annotated[
        bool,
        typer.Option(
            "--debug",
            envvar="RIDERCRM_DEBUG",
            help="On failure, show the full traceback instead of one line (or RIDERCRM_DEBUG=1).",
        ),
    ] = False,
    as_name: Annotated[
        str | None,
        typer.Option(
            "--as",
            help="Who runs the command, as its audit records name them (default: the OS user).",
        ),
    ] = None,
) -> None:
    """ridercrm: CRM service for a rider-training business."""
    from ridercrm.startup import operator_problem, set_operator

    global _debug
    _debug = debug
    if as_name is not None and (problem := operator_problem(as_name)):
        raise typer.BadParameter(problem, param_hint="'--as'")
    set_operator(as_name)


_debug = False


def main() -> None:
    """Run the command; a failure is one line on standard error (all of it with --debug)."""
    try:
        app()
    except Exception as exc:
        if _debug or os.environ.get("RIDERCRM_DEBUG", "").lower() in ("1", "true", "yes", "on"):
            # Python's own traceback: Rich's costs seconds of CPU to highlight every frame.
            traceback.print_exc()
            sys.exit(1)
        from ridercrm.startup import failure_line

        # Plain print: one line however wide the terminal is.
        print(failure_line(exc), file=sys.stderr, flush=True)
        sys.exit(1)
