"""Numbers no database id can be, on the duplicates routes: a 400 naming them, never a 500."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

HUGE = "9" * 25


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", f"/admin/duplicates/{HUGE}"),
        ("GET", f"/admin/duplicates?before={HUGE}"),
        ("POST", f"/admin/people/merge/{HUGE}/undo"),
        ("POST", f"/admin/duplicates/{HUGE}/decide"),
    ],
)
def test_an_id_beyond_any_database_integer_is_refused(
    client: TestClient, admin_headers: dict[str, str], method: str, path: str
) -> None:
    body = {"decision": "skip"} if path.endswith("/decide") else {}
    response = client.request(
        method, path, headers=admin_headers, json=body if method == "POST" else None
    )
    assert response.status_code == 400, response.text
    assert response.headers["x-audit-id"]
