"""Builders for operation 1 tests."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from testkit.factories import create_person, create_product, new_booking

PATH = "/crm/people/rider_courses"


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
