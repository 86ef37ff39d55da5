"""GET /crm/products on the wire: the list in its order, every price with two decimals,
the body in the one JSON form every answer has (compact, UTF-8, the interface's escapes),
whichever JSON type the client asks for."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from testkit.factories import create_product

# Quotes, a backslash, controls, a line separator, accents and an emoji: what a product
# name typed into a form may hold.
AWKWARD = 'Ünïcødé "Rider" \\ / \x01\n\t\u2028 🏍 <&>'


@pytest.mark.parametrize(
    ("accept", "content_type"),
    [
        (None, "application/json"),
        ("application/json", "application/json"),
        ("text/json", "text/json; charset=utf-8"),
    ],
)
def test_the_product_list_is_the_compact_json_of_every_product(
    client: TestClient, make_key: Callable[..., str], accept: str | None, content_type: str
) -> None:
    admin = {"Authorization": f"Bearer {make_key('admin')}"}
    create_product(client, admin, name="Zulu course", code="Z1", price="380.5")
    create_product(client, admin, name=AWKWARD, code="A\u00e91", price="0")
    create_product(client, admin, name="Middle", code="M1", price="249.00", active=False)

    headers = {"Authorization": f"Bearer {make_key('products')}"}
    if accept is not None:
        headers["Accept"] = accept
    response = client.get("/crm/products", headers=headers)

    assert response.status_code == 200
    assert response.headers["content-type"] == content_type
    listed = json.loads(response.content)
    assert [(p["name"], p["code"], p["price"], p["active"]) for p in listed] == [
        ("Middle", "M1", "249.00", False),
        ("Zulu course", "Z1", "380.50", True),
        (AWKWARD, "A\u00e91", "0.00", True),
    ]
    assert all(p["id"].startswith("01t") and len(p["id"]) == 18 for p in listed)
    compact = json.dumps(listed, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    assert response.content == compact
