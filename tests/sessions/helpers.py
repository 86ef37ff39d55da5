"""Builders for the sessions tests."""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

from fastapi.testclient import TestClient
from testkit.factories import create_person, create_product, new_booking

PATH = "/crm/people/rider_courses"
START = "2026-12-05 08:30:00"
END = "2026-12-05 16:30:00"
_numbers = itertools.count(1)


def _eight_hours_after(start: str) -> str:
    """A session's end, a day's course after its start (sessions end after they start)."""
    moment = dt.datetime.strptime(start, "%Y-%m-%d %H:%M:%S") + dt.timedelta(hours=8)
    return moment.strftime("%Y-%m-%d %H:%M:%S")


class Seats:
    """A client with a product, and helpers to make sessions and book them."""

    def __init__(self, client: TestClient, headers: dict[str, str], **product: Any) -> None:
        self.client = client
        self.headers = headers
        self.product = create_product(client, headers, **product)

    def person(self, **overrides: Any) -> str:
        n = next(_numbers)
        overrides.setdefault("email", f"rider{n}@example.com")
        overrides.setdefault("first_name", f"Rider{n}")
        return create_person(self.client, self.headers, **overrides)

    def create(self, **fields: Any) -> dict[str, Any]:
        start = fields.get("course_datetime", START)
        body = {
            "product_id": self.product,
            "location": "somerton",
            "course_datetime": START,
            "course_date_end": _eight_hours_after(start) if start != START else END,
            "capacity": 3,
            **fields,
        }
        response = self.client.post("/admin/sessions", json=body, headers=self.headers)
        assert response.status_code == 201, response.text
        return dict(response.json())

    def read(self, session_id: str) -> dict[str, Any]:
        response = self.client.get(f"/admin/sessions/{session_id}", headers=self.headers)
        assert response.status_code == 200, response.text
        return dict(response.json())

    def item(self, person_id: str, **overrides: Any) -> dict[str, Any]:
        overrides.setdefault("booking_number", f"SB-{next(_numbers)}")
        return new_booking(person_id, self.product, **overrides)

    def send(self, *items: dict[str, Any]) -> list[dict[str, Any]]:
        response = self.client.post(
            PATH, json={"people_product": list(items)}, headers=self.headers
        )
        assert response.status_code == 200, response.text
        return list(response.json()["details"])

    def book(self, person_id: str | None = None, **overrides: Any) -> dict[str, Any]:
        return self.send(self.item(person_id or self.person(), **overrides))[0]

    def waitlist(self, session_id: str) -> list[dict[str, Any]]:
        response = self.client.get(f"/crm/sessions/{session_id}/waitlist", headers=self.headers)
        assert response.status_code == 200, response.text
        return list(response.json())

    def states(self, session_id: str) -> dict[str, str]:
        """Each person on the session's waiting list, with the state of their entry."""
        return {entry["person_id"]: entry["state"] for entry in self.waitlist(session_id)}

    def join(self, session_id: str, person_id: str) -> Any:
        return self.client.post(
            f"/crm/sessions/{session_id}/waitlist",
            json={"person_id": person_id},
            headers=self.headers,
        )
