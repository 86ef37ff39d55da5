"""A read is refused for its key before anything about its parameters, whatever the key's
fault (missing, unknown, revoked, out of scope, over its rate), and a revoked or narrowed
key is refused on the very next request.

A read looks its key up in its own transaction, after FastAPI has read the parameters
(docs/decisions.md, "Reads: the key in the read's transaction"); these are the answers
a client depended on when the key was checked first.
"""

from __future__ import annotations

from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.keys.models import ApiKey
from ridercrm.keys.service import revoke_key

BAD_LIMIT = "/admin/people?limit=0"  # refused by the parameter's own bound (ge=1)
NUL_AND_BAD_LIMIT = "/admin/people?limit=0&q=a%00b"


def test_a_key_fault_is_answered_before_a_bad_parameter(
    client: TestClient, sessions: sessionmaker[Session], make_key: Callable[..., str]
) -> None:
    admin = make_key("admin", name="operator")
    narrow = make_key("products", name="website")
    revoked = make_key("admin", name="gone")
    with session_scope(sessions, write=True) as session:
        revoke_key(session, ident="gone")

    answered = client.get(BAD_LIMIT, headers={"X-API-Key": admin})
    assert answered.status_code == 400, answered.text
    assert answered.headers["x-failure-reason"].startswith("limit:")

    for key, status, reason in (
        ("rcrm_" + "A" * 43, 401, "invalid or revoked API key"),
        (revoked, 401, "invalid or revoked API key"),
        (narrow, 403, "API key lacks scope 'admin'"),
    ):
        refused = client.get(BAD_LIMIT, headers={"X-API-Key": key})
        assert (refused.status_code, refused.headers["x-failure-reason"]) == (status, reason)
        assert refused.headers["x-audit-id"]
    missing = client.get(BAD_LIMIT)
    assert missing.status_code == 401
    assert missing.headers["x-failure-reason"].startswith("missing API key")

    # NUL in a parameter: refused after the key (a bad key is told so first), before
    # the parameters' own checks.
    nul = client.get(NUL_AND_BAD_LIMIT, headers={"X-API-Key": admin})
    assert (nul.status_code, nul.headers["x-failure-reason"]) == (
        400,
        "query parameters must not contain NUL characters",
    )
    refused = client.get(NUL_AND_BAD_LIMIT, headers={"X-API-Key": narrow})
    assert refused.status_code == 403


def test_a_revoked_or_narrowed_key_is_refused_on_the_next_read(
    client: TestClient, sessions: sessionmaker[Session], make_key: Callable[..., str]
) -> None:
    key = make_key("products", "courses", name="website")
    headers = {"X-API-Key": key}
    assert client.get("/crm/products", headers=headers).status_code == 200
    with session_scope(sessions, write=True) as session:
        session.execute(update(ApiKey).where(ApiKey.name == "website").values(scopes=["courses"]))
    narrowed = client.get("/crm/products", headers=headers)
    assert narrowed.status_code == 403, narrowed.text
    with session_scope(sessions, write=True) as session:
        revoke_key(session, ident="website")
    revoked = client.get("/crm/sessions", headers=headers)
    assert revoked.status_code == 401, revoked.text
    assert revoked.headers["x-failure-reason"] == "invalid or revoked API key"
