"""A failure reason quoting what the client sent goes into `X-Failure-Reason`; a value the
HTTP layer refuses in a header (a trailing space, a control character) must never cost
the answer: every admin route answers its 400/404 over `serve`'s HTTP implementation
(h11), and nothing is logged as an error."""

from __future__ import annotations

import logging
import re

import httpx
import pytest

from ridercrm.app import create_app
from ridercrm.config import Settings
from tests.live import live_server

AWKWARD = ["x%20", "%20x", "x%09", "x%0B"]


def admin_requests(settings: Settings) -> list[tuple[str, str]]:
    """Every admin route with a path parameter, and every admin listing with a `before`
    (or another text) query parameter, given an awkward value."""
    document = create_app(settings).openapi()
    found: list[tuple[str, str]] = []
    for path, operations in document["paths"].items():
        if not path.startswith("/admin"):
            continue
        for method, operation in operations.items():
            if "{" in path:
                found.append((method.upper(), re.sub(r"\{[^}]+\}", "{value}", path)))
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "query" and parameter["name"] in ("before", "since"):
                    found.append((method.upper(), f"{path}?{parameter['name']}={{value}}"))
    return found


def test_an_awkward_value_in_an_admin_path_or_query_gets_an_answer(
    settings: Settings, admin_headers: dict[str, str], caplog: pytest.LogCaptureFixture
) -> None:
    requests = admin_requests(settings)
    assert len(requests) >= 12, requests
    with live_server(settings, http="h11") as base, httpx.Client(base_url=base) as http:
        for method, template in requests:
            for value in AWKWARD:
                target = template.replace("{value}", value)
                body = {"decision": "skip"} if target.endswith("/decide") else {}
                try:
                    response = http.request(
                        method,
                        target,
                        headers=admin_headers,
                        json=body if method == "POST" else None,
                    )
                except httpx.TransportError as exc:
                    pytest.fail(f"{method} {target}: no answer ({exc!r})")
                assert response.status_code in (400, 404, 422), (method, target, response.text)
                assert response.headers["x-audit-id"], (method, target)
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]
