"""Sign-in under attack: a stream of guesses, from someone with no account, must not stop
the service's writes, and guesses sent side by side must not get past the lock-out."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body

from ridercrm.db import session_scope
from ridercrm.staff import repository
from ridercrm.staff import service as staff_service
from tests.console.conftest import PASSWORD, login_token, sign_in


@pytest.mark.parametrize("known", [True, False], ids=["staff-user", "unknown-name"])
def test_a_password_check_holds_no_write_turn(
    make_client: Callable[..., TestClient],
    make_staff: Callable[..., str],
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    known: bool,
) -> None:
    """Argon2 takes about 0.1-0.3 s of CPU on purpose. Checked inside the sign-in's write
    transaction it held SQLite's one write turn that long, so two addresses guessing at
    the per-address bound kept every booking waiting. The check is held open here until
    a write of the API has been answered."""
    name = make_staff("viewer") if known else "nobody"
    checking, release = threading.Event(), threading.Event()
    verify = staff_service._verify

    def held_open(stored: str, password: str) -> bool:
        checking.set()
        release.wait(10)
        return verify(stored, password)

    monkeypatch.setattr(staff_service, "_verify", held_open)
    console, api = make_client(), make_client()
    console.follow_redirects = False
    form = {"csrf": login_token(console), "username": name, "password": "wrong password!"}
    with ThreadPoolExecutor(1) as pool:
        attempt = pool.submit(console.post, "/console/login", data=form)
        assert checking.wait(10)
        started = time.monotonic()
        created = api.post("/admin/contacts", json=person_body(), headers=admin_headers)
        waited = time.monotonic() - started
        release.set()
        assert attempt.result().status_code == 401
    assert created.status_code == 201, created.text
    assert waited < 5, f"the API's write waited {waited:.1f} s for a password check"


def test_guesses_sent_side_by_side_are_all_counted_and_lock_the_account(
    make_client: Callable[..., TestClient],
    make_staff: Callable[..., str],
    sessions: sessionmaker[Session],
) -> None:
    name = make_staff("staff")
    clients = [make_client(console_lockout_attempts=3) for _ in range(6)]
    for client in clients:
        client.follow_redirects = False
    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda c: sign_in(c, name, "wrong password!"), clients))
    assert [answer.status_code for answer in answers] == [401] * 6
    # The third locks the account; the three after it find it locked.
    assert sum("locked until" in answer.text for answer in answers) == 4
    with session_scope(sessions) as session:
        user = repository.by_name(session, name)
        assert user is not None
        row = repository.failures(session, user_id=user.id, address="testclient")
        assert row is not None
        assert row.blocked_until is not None
    # Locked: the right password is refused too, from any client at that address.
    refused = sign_in(clients[0], name, PASSWORD)
    assert refused.status_code == 401
    assert "locked until" in refused.text


def test_variants_of_a_locked_name_neither_sign_in_nor_escape_the_lock(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> None:
    name = make_staff("admin", name="Front Desk")
    client = make_client(console_lockout_attempts=2)
    client.follow_redirects = False
    for _ in range(2):
        sign_in(client, name, "wrong password!")
    for variant in (" Front Desk ", "Front Desk\t"):  # spaces around are the same name
        answer = sign_in(client, variant, PASSWORD)
        assert answer.status_code == 401
        assert "locked until" in answer.text
    for variant in (
        "front desk",
        "FRONT DESK",
        "Front  Desk",
        "Front\u00a0Desk",
        "Front Desk\u200b",
    ):
        answer = sign_in(client, variant, PASSWORD)  # another name: nobody's account
        assert answer.status_code == 401
        assert "Wrong user name or password." in answer.text
