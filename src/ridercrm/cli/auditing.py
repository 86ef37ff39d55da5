"""The CLI actions that change something, audited like an admin API request.

Method CLI, operation ``cli.<group>_<command>``, the arguments as the request, the exit
code as the response, with the operator's name: ``ridercrm --as NAME``, or the OS user.
The duplicates commands record theirs in the action's own transaction
(duplicates/commands.py). ``ridercrm.cli`` wraps a group's commands when it loads the
group (``audit_commands``), once a process.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import typer

_SECRET_ARGUMENTS = {"password"}
_AUDITED = "__ridercrm_audited__"


def audit_commands(group: str, app: typer.Typer, names: Collection[str]) -> None:
    """Make each of ``names`` among ``app``'s commands leave an audit record of its run."""
    for command in app.registered_commands:
        name = command.name or (command.callback.__name__ if command.callback else "")
        callback = command.callback
        if callback is not None and name in names and not getattr(callback, _AUDITED, False):
            command.callback = _audit_action(group, name, callback)


def _audit_action(group: str, name: str, callback: Callable[..., Any]) -> Callable[..., Any]:
    """``callback`` that leaves an audit record of its run (not of a --dry-run)."""

    @functools.wraps(callback)
    def audited(**arguments: Any) -> Any:
        from ridercrm.startup import StartupProblem

        started = time.perf_counter()
        code = 0
        try:
            return callback(**arguments)
        except typer.Exit as exc:
            code = exc.exit_code
            raise
        except (StartupProblem, SystemExit):
            code = -1  # it never reached the database: nothing to record
            raise
        except Exception:
            code = 1
            raise
        finally:
            if code >= 0 and not arguments.get("dry_run"):
                _record_action(group, name, arguments, code, started)

    setattr(audited, _AUDITED, True)
    return audited


def _record_action(
    group: str, name: str, arguments: dict[str, Any], code: int, started: float
) -> None:
    from ridercrm.cli.commands import _sessions, errors
    from ridercrm.config import Settings
    from ridercrm.db import session_scope
    from ridercrm.duplicates.service import audit_cli
    from ridercrm.startup import failure_line

    shown = {
        key: str(value) if isinstance(value, Path) else value
        for key, value in arguments.items()
        if key not in _SECRET_ARGUMENTS
    }
    settings = Settings()
    try:
        with session_scope(_sessions(settings), write=True) as session:
            audit_cli(
                session, operation=f"cli.{group}_{name.replace('-', '_')}",
                command=f"ridercrm {group} {name}", arguments=shown,
                status=200 if code == 0 else 400,
                result={"exit_code": code}, started=started, redact=settings.audit_redact,
            )  # fmt: skip
    except Exception as exc:  # the action is done; say the record is missing, do not hide it
        errors.print(f"warning: no audit record of this command: {failure_line(exc)}")
