"""The wire rules through the real app (docs/decisions.md, "Wire"): body types, responses, audit ids, limits."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest
from fastapi.testclient import TestClient
from testkit.factories import person_body

from ridercrm.web.runtime import unread_note

FORM = "application/x-www-form-urlencoded"


def audit_record(client: TestClient, headers: dict[str, str], audit_id: str) -> dict[str, Any]:
    response = client.get(f"/admin/audit/{audit_id}", headers=headers)
    assert response.status_code == 200, response.text
    record: dict[str, Any] = response.json()
    return record


def assert_audited(
    client: TestClient,
    headers: dict[str, str],
    response: httpx.Response,
    *,
    base: str = "",
) -> dict[str, Any]:
    """The response carries an X-Audit-Id that names a stored record of this response."""
    audit_id = response.headers.get("x-audit-id")
    assert audit_id, f"no X-Audit-Id on a {response.status_code} response"
    assert len(audit_id) == 18
    assert audit_id.startswith("a0A")
    found = client.get(f"{base}/admin/audit/{audit_id}", headers=headers)
    assert found.status_code == 200, found.text
    record: dict[str, Any] = found.json()
    assert record["id"] == audit_id
    assert record["response_status"] == response.status_code
    return record


def read_person(client: TestClient, headers: dict[str, str], person_id: str) -> dict[str, Any]:
    response = client.get(f"/admin/people/{person_id}", headers=headers)
    assert response.status_code == 200, response.text
    person: dict[str, Any] = response.json()
    return person


# --- the four request types ------------------------------------------------------------


def _json_text() -> str:
    # Not ASCII-escaped: "Zoë" travels as the charset's own bytes.
    return json.dumps(person_body(first_name="Zoë", postcode=800, opt_in=True), ensure_ascii=False)


def _json_body() -> bytes:
    return _json_text().encode()


def _form_fields() -> bytes:
    fields = {k: str(v) for k, v in person_body(first_name="Zoë", postcode="0800").items()}
    fields["opt_in"] = "true"
    return urlencode(fields).encode()


BODIES: list[tuple[str, Callable[[], bytes]]] = [
    ("application/json", _json_body),
    ("text/json", _json_body),
    ("text/plain", _json_body),
    ("text/plain; charset=utf-8", _json_body),
    (FORM, _json_body),
    (FORM, _form_fields),
    ("application/json; charset=utf-16", lambda: _json_text().encode("utf-16")),
    ("text/plain; charset=iso-8859-1", lambda: _json_text().encode("latin-1")),
]


@pytest.mark.parametrize(
    ("content_type", "make_body"),
    BODIES,
    ids=[
        "json",
        "text-json",
        "text-plain",
        "text-plain-utf8",
        "form-json",
        "form-fields",
        "utf16",
        "latin1",
    ],
)
def test_each_request_type_creates_the_person(
    client: TestClient,
    admin_headers: dict[str, str],
    content_type: str,
    make_body: Callable[[], bytes],
) -> None:
    response = client.post(
        "/admin/contacts",
        content=make_body(),
        headers={**admin_headers, "Content-Type": content_type},
    )
    assert response.status_code == 201, response.text
    person = read_person(client, admin_headers, response.json()["id"])
    assert person["first_name"] == "Zoë"
    assert person["last_name"] == "Nguyen"
    assert person["postcode"] == "0800"
    assert person["opt_in"] is True
    assert person["email"] == "ann.nguyen@example.com"
    record = assert_audited(client, admin_headers, response)
    assert record["content_type"] == content_type


def test_form_with_fields_whose_values_are_json(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    raw = b"first_name=Ann&last_name=%22Lee%22&opt_in=false&postcode=3064"
    response = client.post(
        "/admin/contacts", content=raw, headers={**admin_headers, "Content-Type": FORM}
    )
    assert response.status_code == 201, response.text
    person = read_person(client, admin_headers, response.json()["id"])
    assert (person["first_name"], person["last_name"], person["opt_in"]) == ("Ann", "Lee", False)


def test_missing_content_type_is_read_as_json(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post("/admin/contacts", content=_json_body(), headers=admin_headers)
    assert response.status_code == 201, response.text
    assert read_person(client, admin_headers, response.json()["id"])["first_name"] == "Zoë"


# --- response types -------------------------------------------------------------------


def test_responses_are_application_json_by_default(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post("/admin/contacts", json=person_body(), headers=admin_headers)
    assert response.status_code == 201
    assert response.headers["content-type"] == "application/json"
    assert response.json()["id"].startswith("003")


@pytest.mark.parametrize("accept", ["text/json", "text/json, application/json;q=0.5", "text/*"])
def test_text_json_when_accept_prefers_it(
    client: TestClient, admin_headers: dict[str, str], accept: str
) -> None:
    headers = {**admin_headers, "Accept": accept}
    created = client.post("/admin/contacts", json=person_body(), headers=headers)
    assert created.status_code == 201
    assert created.headers["content-type"] == "text/json; charset=utf-8"
    person_id = json.loads(created.content)["id"]

    read = client.get(f"/admin/people/{person_id}", headers=headers)
    assert read.headers["content-type"] == "text/json; charset=utf-8"
    assert json.loads(read.content)["id"] == person_id

    refused = client.post("/admin/contacts", json={"first_name": "A"}, headers=headers)
    assert refused.status_code == 400
    assert refused.headers["content-type"] == "text/json; charset=utf-8"
    assert json.loads(refused.content)["audit_id"] == refused.headers["x-audit-id"]


def test_application_json_when_accept_prefers_it(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    headers = {**admin_headers, "Accept": "text/json;q=0.4, application/json"}
    created = client.post("/admin/contacts", json=person_body(), headers=headers)
    assert created.headers["content-type"] == "application/json"


# --- X-Audit-Id on every response, naming a stored record ----------------------------


def test_every_response_carries_an_audit_id_of_a_stored_record(
    client: TestClient, make_key: Callable[..., str], admin_headers: dict[str, str]
) -> None:
    match_only = {"X-API-Key": make_key("match", name="matcher")}
    responses = {
        201: client.post("/admin/contacts", json=person_body(), headers=admin_headers),
        200: client.get("/admin/people", params={"q": "Ann"}, headers=admin_headers),
        400: client.post(
            "/admin/contacts",
            content=b"not json",
            headers={**admin_headers, "Content-Type": "application/json"},
        ),
        401: client.post("/admin/contacts", json=person_body()),
        403: client.post("/admin/contacts", json=person_body(), headers=match_only),
        404: client.get("/admin/people/003000000000000AAA", headers=admin_headers),
        405: client.get("/admin/contacts", headers=admin_headers),
        415: client.post(
            "/admin/contacts",
            content=b"<person/>",
            headers={**admin_headers, "Content-Type": "application/xml"},
        ),
    }
    seen = set()
    for status, response in responses.items():
        assert response.status_code == status, (status, response.text)
        record = assert_audited(client, admin_headers, response)
        if status >= 400:
            assert response.json()["audit_id"] == response.headers["x-audit-id"]
        seen.add(record["id"])
    assert len(seen) == len(responses)


def test_unknown_path_is_404_with_an_audit_id(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    for response in (
        client.get("/nowhere"),
        client.post("/crm/nowhere", json={}, headers=admin_headers),
        client.get("/admin/people/003000000000000AAA/extra", headers=admin_headers),
    ):
        assert response.status_code == 404
        record = assert_audited(client, admin_headers, response)
        assert record["operation"] == "unrouted"
        assert response.json()["audit_id"] == response.headers["x-audit-id"]


def test_405_names_the_allowed_method(client: TestClient, admin_headers: dict[str, str]) -> None:
    response = client.delete("/admin/contacts", headers=admin_headers)
    assert response.status_code == 405
    assert "POST" in response.headers["allow"]
    assert_audited(client, admin_headers, response)


def test_400_response_says_why(client: TestClient, admin_headers: dict[str, str]) -> None:
    response = client.post(
        "/admin/contacts",
        content=b'{"first_name": "Ann", "first_name": "Bo", "last_name": "Lee"}',
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert "duplicate key" in response.json()["detail"]
    assert "duplicate key" in response.headers["x-failure-reason"]
    record = assert_audited(client, admin_headers, response)
    assert "duplicate key" in record["failure_reason"]


# --- body size limit ------------------------------------------------------------------


@pytest.fixture
def small_client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client(max_body_bytes=500)


def _padded(size: int) -> bytes:
    """A valid person body of exactly ``size`` bytes (white space before the closing brace)."""
    body = json.dumps(person_body()).encode()
    assert len(body) <= size
    return body[:-1] + b" " * (size - len(body)) + b"}"


def test_body_over_the_limit_is_413(
    small_client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = small_client.post(
        "/admin/contacts",
        content=_padded(501),
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 413
    assert "500 bytes" in response.json()["detail"]
    assert_audited(small_client, admin_headers, response)
    search = small_client.get("/admin/people", params={"q": "Nguyen"}, headers=admin_headers)
    assert search.json()["people"] == []


def test_body_at_the_limit_is_accepted(
    small_client: TestClient, admin_headers: dict[str, str]
) -> None:
    body = _padded(500)
    assert len(body) == 500
    response = small_client.post(
        "/admin/contacts", content=body, headers={**admin_headers, "Content-Type": "text/json"}
    )
    assert response.status_code == 201, response.text


def test_streamed_body_without_length_over_the_limit_is_413(
    small_client: TestClient, admin_headers: dict[str, str]
) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(10):
            yield b" " * 100

    response = small_client.post(
        "/admin/contacts",
        content=chunks(),
        headers={**admin_headers, "Content-Type": "application/json"},
    )
    assert "content-length" not in response.request.headers
    assert response.status_code == 413
    record = assert_audited(small_client, admin_headers, response)
    assert record["failure_reason"] == "body is larger than 500 bytes"


def test_an_oversized_body_without_a_key_is_401_and_never_read(
    small_client: TestClient, admin_headers: dict[str, str]
) -> None:
    # The key is checked first (issue 10): a refused request's body is not read or stored.
    response = small_client.post("/admin/contacts", content=b" " * 1000)
    assert response.status_code == 401
    record = assert_audited(small_client, admin_headers, response)
    assert record["request_body"] == unread_note("1000")


# --- types and garbage ----------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    ["application/xml", "text/xml", "multipart/form-data; boundary=x", "application/octet-stream"],
)
def test_other_content_types_are_415(
    client: TestClient, admin_headers: dict[str, str], content_type: str
) -> None:
    response = client.post(
        "/admin/contacts",
        content=_json_body(),
        headers={**admin_headers, "Content-Type": content_type},
    )
    assert response.status_code == 415
    assert content_type.split(";")[0] in response.json()["detail"]
    assert_audited(client, admin_headers, response)


GARBAGE: list[tuple[str, bytes, str]] = [
    ("invalid utf-8", b'{"first_name": "\xff\xfe", "last_name": "Lee"}', "application/json"),
    ("nul bytes", b'{"first_name": "A\x00", "last_name": "\x00"}', "application/json"),
    ("only nul bytes", b"\x00" * 64, "text/plain"),
    ("escaped nul", b'{"first_name": "A\\u0000", "last_name": "Lee"}', "application/json"),
    ("nul in a form", b"first_name=A%00&last_name=Lee", FORM),
    ("deep nesting", b"[" * 100_000 + b"]" * 100_000, "application/json"),
    ("deep objects", b'{"a":' * 50_000 + b"1" + b"}" * 50_000, "text/json"),
    ("unterminated nesting", b"[" * 200_000, "application/json"),
    ("deep form", b"a" + b"[b]" * 5_000 + b"=1", FORM),
    (
        "10,000-digit number",
        b'{"first_name": "A", "last_name": "B", "postcode": ' + b"9" * 10_000 + b"}",
        "application/json",
    ),
    ("huge float", b'{"first_name": "A", "last_name": "B", "postcode": 1e999}', "application/json"),
    ("nan", b'{"first_name": "A", "last_name": "B", "postcode": NaN}', "application/json"),
    ("not an object", b"[1, 2, 3]", "application/json"),
    ("a string", b'"Ann"', "text/plain"),
    ("base64 charset", b"eyJhIjogMX0=", "application/json; charset=base64"),
    ("unknown charset", b"{}", "application/json; charset=klingon"),
    ("odd utf-16", b'{\x00"\x00', "application/json; charset=utf-16-le"),
    (
        "utf-16 garbage",
        '{"first_name": "\x00"}'.encode("utf-16"),
        "application/json; charset=utf-16",
    ),
    ("long content type", b"{}", "application/json; x=" + "y" * 400),
    ("empty", b"", "application/json"),
    ("wrong types", b'{"first_name": ["A"], "last_name": {"x": 1}, "opt_in": 7}', "text/json"),
    (
        "very long name",
        json.dumps({"first_name": "A" * 100_000, "last_name": "B"}).encode(),
        "application/json",
    ),
]


@pytest.mark.parametrize(
    ("raw", "content_type"), [g[1:] for g in GARBAGE], ids=[g[0] for g in GARBAGE]
)
def test_garbage_never_gives_a_server_error(
    client: TestClient, admin_headers: dict[str, str], raw: bytes, content_type: str
) -> None:
    assert len(raw) < client.app.state.context.settings.max_body_bytes  # type: ignore[attr-defined]
    response = client.post(
        "/admin/contacts", content=raw, headers={**admin_headers, "Content-Type": content_type}
    )
    assert 400 <= response.status_code < 500, response.text
    record = assert_audited(client, admin_headers, response)
    assert record["failure_reason"]
    assert client.get("/admin/people", params={"q": "A"}, headers=admin_headers).json() == {
        "people": [],
        "next_before": None,
    }


@pytest.mark.parametrize(
    "path",
    [
        "/admin/people/%00",
        "/admin/people/003%00000000000AAA",
        "/admin/audit/%00",
        "/nowhere%00",
        "/admin/people/" + "x" * 1_000,
        "/" + "x" * 2_000,
        "/admin/people/%FF%FE",
        "/admin/people/%E2%80%AE",
    ],
)
def test_garbage_paths_never_give_a_server_error(
    client: TestClient, admin_headers: dict[str, str], path: str
) -> None:
    response = client.get(path, headers=admin_headers)
    assert response.status_code == 404, response.text
    assert_audited(client, admin_headers, response)


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/admin/people", {"q": "Ann\x00"}),
        ("/admin/people", {"q": "x" * 200}),
        ("/admin/audit", {"operation": "admin.\x00"}),
        ("/admin/audit", {"operation": "x" * 41}),
        ("/admin/audit", {"since": "\x00"}),
    ],
)
def test_garbage_query_strings_never_give_a_server_error(
    client: TestClient, admin_headers: dict[str, str], path: str, params: dict[str, str]
) -> None:
    response = client.get(path, params=params, headers=admin_headers)
    assert response.status_code in (200, 400), response.text
    assert_audited(client, admin_headers, response)


OPERATIONS = [
    ("/crm/people/rider_courses", "people_product"),
    ("/crm/modify", "people_data"),
    ("/crm/people/match", "person_data"),
    ("/crm/leads/match", "person_data"),
]


@pytest.mark.parametrize(("path", "key"), OPERATIONS)
@pytest.mark.parametrize(
    "value",
    ["\x00", "003\x00000000000AAA", "\ud800", "x" * 10_000, 10**400, -1.5e308, [], {}],
    ids=["nul", "nul-in-id", "lone-surrogate", "long", "huge-int", "huge-float", "list", "object"],
)
def test_odd_values_in_the_operations_never_give_a_server_error(
    client: TestClient, admin_headers: dict[str, str], path: str, key: str, value: Any
) -> None:
    fields = [
        "ID", "person_id", "product_id", "asset_id", "booking_number", "first_name",
        "last_name", "email", "postcode", "date_of_birth", "mobile_phone", "assets",
        "course_status", "course_datetime", "lead_source", "street",
    ]  # fmt: skip
    item = {name: value for name in fields}
    body = {key: [item] if key != "person_data" else item}
    raw = json.dumps(body).encode()
    response = client.post(
        path, content=raw, headers={**admin_headers, "Content-Type": "application/json"}
    )
    assert response.status_code < 500, response.text
    assert_audited(client, admin_headers, response)


@pytest.mark.parametrize(
    "headers",
    [
        {"Authorization": "Bearer " + "x" * 5_000},
        {"X-API-Key": b"\xc3\xa9\xff"},
        {"Idempotency-Key": "k" * 256},
        {"Idempotency-Key": " "},
        {"Accept": "text/json;q=" + "9" * 1_000},
        {"Accept": ";;;,,,*/*;q=x"},
    ],
)
def test_garbage_headers_never_give_a_server_error(
    client: TestClient, admin_headers: dict[str, str], headers: dict[str, Any]
) -> None:
    merged = {**admin_headers, **headers}
    response = client.post("/admin/contacts", json=person_body(), headers=merged)
    assert response.status_code < 500, response.text
    assert_audited(client, admin_headers, response)


# --- base path ------------------------------------------------------------------------


@pytest.mark.parametrize("configured", ["/services/apexrest", "services/apexrest/"])
def test_base_path_moves_the_api_but_not_health(
    make_client: Callable[..., TestClient], admin_headers: dict[str, str], configured: str
) -> None:
    client = make_client(base_path=configured)
    base = "/services/apexrest"
    created = client.post(f"{base}/admin/contacts", json=person_body(), headers=admin_headers)
    assert created.status_code == 201, created.text
    person_id = created.json()["id"]
    assert client.get(f"{base}/admin/people/{person_id}", headers=admin_headers).status_code == 200
    record = assert_audited(client, admin_headers, created, base=base)
    assert record["path"] == f"{base}/admin/contacts"

    moved = client.get(f"/admin/people/{person_id}", headers=admin_headers)
    assert moved.status_code == 404
    assert_audited(client, admin_headers, moved, base=base)

    assert client.get("/healthz").status_code == 200
    assert client.get("/readyz").status_code == 200
    assert client.get(f"{base}/healthz").status_code == 404
