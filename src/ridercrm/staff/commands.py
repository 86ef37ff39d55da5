"""`ridercrm users ...`: staff users of the console; and the first start's console admin."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import session_factory, session_scope
from ridercrm.staff import rules, service
from ridercrm.startup import open_database, write_owner_only

users_app = typer.Typer(help="Staff users of the console.", no_args_is_help=True)
console = Console(markup=False)
errors = Console(stderr=True, markup=False)
ROLE_HELP = f"Role: {', '.join(rules.ROLES)} (viewer reads; staff changes people and courses; admin manages users, keys and products)."


def _sessions() -> sessionmaker[Session]:
    return session_factory(open_database(Settings(), may_create=False))


def _prompt_password() -> str:
    password: str = typer.prompt("Password", hide_input=True, confirmation_prompt=True)
    return password


@users_app.command("create")
def users_create(
    name: Annotated[str, typer.Option(help="The user name they sign in with.")],
    role: Annotated[str, typer.Option(help=ROLE_HELP)],
    password_prompt: Annotated[
        bool, typer.Option("--password-prompt", help="Read the password instead of generating one.")
    ] = False,
) -> None:
    """Create a staff user. A generated password is printed once, alone on the last line."""
    chosen = _prompt_password() if password_prompt else None
    try:
        with session_scope(_sessions(), write=True) as session:
            user, password = service.create_user(session, name=name, role=role, password=chosen)
            console.print(f"created staff user {user.name} ({user.role})")
    except service.StaffProblem as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None
    if chosen is None:
        print(password, flush=True)


@users_app.command("list")
def users_list() -> None:
    """List staff users (never their passwords)."""
    table = Table("name", "role", "state", "failed sign-ins (last day)", "created")
    with session_scope(_sessions()) as session:
        failed = service.failed_sign_ins(session)
        for user in service.list_users(session):
            state = "disabled" if user.disabled else "active"
            trouble = failed.get(user.id)
            shown = "none"
            if trouble is not None:
                shown = f"{trouble.failures} from {trouble.addresses} address(es)"
                if trouble.waiting_until is not None:
                    until = trouble.waiting_until.strftime("%H:%M UTC")
                    shown += f"; {trouble.waiting} waiting until {until}"
            created = user.created_at.strftime("%Y-%m-%d %H:%M")
            table.add_row(user.name, user.role, state, shown, created)
    console.print(table)


@users_app.command("disable")
def users_disable(name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Disable a staff user and end their sessions."""
    try:
        with session_scope(_sessions(), write=True) as session:
            user = service.disable_user(session, name=name)
            console.print(f"disabled staff user {user.name}; their sessions are ended")
    except service.StaffProblem as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None


@users_app.command("enable")
def users_enable(name: Annotated[str, typer.Argument(help="The user's name.")]) -> None:
    """Enable a disabled staff user again (and lift a lock-out)."""
    try:
        with session_scope(_sessions(), write=True) as session:
            user = service.enable_user(session, name=name)
            console.print(f"enabled staff user {user.name}")
    except service.StaffProblem as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None


@users_app.command("reset-password")
def users_reset_password(
    name: Annotated[str, typer.Argument(help="The user's name.")],
    password_prompt: Annotated[
        bool, typer.Option("--password-prompt", help="Read the password instead of generating one.")
    ] = False,
) -> None:
    """Give a staff user a new password, lift a lock-out and end their sessions.
    A generated password is printed once, alone on the last line."""
    chosen = _prompt_password() if password_prompt else None
    try:
        with session_scope(_sessions(), write=True) as session:
            user, password = service.reset_password(session, name=name, password=chosen)
            console.print(f"new password for staff user {user.name}; their sessions are ended")
    except service.StaffProblem as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None
    if chosen is None:
        print(password, flush=True)


def ensure_console_admin(sessions: sessionmaker[Session], name: str) -> str | None:
    """On a database with no staff users, create the admin ``name``
    (RIDERCRM_CONSOLE_ADMIN_USER) and return its password."""
    with session_scope(sessions, write=True) as session:
        if service.any_user(session):
            return None
        _user, password = service.create_user(session, name=name, role="admin")
        return password


def hand_over_console_admin(password: str, sign_in_url: str, settings: Settings) -> None:
    """Show the first console admin's sign-in as the admin key is shown: on standard error
    when it is a terminal, else in an owner-only file (RIDERCRM_CONSOLE_ADMIN_FILE)."""
    if sys.stderr.isatty():
        print(
            "First start: created the console's admin staff user. Sign in at"
            f" {sign_in_url} as user {settings.console_admin_user} with this password (shown once):",
            file=sys.stderr,
        )
        print(password, file=sys.stderr, flush=True)
        return
    text = f"url: {sign_in_url}\nusername: {settings.console_admin_user}\npassword: {password}\n"
    path = write_owner_only(Path(settings.console_admin_file).resolve(), text)
    print(
        f"First start: created the console's admin staff user; its sign-in is in {path}"
        " (readable by its owner only). Keep it safe and delete the file.",
        file=sys.stderr,
        flush=True,
    )
