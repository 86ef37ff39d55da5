"""Sign-in failures are counted per account and client address: guesses from one address
slow that address down (a growing wait) and never lock the owner out from another; the
first admin's name is the operator's choice (docs/console.md, "Signing in")."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from contextlib import ExitStack

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.staff import repository
from ridercrm.staff import service as staff_service
from ridercrm.staff.commands import ensure_console_admin
from ridercrm.staff.models import StaffSignInFailure
from tests.console.conftest import PASSWORD, sign_in

ATTACKER, OWNER = "203.0.113.66", "198.51.100.7"


@pytest.fixture
def client_from(settings: Settings) -> Iterator[Callable[..., TestClient]]:
    """A client of the app that connects from the given address."""
    with ExitStack() as stack:

        def make(address: str, **changes: object) -> TestClient:
            app = create_app(Settings(**{**settings.model_dump(), **changes}))
            stack.callback(app.state.context.engine.dispose)
            client = stack.enter_context(TestClient(app, client=(address, 40000)))
            client.follow_redirects = False
            return client

        yield make


def test_guesses_from_one_address_do_not_lock_the_owner_out_from_another(
    client_from: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    name = make_staff("admin", name="owner")
    attacker = client_from(ATTACKER, console_lockout_attempts=5)
    for _ in range(4):
        assert "Wrong user name or password." in sign_in(attacker, name, "guess guess!").text
    answer = sign_in(attacker, name, "guess guess!")
    assert answer.status_code == 401
    assert "locked until" in answer.text
    # From the attacker's address even the right password waits ...
    assert "locked until" in sign_in(attacker, name, PASSWORD).text
    # ... but the owner, elsewhere, signs in.
    owner = client_from(OWNER, console_lockout_attempts=5)
    assert sign_in(owner, name, PASSWORD).status_code == 303


def test_the_wait_grows_with_each_failure_past_the_bound(
    client_from: Callable[..., TestClient],
    make_staff: Callable[..., str],
    sessions: sessionmaker[Session],
) -> None:
    name = make_staff("staff")
    client = client_from(ATTACKER, console_lockout_attempts=2, console_lockout_minutes=15)
    waits = []
    for _ in range(5):
        for _ in range(2):
            sign_in(client, name, "guess guess!")
        with session_scope(sessions, write=True) as session:
            row = session.scalars(select(StaffSignInFailure)).one()
            assert row.blocked_until is not None
            waits.append(round((row.blocked_until - row.last_failed_at).total_seconds() / 60))
            # The wait is over: the next guess is checked (and fails) again.
            session.execute(
                update(StaffSignInFailure).values(
                    blocked_until=staff_service.utcnow() - dt.timedelta(seconds=1)
                )
            )
    # 2 failures: 1 minute; each failure past the bound (one a round here: a round's
    # second guess finds the new wait) doubles it, up to RIDERCRM_CONSOLE_LOCKOUT_MINUTES.
    assert waits == [1, 2, 4, 8, 15]


def test_a_right_password_forgets_the_addresses_failures(
    client_from: Callable[..., TestClient],
    make_staff: Callable[..., str],
    sessions: sessionmaker[Session],
) -> None:
    name = make_staff("staff")
    client = client_from(OWNER, console_lockout_attempts=3)
    for _ in range(2):
        sign_in(client, name, "typo typo typo")
    assert sign_in(client, name, PASSWORD).status_code == 303
    with session_scope(sessions) as session:
        assert session.scalars(select(StaffSignInFailure)).all() == []


def test_the_first_admins_name_is_a_setting(
    sessions: sessionmaker[Session], settings: Settings
) -> None:
    chosen = Settings(**{**settings.model_dump(), "console_admin_user": "Front Office"})
    password = ensure_console_admin(sessions, chosen.console_admin_user)
    assert password
    with session_scope(sessions) as session:
        user = repository.by_name(session, "Front Office")
        assert user is not None
        assert user.role == "admin"
        assert repository.by_name(session, "admin") is None
    with pytest.raises(ValueError, match="console_admin_user"):
        Settings(console_admin_user="bad/name")


def test_the_users_page_shows_failed_sign_ins_not_a_lock(
    client_from: Callable[..., TestClient],
    make_staff: Callable[..., str],
    console_as: Callable[..., TestClient],
) -> None:
    """The account is never locked (locked_until is no longer set): the admin sees how
    many sign-ins failed lately, from how many addresses, and which wait."""
    name = make_staff("staff", name="guessed")
    attacker = client_from(ATTACKER, console_lockout_attempts=3)
    for _ in range(3):
        sign_in(attacker, name, "guess guess!")
    sign_in(client_from(OWNER, console_lockout_attempts=3), name, "one typo!!!!")
    page = console_as("admin").get("/console/admin/users")
    assert page.status_code == 200
    row = page.text.split("<td>guessed</td>", 1)[1].split("</tr>", 1)[0]
    assert "<td>active</td>" in row
    assert "4 from 2 addresses; 1 waiting until" in row
    assert "locked" not in row
