"""Keys are checked in constant time and looked up by their hash, never by plaintext.

``ridercrm.keys.service.authenticate`` finds the stored key by the SHA-256 of what was
presented (an index look-up: its timing says something about a hash, which an
attacker cannot steer, not about the key) and then decides with
``hmac.compare_digest`` on the stored hash, whose time does not depend on how much
of a guess was right.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, event, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.keys import service
from ridercrm.keys.models import ApiKey

REAL_COMPARE = hmac.compare_digest


class Comparisons:
    """Records each hmac.compare_digest call and answers as the real one does (or not)."""

    def __init__(self, answer: bool | None = None) -> None:
        self.calls: list[tuple[Any, Any]] = []
        self.answer = answer

    def __call__(self, a: Any, b: Any) -> bool:
        self.calls.append((a, b))
        return REAL_COMPARE(a, b) if self.answer is None else self.answer


@pytest.fixture
def comparisons(monkeypatch: pytest.MonkeyPatch) -> Comparisons:
    recorder = Comparisons()
    monkeypatch.setattr(service.hmac, "compare_digest", recorder)
    return recorder


@pytest.fixture
def statements(engine: Engine) -> Iterator[list[str]]:
    """Every SQL statement run on the engine, with its parameters, as text."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, parameters: Any, *_: Any) -> None:
        seen.append(f"{statement} {parameters!r}")

    event.listen(engine, "before_cursor_execute", record)
    yield seen
    event.remove(engine, "before_cursor_execute", record)


def _stored_hash(sessions: sessionmaker[Session], name: str) -> str:
    with session_scope(sessions) as session:
        stored = session.scalar(select(ApiKey.key_hash).where(ApiKey.name == name))
    assert stored is not None
    return stored


def test_the_decision_is_compare_digest_on_the_stored_hash(
    sessions: sessionmaker[Session], make_key: Callable[..., str], comparisons: Comparisons
) -> None:
    plaintext = make_key("match", name="website")
    stored = _stored_hash(sessions, "website")
    with session_scope(sessions) as session:
        found = service.authenticate(session, plaintext)
    assert found is not None
    assert found.name == "website"
    assert comparisons.calls == [(stored, hashlib.sha256(plaintext.encode()).hexdigest())]

    # Had compare_digest said no, the key would have been refused: nothing else decides.
    comparisons.answer = False
    with session_scope(sessions) as session:
        assert service.authenticate(session, plaintext) is None


def test_http_requests_go_through_compare_digest(
    client: TestClient,
    sessions: sessionmaker[Session],
    make_key: Callable[..., str],
    comparisons: Comparisons,
) -> None:
    plaintext = make_key("products", name="website")
    response = client.get("/crm/products", headers={"X-API-Key": plaintext})
    assert response.status_code == 200, response.text
    assert [a for a, _b in comparisons.calls] == [_stored_hash(sessions, "website")]


def test_lookup_is_by_hash_never_by_plaintext(
    sessions: sessionmaker[Session], make_key: Callable[..., str], statements: list[str]
) -> None:
    plaintext = make_key("admin", name="operator")
    guesses = [plaintext, plaintext[:-1] + "x", "rcrm_" + "A" * 43, plaintext[:12]]
    statements.clear()
    for guess in guesses:
        with session_scope(sessions) as session:
            service.authenticate(session, guess)
    sent = "\n".join(statements)
    assert "api_keys" in sent
    for guess in guesses:
        assert guess not in sent, "a presented key reached the database"
        assert guess[5:] not in sent
        assert hashlib.sha256(guess.encode()).hexdigest() in sent
