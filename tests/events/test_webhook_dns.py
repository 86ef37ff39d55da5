"""The DNS look-up of a new endpoint's URL happens before the write transaction, so a
slow resolver never holds SQLite's write lock (admin API and CLI)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import make_url

from ridercrm.events import manage
from ridercrm.netsafety import AllowList, resolve
from tests.transfer.helpers import runner


def _watch(monkeypatch: pytest.MonkeyPatch, db_url: str) -> list[bool]:
    """Resolve as usual, noting each time whether another writer could write meanwhile."""
    path = make_url(db_url).database
    free: list[bool] = []

    def watched(url: str, allow: AllowList) -> Any:
        other = sqlite3.connect(str(path), timeout=0)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.rollback()
            free.append(True)
        except sqlite3.OperationalError:  # database is locked
            free.append(False)
        finally:
            other.close()
        return resolve(url, allow)

    monkeypatch.setattr(manage, "resolve", watched)
    return free


def test_the_admin_api_resolves_the_url_outside_the_write_lock(
    db_url: str,
    client: TestClient,
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("the write lock is SQLite's")
    free = _watch(monkeypatch, db_url)
    made = client.post(
        "/admin/webhooks",
        json={"url": "http://127.0.0.1:9/hook", "event_types": ["person.created"]},
        headers=admin_headers,
    )
    assert made.status_code == 201, made.text
    refused = client.post(
        "/admin/webhooks",
        json={"url": "http://10.0.0.1/hook", "event_types": ["person.created"]},
        headers=admin_headers,
    )
    assert refused.status_code == 400, refused.text
    assert free == [True, True]


def test_the_cli_resolves_the_url_outside_the_write_lock(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if not db_url.startswith("sqlite"):
        pytest.skip("the write lock is SQLite's")
    from ridercrm.cli import app

    free = _watch(monkeypatch, db_url)
    result = runner.invoke(
        app,
        ["webhooks", "add", "http://127.0.0.1:9/hook", "--event", "person.created"],
        env={"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"},
    )
    assert result.exit_code == 0, result.output
    assert free == [True]
