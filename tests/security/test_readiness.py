"""/readyz tells whether the database can take writes (issue 10, finding 7).

A read-only database answers reads while every request (each writes its audit record)
fails; a full disk likewise. Readiness must say so, and the 503 a request then gets
says "may have been applied" only when that can be true.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from testkit.factories import person_body

from ridercrm.app import create_app
from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.keys.service import create_key


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def read_only(
    request: pytest.FixtureRequest, tmp_path: Path, sqlite_template: Path
) -> Iterator[tuple[TestClient, str]]:
    """A client of a database it may read but not write, and a valid admin key."""
    if request.param == "sqlite":
        path = tmp_path / "ridercrm.db"
        shutil.copy(sqlite_template, path)
        writable = f"sqlite:///{path}"
        url = f"sqlite:///file:{path}?mode=ro&uri=true"
    else:
        writable = request.getfixturevalue("postgres_ready")
        url = writable + "?options=" + quote("-c default_transaction_read_only=on")
    engine = build_engine(Settings(database_url=writable))
    with session_scope(session_factory(engine), write=True) as session:
        _key, plaintext = create_key(session, name="ops", scopes=["admin"])
    engine.dispose()
    app = create_app(Settings(database_url=url))
    with TestClient(app) as client:
        yield client, plaintext
    app.state.context.engine.dispose()


def test_readyz_is_503_on_a_read_only_database(read_only: tuple[TestClient, str]) -> None:
    client, key = read_only
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "read-only"}
    # What requests meet meanwhile: nothing applied, and the answer says so.
    for headers in ({"X-API-Key": key}, {"X-API-Key": "rcrm_wrong"}, {}):
        refused = client.post("/admin/contacts", json=person_body(), headers=headers)
        assert refused.status_code == 503
        assert refused.json() == {
            "detail": "the audit trail is unavailable; the request was not applied"
        }


def test_readyz_is_503_when_the_disk_is_nearly_full(
    make_client: Callable[..., TestClient], settings: Settings
) -> None:
    if not settings.is_sqlite:
        pytest.skip("free space is checked for SQLite's own file")
    # No filesystem here has a million GiB free: the threshold stands for a full disk.
    client = make_client(ready_min_free_mb=1024**3)
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {"status": "unavailable", "database": "disk full"}


def test_readyz_is_200_while_another_writer_holds_the_lock(
    client: TestClient, settings: Settings
) -> None:
    engine = build_engine(settings)
    try:
        with session_scope(session_factory(engine), write=True) as session:
            session.connection()  # the write lock (SQLite) or a write transaction is held
            response = client.get("/readyz")
    finally:
        engine.dispose()
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok"}


def test_the_free_space_threshold_is_described() -> None:
    field = Settings.model_fields["ready_min_free_mb"]
    assert field.description
    assert field.default > 0
