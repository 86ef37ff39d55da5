"""API keys and scopes over HTTP (docs/decisions.md, "Keys and scopes"): how a key is sent and stored.

Route by route (missing, wrong, revoked and out-of-scope keys on every route):
tests/security/test_route_keys.py."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_product

from ridercrm.db import session_scope


def search(client: TestClient, headers: dict[str, str]) -> int:
    return client.get("/admin/people", params={"q": "Ann"}, headers=headers).status_code


def test_bearer_and_x_api_key_both_work(client: TestClient, make_key: Callable[..., str]) -> None:
    key = make_key("admin")
    assert search(client, {"Authorization": f"Bearer {key}"}) == 200
    assert search(client, {"Authorization": f"bearer  {key} "}) == 200
    assert search(client, {"X-API-Key": key}) == 200
    assert search(client, {"x-api-key": f" {key} "}) == 200


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"Authorization": ""},
        {"Authorization": "Bearer"},
        {"Authorization": "Bearer   "},
        {"X-API-Key": ""},
        {"X-API-Key": "  "},
    ],
    ids=[
        "none",
        "empty-authorization",
        "bearer-alone",
        "bearer-blank",
        "empty-x-api-key",
        "blank-x-api-key",
    ],
)
def test_missing_key_is_401_with_a_challenge(client: TestClient, headers: dict[str, str]) -> None:
    response = client.get("/admin/people", params={"q": "Ann"}, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "missing API key" in response.json()["detail"]
    assert response.json()["audit_id"] == response.headers["x-audit-id"]


@pytest.mark.parametrize(
    "make_headers",
    [
        lambda key: {"Authorization": "Bearer rcrm_not-a-real-key"},
        lambda key: {"X-API-Key": "rcrm_not-a-real-key"},
        lambda key: {"Authorization": f"Bearer {key[:-1]}"},
        lambda key: {"Authorization": f"Bearer {key}x"},
        lambda key: {"Authorization": f"Bearer {key.upper()}"},
        lambda key: {"Authorization": f"Basic {key}"},
        lambda key: {"Authorization": f"Token {key}"},
        lambda key: {"X-API-Key": key[:12]},
    ],
    ids=[
        "bearer",
        "x-api-key",
        "truncated",
        "extended",
        "upper-cased",
        "basic",
        "token",
        "prefix-only",
    ],
)
def test_wrong_key_is_401(
    client: TestClient,
    make_key: Callable[..., str],
    make_headers: Callable[[str], dict[str, str]],
) -> None:
    key = make_key("admin")
    response = client.get("/admin/people", params={"q": "Ann"}, headers=make_headers(key))
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"


def test_products_scope_reads_products_and_nothing_else(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    product_id = create_product(client, admin_headers)
    key = {"X-API-Key": make_key("products", name="website")}
    response = client.get("/crm/products", headers=key)
    assert response.status_code == 200
    assert [product["id"] for product in response.json()] == [product_id]
    assert client.get(f"/admin/products/{product_id}", headers=key).status_code == 403
    assert client.post("/admin/products", json={}, headers=key).status_code == 403


def test_keys_are_stored_only_as_hashes(
    client: TestClient, make_key: Callable[..., str], sessions: sessionmaker[Session]
) -> None:
    plaintexts = [make_key("admin", name="one"), make_key("match", "products", name="two")]
    with session_scope(sessions) as session:
        rows = session.execute(text("SELECT * FROM api_keys")).mappings().all()
    assert len(rows) == 2
    stored = " ".join(str(value) for row in rows for value in row.values())
    for plaintext in plaintexts:
        assert len(plaintext) >= 40
        assert plaintext not in stored
        # Only the short displayed prefix may appear, never the secret after it.
        assert plaintext[12:] not in stored
        assert plaintext[12:24] not in stored
    hashes = {row["key_hash"] for row in rows}
    assert hashes == {hashlib.sha256(p.encode()).hexdigest() for p in plaintexts}
    for plaintext in plaintexts:
        assert search(client, {"X-API-Key": plaintext}) in (200, 403)


def test_every_key_is_different(make_key: Callable[..., str]) -> None:
    keys = {make_key("match", name=f"k{n}") for n in range(20)}
    assert len(keys) == 20


@pytest.mark.parametrize(
    ("authorization", "said"),
    [
        ("{key}", "needs the Bearer scheme"),
        ("Token {key}", "scheme is not Bearer"),
        ("Basic dXNlcjpwYXNz", "scheme is not Bearer"),
    ],
)
def test_a_key_sent_without_bearer_is_told_how_to_send_it(
    client: TestClient, make_key: Callable[..., str], authorization: str, said: str
) -> None:
    key = make_key("admin")
    response = client.get(
        "/admin/people",
        params={"q": "Ann"},
        headers={"Authorization": authorization.format(key=key)},
    )
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    detail = response.json()["detail"]
    assert said in detail
    assert "'Authorization: Bearer <key>' or 'X-API-Key: <key>'" in detail
    assert "missing" not in detail
    assert key not in detail
    assert key not in response.headers["x-failure-reason"]
