"""A small stored world for hostile requests, and the response shapes they must get."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person, create_product, person_body

from tests.console.conftest import console_as, make_staff  # noqa: F401 (console forms)
from tests.courses.helpers import new_booking
from tests.hostile.state import Ledger

FORM = "application/x-www-form-urlencoded"


@dataclass(frozen=True)
class Target:
    """An endpoint that takes a body, and what a valid body for it looks like."""

    name: str
    path: str
    key: str | None  # the items' key (None: the body is the record itself)
    many: bool  # the key holds an array of items, not one object
    check_failure: Callable[[httpx.Response, int, str], None]

    def body(self, item: Any) -> Any:
        """The request body carrying ``item`` the way this endpoint expects it."""
        if self.key is None:
            return item
        return {self.key: [item] if self.many else item}


def _common(response: httpx.Response, status: int, reason: str) -> str:
    assert response.status_code == status, (status, response.status_code, response.text)
    audit_id = response.headers.get("x-audit-id", "")
    assert len(audit_id) == 18, response.headers
    assert audit_id.startswith("a0A"), response.headers
    assert reason.lower() in response.headers["x-failure-reason"].lower(), (
        reason,
        response.headers["x-failure-reason"],
    )
    return audit_id


def check_plain_failure(response: httpx.Response, status: int, reason: str) -> None:
    """Operation 1: the exact plain text, the reason in X-Failure-Reason only."""
    _common(response, status, reason)
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.content == b"Status update failed."


def check_modify_failure(response: httpx.Response, status: int, reason: str) -> None:
    """Operation 2: its own JSON shape, status false, no item looked at."""
    audit_id = _common(response, status, reason)
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"status", "receipt", "audit_ID", "details", "items_failed"}, body
    assert body["status"] is False
    assert body["details"] == []
    assert body["items_failed"] == 0
    assert body["audit_ID"] == audit_id
    assert body["receipt"].endswith("."), body
    assert reason.lower() in body["receipt"].lower(), body


def check_match_failure(response: httpx.Response, status: int, reason: str) -> None:
    """Operations 3 and 4: delivery "false", empty ID, the receipt names the problem."""
    audit_id = _common(response, status, reason)
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"delivery", "receipt", "ID", "audit_ID"}, body
    assert (body["delivery"], body["ID"], body["audit_ID"]) == ("false", "", audit_id)
    assert body["receipt"].endswith("."), body
    assert reason.lower() in body["receipt"].lower(), body


def check_admin_failure(response: httpx.Response, status: int, reason: str) -> None:
    """The admin API: detail, the audit id, and the field errors when there are any."""
    audit_id = _common(response, status, reason)
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) <= {"detail", "errors", "audit_id"}, body
    assert body["audit_id"] == audit_id, body
    assert reason.lower() in body["detail"].lower(), body


RIDER_COURSES = Target(
    "rider_courses", "/crm/people/rider_courses", "people_product", True, check_plain_failure
)
MODIFY = Target("modify", "/crm/modify", "people_data", True, check_modify_failure)
PEOPLE_MATCH = Target(
    "people_match", "/crm/people/match", "person_data", False, check_match_failure
)
LEADS_MATCH = Target("leads_match", "/crm/leads/match", "person_data", False, check_match_failure)
CONTACTS = Target("admin_contacts", "/admin/contacts", None, False, check_admin_failure)
LEADS = Target("admin_leads", "/admin/leads", None, False, check_admin_failure)
PRODUCTS = Target("admin_products", "/admin/products", None, False, check_admin_failure)

OPERATIONS = (RIDER_COURSES, MODIFY, PEOPLE_MATCH, LEADS_MATCH)
TARGETS = (*OPERATIONS, CONTACTS, LEADS, PRODUCTS)


@dataclass
class World:
    """A contact, a lead, two products and a booked course, with an admin key."""

    client: TestClient
    headers: dict[str, str]
    sessions: sessionmaker[Session]
    contact: str
    lead: str
    product: str
    other_product: str
    asset: str
    numbers: itertools.count[int] = field(default_factory=itertools.count)

    def ledger(self) -> Ledger:
        return Ledger(self.sessions)

    def post(
        self, path: str, raw: bytes, content_type: str | None = "application/json"
    ) -> httpx.Response:
        headers = dict(self.headers)
        if content_type is not None:
            headers["Content-Type"] = content_type
        return self.client.post(path, content=raw, headers=headers)

    def post_json(self, target: Target, item: Any) -> httpx.Response:
        raw = json.dumps(target.body(item), ensure_ascii=False).encode()
        return self.post(target.path, raw)

    def valid_item(self, target: Target) -> dict[str, Any]:
        """An item the endpoint accepts, which writes something where the endpoint writes."""
        n = next(self.numbers)
        if target is RIDER_COURSES:
            # A new course of `product`: the contact has none (its course is of `other_product`).
            return new_booking(self.contact, self.product, booking_number=f"HB-H{n}")
        if target is MODIFY:
            return {"ID": self.contact, "city": f"Somerton {n}"}
        if target is PEOPLE_MATCH:
            return person_body()
        if target is LEADS_MATCH:
            return {**person_body(first_name="Lena", last_name="Lead"), "lead_source": "Web"}
        if target is PRODUCTS:
            return {"name": "Pre-licence", "code": f"PL-{n}", "price": "249.00"}
        return person_body(first_name="Nia", last_name=f"New{n}")

    def read(self, path: str) -> dict[str, Any]:
        response = self.client.get(path, headers=self.headers)
        assert response.status_code == 200, response.text
        found: dict[str, Any] = response.json()
        return found

    def audit(self, response: httpx.Response) -> dict[str, Any]:
        return self.read(f"/admin/audit/{response.headers['x-audit-id']}")


@pytest.fixture
def world(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> World:
    contact = create_person(client, admin_headers)
    lead = create_person(client, admin_headers, kind="leads", first_name="Lena", last_name="Lead")
    product = create_product(client, admin_headers)
    other = create_product(client, admin_headers, code="LAP-TUL", name="Pre-licence (Tullamarine)")
    booked = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [new_booking(contact, other, booking_number="HB-EXISTING")]},
        headers=admin_headers,
    )
    assert booked.status_code == 200, booked.text
    detail = booked.json()["details"][0]
    assert detail["delivery"] == "true", detail
    return World(
        client=client,
        headers=admin_headers,
        sessions=sessions,
        contact=contact,
        lead=lead,
        product=product,
        other_product=other,
        asset=detail["asset_id"],
    )
