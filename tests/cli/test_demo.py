"""`ridercrm demo` and load_demo against a real database."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.people.models import Person
from tests.cli.transfer_helpers import assert_match_keys_in_step, cli, people, products


def test_demo_loads_once_and_then_is_skipped(
    db_url: str, sessions: sessionmaker[Session], client: TestClient, admin_headers: dict[str, str]
) -> None:
    result = cli(db_url, "demo")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("loaded 14 products and 300 people")
    assert cli(db_url, "demo").stdout.strip() == "skipped: database already has people"
    assert load_demo(sessions) == "skipped: database already has people"
    stored = people(sessions)
    assert len(stored) == 300
    assert {p["kind"] for p in stored.values()} == {"contact", "lead"}
    assert all(p["postcode"] is None or len(p["postcode"]) == 4 for p in stored.values())
    codes = {p["code"] for p in products(sessions).values()}
    assert len(codes) == 14
    assert {"LAP-SOM", "LT-SOM", "LAP-IPS", "LT-TWB"} <= codes
    assert_match_keys_in_step(sessions)
    someone = next(iter(stored))
    response = client.get(f"/admin/people/{someone}", headers=admin_headers)
    assert response.status_code == 200
    forced = cli(db_url, "demo", "--force")
    assert forced.output.startswith("loaded 0 products and 300 people")
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(Person)) == 600


def test_demo_data_is_the_same_on_every_load(db_url: str, sessions: sessionmaker[Session]) -> None:
    load_demo(sessions, people=50)
    first = sorted((p["first_name"], p["last_name"], p["email"]) for p in people(sessions).values())
    with session_scope(sessions, write=True) as session:
        session.execute(delete(Person))
    load_demo(sessions, people=50)
    again = sorted((p["first_name"], p["last_name"], p["email"]) for p in people(sessions).values())
    assert again == first
