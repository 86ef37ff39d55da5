"""Injection strings typed into the console's forms are data: stored as typed and shown
escaped on every page, never run as markup, script or SQL."""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, person_body

from ridercrm.db import session_scope
from ridercrm.people.models import Person
from tests.console.conftest import csrf, sign_in
from tests.hostile.test_verbatim import HOSTILE

MARKUP = re.compile(r"<script>alert|<img src=x|49 %s %n")  # 49: a template evaluated {{7*7}}


def assert_escaped(page: str) -> None:
    # The vendored htmx is the only script; no typed string turns into markup.
    assert not MARKUP.search(page), MARKUP.search(page)


def test_hostile_strings_in_a_persons_details_are_shown_escaped(
    console_as: Callable[..., TestClient],
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    client = console_as("staff")
    person_id = create_person(client, admin_headers, **person_body())
    token = csrf(client)
    with session_scope(sessions) as session:
        before = session.scalar(select(func.count()).select_from(Person))
    for text in HOSTILE:
        answer = client.post(
            f"/console/people/{person_id}",
            data={"csrf": token, "street": text, "city": text[:80], "first_name": text[:80]},
        )
        assert answer.status_code in (200, 400), answer.text
        assert_escaped(answer.text)
        assert_escaped(client.get(f"/console/people/{person_id}").text)
        assert_escaped(client.get("/console/people", params={"q": text}).text)
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(Person)) == before
        person = session.get(Person, person_id)
        assert person is not None
        assert person.street == HOSTILE[-1]  # stored exactly as typed
    audit = client.get("/console/audit", params={"operation": "console.modify_person"}).text
    assert_escaped(audit)
    for record_id in re.findall(r"/console/audit/(a0A\w+)", audit)[:3]:
        assert_escaped(client.get(f"/console/audit/{record_id}").text)


def test_hostile_strings_in_search_filters_and_sign_in_are_shown_escaped(
    console_as: Callable[..., TestClient], make_client: Callable[..., TestClient]
) -> None:
    client = console_as("admin")
    token = csrf(client)
    for text in HOSTILE:
        for params in ({"operation": text}, {"who": text}, {"booking": text}, {"person": text}):
            page = client.get("/console/audit", params=params)
            assert page.status_code in (200, 400)
            assert_escaped(page.text)
        for path, data in (
            ("/console/admin/products", {"name": text, "code": text[:80], "price": "1.00"}),
            ("/console/admin/keys", {"name": text, "scope": "match"}),
            ("/console/admin/users", {"name": text, "role": "viewer"}),
        ):
            answer = client.post(path, data={"csrf": token, **data})
            assert answer.status_code in (200, 400), (path, answer.text)
            assert_escaped(answer.text)
        stranger = make_client()
        stranger.follow_redirects = False
        refused = sign_in(stranger, text, text)
        assert refused.status_code == 401
        assert_escaped(refused.text)
    for page in ("products", "keys", "users"):
        assert_escaped(client.get(f"/console/admin/{page}").text)
    assert client.get("/console/people/%3Cscript%3Ealert(1)%3C%2Fscript%3E").status_code == 404
