"""Small builders of valid request bodies and stored records for tests."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # bench/ imports these builders without the test client
    from fastapi.testclient import TestClient


def person_body(**overrides: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "first_name": "Ann",
        "last_name": "Nguyen",
        "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com",
        "postcode": "3064",
        "mobile_phone": "0412 345 678",
        "drivers_license": "L1234567",
        "license_type": "CYL",
        "street": "12 Main St",
        "city": "Craigieburn",
        "state": "VIC",
        "country": "Australia",
    }
    body.update(overrides)
    return body


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


def create_person(
    client: TestClient, headers: dict[str, str], kind: str = "contacts", **overrides: Any
) -> str:
    response = client.post(f"/admin/{kind}", json=person_body(**overrides), headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def create_product(client: TestClient, headers: dict[str, str], **overrides: Any) -> str:
    body = {"name": "Learner Approved Pre-Licence (Somerton)", "code": "LAP-SOM", "price": "249.00"}
    body.update(overrides)
    response = client.post("/admin/products", json=body, headers=headers)
    assert response.status_code == 201, response.text
    return str(response.json()["id"])
