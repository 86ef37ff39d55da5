"""Builders for operation 1 tests."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.factories import create_person, create_product

PATH = "/crm/people/rider_courses"


def new_booking(person_id: str, product_id: str, **overrides: Any) -> dict[str, Any]:
    """A complete new-booking item, as the interface's request sample."""
    item: dict[str, Any] = {
        "person_id": person_id,
        "product_id": product_id,
        "asset_id": "",
        "course_datetime": "2026-12-05 08:30:00",
        "course_date_end": "2026-12-05 16:30:00",
        "rider_instructor_1": "Sam Lee",
        "rider_instructor_2": "",
        "course_location": "somerton",
        "course_feedback": "",
        "booking_number": "HB-102938",
        "dealer_code": "D001",
        "course_price": "249.00",
        "booking_source": "Website",
        "course_status": "booked",
        "mobile_phone": "0412 345 678",
        "home_phone": "",
        "postcode": "3064",
        "street": "12 Main St",
        "city": "Craigieburn",
        "state": "VIC",
        "country": "Australia",
        "drivers_license": "L1234567",
        "license_type": "CYL",
        "date_of_birth": "1999-04-12",
        "opt_in": True,
    }
    item.update(overrides)
    return item


class Courses:
    """A client for operation 1 with a lead, a contact and a product ready."""

    def __init__(self, client: TestClient, headers: dict[str, str]) -> None:
        self.client = client
        self.headers = headers
        self.lead = create_person(
            client, headers, kind="leads", first_name="Lena", last_name="Lead"
        )
        self.contact = create_person(client, headers, first_name="Cody", last_name="Contact")
        self.product = create_product(client, headers)

    def send(self, *items: Any, **kwargs: Any) -> Any:
        response = self.client.post(
            PATH, json={"people_product": list(items)}, headers=self.headers, **kwargs
        )
        assert response.status_code == 200, response.text
        return response.json()

    def one(self, item: Any) -> dict[str, str]:
        body = self.send(item)
        assert len(body["details"]) == 1
        return dict(body["details"][0])

    def book(self, **overrides: Any) -> dict[str, str]:
        entry = self.one(
            new_booking(overrides.pop("person_id", self.contact), self.product, **overrides)
        )
        assert entry["delivery"] == "true", entry
        return entry

    def asset(self, asset_id: str) -> dict[str, Any]:
        response = self.client.get(f"/admin/assets/{asset_id}", headers=self.headers)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def person(self, person_id: str) -> dict[str, Any]:
        response = self.client.get(f"/admin/people/{person_id}", headers=self.headers)
        assert response.status_code == 200, response.text
        return dict(response.json())
