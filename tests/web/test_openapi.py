"""The OpenAPI document describes the real interface, and cannot silently lose it.

tests/fuzz/test_schemathesis.py checks every response against the document; these
check that the document keeps what clients rely on: the four operations with their
four request media types, operation 1's plain text failure, the headers, the keys.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import urlencode

import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from ridercrm.app import create_app
from ridercrm.config import Settings

OPERATIONS = (
    "/crm/people/rider_courses",
    "/crm/modify",
    "/crm/people/match",
    "/crm/leads/match",
)
REQUEST_MEDIA = {
    "application/json",
    "text/json",
    "text/plain",
    "application/x-www-form-urlencoded",
}
REFUSALS = ("400", "401", "403", "409", "413", "415", "422", "429")
FAILURE_TEXT = "Status update failed."


def served_document(base_path: str = "") -> dict[str, Any]:
    """The document as ``GET /openapi.json`` serves it (no database is touched)."""
    app = create_app(Settings(database_url="sqlite://", base_path=base_path))
    with TestClient(app) as client:
        response = client.get("/openapi.json")
    app.state.context.engine.dispose()
    assert response.status_code == 200
    assert "x-audit-id" not in response.headers
    result: dict[str, Any] = response.json()
    return result


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return served_document()


def operation(doc: dict[str, Any], path: str, method: str = "post") -> dict[str, Any]:
    result: dict[str, Any] = doc["paths"][path][method]
    return result


def resolve(doc: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in schema:
        result: dict[str, Any] = doc["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]]
        return result
    return schema


@pytest.mark.parametrize("base_path", ["", "/services/apexrest"])
def test_the_four_operations_take_the_four_request_types(base_path: str) -> None:
    doc = served_document(base_path)
    for path in OPERATIONS:
        post = operation(doc, base_path + path)
        content = post["requestBody"]["content"]
        assert set(content) == REQUEST_MEDIA, path
        body = resolve(doc, content["application/json"]["schema"])
        for media in ("text/json", "text/plain"):
            assert content[media]["schema"] == content["application/json"]["schema"]
        form = content["application/x-www-form-urlencoded"]
        variants = form["schema"]["oneOf"]
        # JSON-valued fields, JSON text as the raw body, bracket fields.
        assert variants[0] == content["application/json"]["schema"]
        assert variants[1]["type"] == "string"
        assert variants[1]["contentMediaType"] == "application/json"
        assert variants[2]["patternProperties"]
        assert set(form["encoding"]) == set(body["properties"])
        assert {"json_fields", "json_text", "bracket_fields"} <= set(form["examples"])
        assert "Idempotency-Key" in [parameter["name"] for parameter in post["parameters"]]


def test_rider_courses_fails_as_plain_text_with_its_reason_in_a_header(
    doc: dict[str, Any],
) -> None:
    responses = operation(doc, "/crm/people/rider_courses")["responses"]
    assert set(responses["200"]["content"]) == {"application/json", "text/json"}
    for status in REFUSALS:
        response = responses[status]
        assert set(response["content"]) == {"text/plain"}, status
        assert response["content"]["text/plain"]["schema"]["const"] == FAILURE_TEXT
        assert response["headers"]["X-Failure-Reason"]["required"] is True
        assert response["headers"]["X-Audit-Id"]["required"] is True
    assert "WWW-Authenticate" in responses["401"]["headers"]
    assert "Retry-After" in responses["429"]["headers"]


def test_every_response_shape_is_named(doc: dict[str, Any]) -> None:
    expected = {
        "/crm/people/rider_courses": ("RiderCoursesResponse", None),
        "/crm/modify": ("ModifyResponse", "ModifyRefusal"),
        "/crm/people/match": ("MatchResponse", "MatchRefusal"),
        "/crm/leads/match": ("MatchResponse", "MatchRefusal"),
    }
    for path, (ok, refusal) in expected.items():
        responses = operation(doc, path)["responses"]
        for media in ("application/json", "text/json"):
            assert responses["200"]["content"][media]["schema"]["$ref"].endswith("/" + ok)
            if refusal is not None:
                for status in REFUSALS:
                    schema = responses[status]["content"][media]["schema"]
                    assert schema["$ref"].endswith("/" + refusal), (path, status)
    courses = doc["components"]["schemas"]["RiderCoursesResponse"]
    assert set(courses["required"]) == {"details", "audit_id"}
    match = doc["components"]["schemas"]["MatchResponse"]
    assert set(match["properties"]) == {"delivery", "receipt", "ID", "audit_ID", "match"}
    assert "match" not in match["required"]


def test_every_route_names_its_keys_and_audit_header(doc: dict[str, Any]) -> None:
    schemes = doc["components"]["securitySchemes"]
    assert schemes["bearer"] == {**schemes["bearer"], "type": "http", "scheme": "bearer"}
    assert schemes["apiKey"] == {
        **schemes["apiKey"],
        "type": "apiKey",
        "in": "header",
        "name": "X-API-Key",
    }
    assert doc["security"] == [{"bearer": []}, {"apiKey": []}]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for path, methods in doc["paths"].items():
        for method, described in methods.items():
            if path in ("/healthz", "/readyz", "/metrics"):
                assert described["security"] == []
                continue
            for status, response in described["responses"].items():
                if status != "503":
                    assert "X-Audit-Id" in response["headers"], (method, path, status)
                    assert "422" not in described["responses"] or method == "post"
            if method == "post":
                names = [parameter["name"] for parameter in described["parameters"]]
                assert "Idempotency-Key" in names, path
    products = operation(doc, "/crm/products", "get")["responses"]["200"]["content"]
    assert products["application/json"]["schema"]["type"] == "array"


def _send(client: TestClient, path: str, media: str, example: Any, headers: dict[str, str]) -> Any:
    if media == "application/x-www-form-urlencoded":
        if isinstance(example, str):
            content = example
        else:
            content = urlencode(
                {k: v if isinstance(v, str) else json.dumps(v) for k, v in example.items()}
            )
    else:
        content = json.dumps(example)
    return client.post(path, content=content, headers={**headers, "Content-Type": media})


def test_the_documented_examples_are_accepted_in_every_form(
    client: TestClient, admin_headers: dict[str, str], doc: dict[str, Any]
) -> None:
    for path in OPERATIONS:
        content = operation(doc, path)["requestBody"]["content"]
        for media in REQUEST_MEDIA - {"application/x-www-form-urlencoded"}:
            response = _send(client, path, media, content[media]["example"], admin_headers)
            assert response.status_code == 200, (path, media, response.text)
        form = content["application/x-www-form-urlencoded"]["examples"]
        for name, example in form.items():
            response = _send(
                client, path, "application/x-www-form-urlencoded", example["value"], admin_headers
            )
            assert response.status_code == 200, (path, name, response.text)
            if path == "/crm/leads/match":
                assert "match" in response.json(), name


def _conforms(doc: dict[str, Any], path: str, response: Any) -> None:
    """The response's status, media type, body and headers are the documented ones."""
    operation = schemathesis.openapi.from_dict(doc)[path]["POST"]
    operation.Case(body={}, media_type="application/json").validate_response(
        response,
        checks=[
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
            response_headers_conformance,
        ],
    )


@pytest.mark.parametrize("path", OPERATIONS)
def test_refusals_the_fuzzing_does_not_reach_are_documented(
    make_client: Any, make_key: Any, doc: dict[str, Any], path: str
) -> None:
    """413, 415, 422 and 429 in the operation's shape, as the document says (the fuzz
    run has no rate limit and sends small bodies, so it rarely or never gets these)."""
    auth = {"Authorization": f"Bearer {make_key('admin')}"}
    key = "people_product" if "courses" in path else "people_data"
    if "match" in path:
        body: dict[str, Any] = {"person_data": {}}
    else:
        body = {key: [{}, {}]}
    client = make_client(max_body_bytes=256, max_items=1, rate_limit="off")
    refusals = {
        413: client.post(path, content="{" + " " * 300 + "}", headers=auth),
        415: client.post(path, content="{}", headers={**auth, "Content-Type": "text/html"}),
    }
    if "match" not in path:
        refusals[413] = client.post(path, json=body, headers=auth)
    first = client.post(path, json=body, headers={**auth, "Idempotency-Key": "k1"})
    refusals[422] = client.post(path, json={}, headers={**auth, "Idempotency-Key": "k1"})
    limited = make_client(rate_limit="1/minute")
    limited.post(path, json=body, headers=auth)
    refusals[429] = limited.post(path, json=body, headers=auth)
    for status, response in refusals.items():
        assert response.status_code == status, (status, response.text)
        _conforms(doc, path, response)
    _conforms(doc, path, first)
    if "courses" in path:
        assert refusals[429].text == FAILURE_TEXT
        assert int(refusals[429].headers["Retry-After"]) >= 0


@pytest.mark.parametrize("word", ["yes", "Off", "", " 1 ", "TRUE", "no"])
def test_a_bracket_forms_explain_takes_every_word_the_document_allows(
    client: TestClient, admin_headers: dict[str, str], doc: dict[str, Any], word: str
) -> None:
    """The document's explain for bracket fields is the model's rule for text, and the
    service takes each word it allows (it once listed only true, false, 1 and 0)."""
    form = operation(doc, "/crm/leads/match")["requestBody"]["content"][
        "application/x-www-form-urlencoded"
    ]
    allowed = form["schema"]["oneOf"][2]["properties"]["explain"]["anyOf"]
    assert any(
        re.fullmatch(rule["pattern"].strip("^$"), word)
        if "pattern" in rule
        else word in rule["enum"]
        for rule in allowed
    )
    fields = {**form["examples"]["bracket_fields"]["value"], "explain": word}
    response = client.post(
        "/crm/leads/match",
        content=urlencode(fields),
        headers={**admin_headers, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 200, response.text
    explained = word.strip().lower() in ("yes", "1", "true")
    assert ("match" in response.json()) is explained
