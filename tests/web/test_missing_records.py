"""A read of a record that is not stored answers 404 naming what is missing and the id as
sent, in the read's error shape, and the refusal is audited like any other answer."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

MISSING = [
    ("/admin/products/01t000000000000AAA", "no product with id 01t000000000000AAA"),
    ("/admin/products/nonsense", "no product with id nonsense"),
    ("/admin/audit/a0A000000000000AAA", "no audit record with id a0A000000000000AAA"),
    ("/admin/people/003000000000000AAA", "no person with id 003000000000000AAA"),
    ("/admin/assets/02i000000000000AAA", "no asset with id 02i000000000000AAA"),
    ("/admin/sessions/a1B000000000000AAA", "no course session with id a1B000000000000AAA"),
]


@pytest.mark.parametrize(("path", "reason"), MISSING)
def test_a_missing_record_is_404_with_its_name(
    client: TestClient, admin_headers: dict[str, str], path: str, reason: str
) -> None:
    response = client.get(path, headers=admin_headers)
    assert response.status_code == 404, response.text
    audit_id = response.headers["x-audit-id"]
    assert response.json() == {"detail": reason, "audit_id": audit_id}
    assert response.headers["x-failure-reason"] == reason
    record = client.get(f"/admin/audit/{audit_id}", headers=admin_headers).json()
    assert record["response_status"] == 404
    assert record["failure_reason"] == reason
