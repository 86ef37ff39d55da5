"""/docs and /redoc work on an intranet: every script, style and icon comes from here."""

from __future__ import annotations

import re

import pytest
from fastapi.testclient import TestClient

# What a browser fetches from a page: src/href attributes, Swagger UI's url, Redoc's spec-url.
_FETCHED = re.compile(r"""(?:src|href|spec-url)=["']([^"']+)["']|\burl:\s*'([^']+)'""")
# An absolute or protocol-relative address: another host.
_OTHER_HOST = re.compile(r"(?i)(?:https?:)?//[a-z0-9-]+(?:\.[a-z0-9-]+)+")
# Styles fetch fonts and images through url(...).
_CSS_URL = re.compile(r"url\(\s*['\"]?([^'\")]+)")


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_documentation_pages_load_nothing_from_another_host(client: TestClient, page: str) -> None:
    response = client.get(page)
    assert response.status_code == 200
    html = response.text
    assert _OTHER_HOST.findall(html) == []
    fetched = [a or b for a, b in _FETCHED.findall(html)]
    assert "/openapi.json" in fetched
    scripts = [url for url in fetched if url.endswith(".js")]
    assert scripts, "the page has no script of its own"
    for url in fetched:
        assert url.startswith("/"), url
        assert not url.startswith("//"), url
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.content, url
        assert "x-audit-id" not in asset.headers  # assets are not audited, as the pages
        if url.endswith(".css"):
            external = [u for u in _CSS_URL.findall(asset.text) if not u.startswith("data:")]
            assert external == [], url


def test_swagger_ui_does_not_send_the_document_to_the_online_validator(
    client: TestClient,
) -> None:
    assert '"validatorUrl": null' in client.get("/docs").text
