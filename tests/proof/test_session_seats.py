"""Never oversold (issue 25): 40 concurrent operation-1 bookings for a session's last 3
seats, on a real `ridercrm serve` (SQLite with 2 workers; PostgreSQL with 3): exactly 3 succeed,
the others answer `Course is full.`, round after round.

Half the 40 come as single-item requests; the other half sit inside 200-item requests
whose other items book sessions with room (so a big request's items hold the seats they
took while the rest of it runs). The session's counter and the stored courses agree.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import func, select
from testkit.databases import create_run_database, drop_run_database, postgres_url
from testkit.factories import new_booking
from testkit.serve import free_port, run_cli, running_server

from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.keys.service import create_key
from ridercrm.sessions.models import CourseSession

pytestmark = pytest.mark.concurrency

ROUNDS = 3
CAPACITY = 10
TAKEN_BEFORE = 7  # so 3 seats are left
CONTENDERS = 40
SINGLE = 20  # contenders sent alone; the other 20 go 5 apiece into 4 requests of 200 items
BIG_REQUESTS = 4
ITEMS_PER_BIG = 200
PATH = "/crm/people/rider_courses"
_numbers = itertools.count(1)


@contextmanager
def served(url: str, tmp_path: Path, workers: int) -> Iterator[tuple[str, dict[str, str]]]:
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")},
        "RIDERCRM_DATABASE_URL": url,
        "RIDERCRM_LOG_JSON": "true",
        "RIDERCRM_RATE_LIMIT": "",
        "RIDERCRM_ADMIN_KEY_FILE": str(tmp_path / "admin-key.txt"),
        "RIDERCRM_CONSOLE_ADMIN_FILE": str(tmp_path / "console-admin.txt"),
        "RIDERCRM_WEBHOOK_DELIVERER": "false",
        "RIDERCRM_DUPLICATES_RECHECK": "false",
    }
    run_cli(["db", "upgrade"], env, timeout=120)
    engine = build_engine(Settings(database_url=url))
    with session_scope(session_factory(engine), write=True) as session:
        _key, plaintext = create_key(session, name="proof", scopes=["admin"])
    engine.dispose()
    with running_server(env, free_port(), tmp_path / "server.log", workers=workers) as (base, _):
        yield base, {"Authorization": f"Bearer {plaintext}"}


def _person(http: httpx.Client, headers: dict[str, str]) -> str:
    n = next(_numbers)
    body = {
        "first_name": f"Rider{n}",
        "last_name": "Proof",
        "date_of_birth": "1999-04-12",
        "email": f"proof{n}@example.com",
        "postcode": "3064",
    }
    response = http.post("/admin/contacts", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _session(
    http: httpx.Client, headers: dict[str, str], product: str, start: str, capacity: int | None
) -> str:
    body = {
        "product_id": product,
        "location": "somerton",
        "course_datetime": start,
        "capacity": capacity,
    }
    response = http.post("/admin/sessions", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def _item(person: str, product: str, start: str) -> dict[str, Any]:
    return new_booking(person, product, course_datetime=start, booking_number=f"P-{next(_numbers)}")


def one_round(
    http: httpx.Client, headers: dict[str, str], product: str, number: int
) -> tuple[str, str, list[str]]:
    start = f"2027-03-{number + 1:02d} 08:30:00"
    room = f"2027-04-{number + 1:02d} 08:30:00"
    session_id = _session(http, headers, product, start, CAPACITY)
    _session(http, headers, product, room, None)
    people = [_person(http, headers) for _ in range(TAKEN_BEFORE + CONTENDERS)]
    before = http.post(
        PATH,
        json={"people_product": [_item(p, product, start) for p in people[:TAKEN_BEFORE]]},
        headers=headers,
    ).json()["details"]
    assert [d["delivery"] for d in before] == ["true"] * TAKEN_BEFORE
    contenders = people[TAKEN_BEFORE:]
    bodies: list[dict[str, Any]] = [
        {"people_product": [_item(p, product, start)]} for p in contenders[:SINGLE]
    ]
    per_big = (CONTENDERS - SINGLE) // BIG_REQUESTS
    others = [_person(http, headers) for _ in range(3)]
    for n in range(BIG_REQUESTS):
        mine = contenders[SINGLE + n * per_big : SINGLE + (n + 1) * per_big]
        filler = [_item(others[i % 3], product, room) for i in range(ITEMS_PER_BIG - per_big)]
        items = (
            filler[: len(filler) // 2]
            + [_item(p, product, start) for p in mine]
            + filler[len(filler) // 2 :]
        )
        bodies.append({"people_product": items})

    def send(body: dict[str, Any]) -> list[dict[str, Any]]:
        response = http.post(PATH, json=body, headers=headers)
        assert response.status_code == 200, response.text
        return [d for d in response.json()["details"] if d["course_datetime"] == start]

    with ThreadPoolExecutor(len(bodies)) as pool:
        answered = [entry for entries in pool.map(send, bodies) for entry in entries]
    assert len(answered) == CONTENDERS
    receipts = sorted(d["receipt"] for d in answered if d["delivery"] == "false")
    assert receipts == ["Course is full."] * (CONTENDERS - 3)
    winners = [d["asset_id"] for d in answered if d["delivery"] == "true"]
    return session_id, start, winners


def prove(url: str, tmp_path: Path, workers: int) -> None:
    with (
        served(url, tmp_path, workers) as (base, headers),
        httpx.Client(base_url=base, timeout=300, trust_env=False) as http,
    ):
        response = http.post(
            "/admin/products",
            json={"name": "Proof", "code": "PROOF", "price": "1.00"},
            headers=headers,
        )
        product = response.json()["id"]
        rounds = [one_round(http, headers, product, number) for number in range(ROUNDS)]
        for session_id, _start, winners in rounds:
            assert len(winners) == 3
            read = http.get(f"/admin/sessions/{session_id}", headers=headers).json()
            assert (read["booked"], read["seats_left"]) == (CAPACITY, 0)
    engine = build_engine(Settings(database_url=url))
    with session_factory(engine)() as session:
        for session_id, start, _winners in rounds:
            stored = session.scalar(
                select(func.count())
                .select_from(Asset)
                .where(Asset.course_datetime == start, Asset.course_status == "booked")
            )
            row = session.get(CourseSession, session_id)
            assert row is not None
            assert stored == row.booked == CAPACITY
    engine.dispose()


def test_sqlite_sells_the_last_three_seats_exactly_three_times(tmp_path: Path) -> None:
    prove(f"sqlite:///{tmp_path / 'proof.db'}", tmp_path, workers=2)


@pytest.mark.postgresql
def test_postgresql_with_three_workers_sells_the_last_three_seats_exactly_three_times(
    tmp_path: Path,
) -> None:
    base = postgres_url()
    if base is None:
        pytest.skip("needs RIDERCRM_TEST_POSTGRES_URL")
    url = create_run_database(base, "seats")
    try:
        prove(url, tmp_path, workers=3)
    finally:
        drop_run_database(base, url)
