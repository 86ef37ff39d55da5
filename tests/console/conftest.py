"""Console fixtures: staff users, and clients signed in as one (for every console test).

``console_as("staff")`` is a TestClient of an app on the test database, signed in as a
new staff user of that role; ``csrf(client)`` is that session's CSRF token, to post
forms with. Redirects are not followed, so tests see them.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.staff import service as staff_service

PASSWORD = "correct horse battery staple"
_names = itertools.count(1)


@pytest.fixture
def make_staff(sessions: sessionmaker[Session]) -> Callable[..., str]:
    """Create a staff user of a role (password PASSWORD); return its name."""

    def make(role: str, name: str | None = None) -> str:
        name = name or f"{role}{next(_names)}"
        with session_scope(sessions, write=True) as session:
            staff_service.create_user(session, name=name, role=role, password=PASSWORD)
        return name

    return make


def login_token(client: TestClient, root: str = "/console") -> str:
    page = client.get(f"{root}/login")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


def sign_in(client: TestClient, name: str, password: str = PASSWORD, root: str = "/console") -> Any:
    return client.post(
        f"{root}/login",
        data={"csrf": login_token(client, root), "username": name, "password": password},
    )


def csrf(client: TestClient, root: str = "/console") -> str:
    """The CSRF token of the client's session, as its pages carry it."""
    page = client.get(f"{root}/people")
    found = re.search(r'name="csrf" value="([^"]+)"', page.text)
    assert found, page.text
    return found.group(1)


@pytest.fixture
def console_as(
    make_client: Callable[..., TestClient], make_staff: Callable[..., str]
) -> Callable[..., TestClient]:
    """A client signed in as a new staff user of the given role."""

    def make(role: str, **settings: Any) -> TestClient:
        client = make_client(**settings)
        client.follow_redirects = False
        name = make_staff(role)
        answer = sign_in(client, name, root=settings.get("base_path", "") + "/console")
        assert answer.status_code == 303, answer.text
        return client

    return make
