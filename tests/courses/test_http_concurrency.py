"""Concurrent identical bookings make one course (retries are safe: docs/decisions.md, "Operation 1 (rider courses)")."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product

from ridercrm.config import Settings
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.people.models import Person
from tests.courses.helpers import PATH, new_booking
from tests.live import live_server

CLIENTS = 20


def test_twenty_concurrent_identical_bookings_make_one_course(
    settings: Settings,
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
) -> None:
    lead = create_person(client, admin_headers, kind="leads")
    product = create_product(client, admin_headers)
    body = {"people_product": [new_booking(lead, product)]}

    with live_server(settings) as base_url, httpx.Client(base_url=base_url, timeout=60) as http:

        def book(_: int) -> httpx.Response:
            return http.post(PATH, json=body, headers=admin_headers)

        with ThreadPoolExecutor(CLIENTS) as pool:
            responses = list(pool.map(book, range(CLIENTS)))

    assert [r.status_code for r in responses] == [200] * CLIENTS
    entries = [r.json()["details"][0] for r in responses]
    refused = [e["receipt"] for e in entries if e["delivery"] != "true"]
    assert refused == []
    asset_ids = {e["asset_id"] for e in entries}
    contact_ids = {e["contact_id"] for e in entries}
    assert len(asset_ids) == 1
    assert len(contact_ids) == 1
    with sessions() as session:
        assert session.scalar(select(func.count()).select_from(Asset)) == 1
        assert session.scalar(select(func.count()).select_from(AssetStatusChange)) == 1
        # the lead was converted exactly once
        assert session.scalar(select(func.count()).where(Person.kind == "contact")) == 1
        stored = session.get(Person, lead)
        assert stored is not None
        assert stored.converted_contact_id == contact_ids.pop()
