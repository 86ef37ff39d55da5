"""Small builders of valid request bodies and stored records for tests."""

from __future__ import annotations

from typing import Any

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
