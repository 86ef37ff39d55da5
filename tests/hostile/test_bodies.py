"""Whole bodies that no endpoint can use: each gets its status in the endpoint's own shape,
never a 5xx, and the database is unchanged afterwards but for one audit record.

Operation 1 answers the plain text "Status update failed." with the reason in
X-Failure-Reason; operation 2 its JSON with status false; operations 3 and 4 delivery
"false"; the admin API {"detail", "errors", "audit_id"} (docs/decisions.md, Wire).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import pytest

from ridercrm.ids import RecordKind, new_id
from ridercrm.web.runtime import unread_note
from tests.hostile.conftest import (
    CONTACTS,
    FORM,
    LEADS,
    LEADS_MATCH,
    MODIFY,
    OPERATIONS,
    PEOPLE_MATCH,
    PRODUCTS,
    RIDER_COURSES,
    TARGETS,
    Target,
    World,
)

TEN_MIB = 10 * 1024 * 1024
MANY = 10_000


def _valid(world: World, target: Target) -> bytes:
    return json.dumps(target.body(world.valid_item(target)), ensure_ascii=False).encode()


def _into_first_string(raw: bytes, inserted: bytes) -> bytes:
    """``raw`` with ``inserted`` put at the start of its first string value."""
    assert b'": "' in raw
    return raw.replace(b'": "', b'": "' + inserted, 1)


def _item_field(world: World, target: Target, name: str, literal: bytes) -> bytes:
    """A valid body whose item's ``name`` field is the JSON text ``literal`` (may be invalid)."""
    item = world.valid_item(target)
    item[name] = "@@HERE@@"
    return json.dumps(target.body(item)).encode().replace(b'"@@HERE@@"', literal)


def _duplicate_in_item(world: World, target: Target) -> bytes:
    item = world.valid_item(target)
    first = next(iter(item))
    raw = json.dumps(target.body(item)).encode()
    key = json.dumps(first).encode() + b": "
    return raw.replace(key, key + b'"x", ' + key, 1)


def _duplicate_at_top(world: World, target: Target) -> bytes:
    if target.key is None:
        return b'{"first_name": "Ann", "first_name": "Bo", "last_name": "Lee", "name": "x"}'
    key = json.dumps(target.key).encode()
    raw = _valid(world, target)
    return raw.replace(b"{" + key + b": ", b"{" + key + b": [], " + key + b": ", 1)


def _wrong_shape(target: Target) -> str:
    """The reason given for a body that is JSON but not the endpoint's object."""
    if target.key is None:
        return "body: must be an object of fields"
    return f"body: must be an object with a {target.key} {'array' if target.many else 'object'}"


def _wrong_field(target: Target) -> str:
    """The reason given for a body whose item field is missing or not an array (object)."""
    return f"{target.key}: must be an {'array of items' if target.many else 'object of fields'}"


def _multipart(world: World, target: Target) -> bytes:
    value = json.dumps(target.body(world.valid_item(target)))
    return (
        '--XyZ\r\nContent-Disposition: form-data; name="body"\r\n'
        "Content-Type: application/json\r\n\r\n" + value + "\r\n--XyZ--\r\n"
    ).encode()


def _xml(world: World, target: Target) -> bytes:
    item = world.valid_item(target)
    fields = "".join(f"<{k}>{v}</{k}>" for k, v in item.items() if isinstance(v, str))
    return f'<?xml version="1.0"?><{target.key or "record"}>{fields}</{target.key or "record"}>'.encode()


def _form(world: World, target: Target) -> bytes:
    item = world.valid_item(target)
    prefix = f"{target.key}[0]" if target.many else target.key
    pairs = [(f"{prefix}[{k}]" if prefix else k, str(v)) for k, v in item.items() if v is not None]
    return urlencode(pairs).encode()


Body = Callable[[World, Target], bytes]


@dataclass(frozen=True)
class Case:
    name: str
    body: Body
    content_type: str | None
    status: int
    reason: Callable[[Target], str]


def _same(reason: str) -> Callable[[Target], str]:
    return lambda _target: reason


CASES = [
    # --- malformed JSON
    Case("truncated", lambda w, t: _valid(w, t)[:-7], "application/json", 400, _same("body is not JSON")),
    Case("trailing-garbage", lambda w, t: _valid(w, t) + b" }", "application/json", 400, _same("body is not JSON")),
    Case("single-quotes", lambda w, t: _valid(w, t).replace(b'"', b"'"), "application/json", 400, _same("body is not JSON")),
    Case("unquoted-keys", lambda w, t: b"{people_data: [], first_name: 1}", "application/json", 400, _same("body is not JSON")),
    Case("trailing-comma", lambda w, t: _valid(w, t)[:-1] + b",}", "application/json", 400, _same("body is not JSON")),
    Case("comment", lambda w, t: b"/* hi */" + _valid(w, t), "application/json", 400, _same("body is not JSON")),
    Case("two-documents", lambda w, t: _valid(w, t) * 2, "application/json", 400, _same("body is not JSON")),
    Case("empty", lambda w, t: b"", "application/json", 400, _same("body is empty")),
    Case("white-space", lambda w, t: b" \r\n\t ", "text/plain", 400, _same("body is empty")),
    Case("bom-only", lambda w, t: b"\xef\xbb\xbf", "application/json", 400, _same("body is empty")),
    # --- deep nesting
    Case("deep-arrays", lambda w, t: b"[" * 100_000 + b"]" * 100_000, "application/json", 400, _same("nested too deeply")),
    Case("deep-objects", lambda w, t: b'{"a":' * 20_000 + b"1" + b"}" * 20_000, "text/json", 400, _same("nested too deeply")),
    Case("deep-in-a-field", lambda w, t: _item_field(w, t, "street", b"[" * 40 + b"]" * 40), "application/json", 400, _same("nested too deeply")),
    Case("deep-unterminated", lambda w, t: b"[" * 200_000, "application/json", 400, _same("nested too deeply")),
    Case("deep-form", lambda w, t: b"a" + b"[b]" * 5_000 + b"=1", FORM, 400, _same("nested too deeply")),
    # --- numbers beyond what any field holds
    Case("nan", lambda w, t: _item_field(w, t, "postcode", b"NaN"), "application/json", 400, _same("NaN is not a JSON number")),
    Case("infinity", lambda w, t: _item_field(w, t, "postcode", b"-Infinity"), "application/json", 400, _same("is not a JSON number")),
    Case("float-overflow", lambda w, t: _item_field(w, t, "postcode", b"1e999"), "application/json", 400, _same("postcode: is too large a number")),
    Case("5000-digit-integer", lambda w, t: _item_field(w, t, "postcode", b"9" * 5000), "application/json", 400, _same("postcode: has too many digits (5000;")),
    Case("5000-digit-float", lambda w, t: _item_field(w, t, "postcode", b"9" * 5000 + b".5"), "application/json", 400, _same("postcode: is too large a number)")),
    # --- NUL bytes and bytes that are no text
    Case("raw-nul", lambda w, t: _into_first_string(_valid(w, t), b"\x00"), "application/json", 400, _same("body is not JSON")),
    Case("raw-control", lambda w, t: _into_first_string(_valid(w, t), b"\x1b"), "application/json", 400, _same("body is not JSON")),
    Case("only-nul", lambda w, t: b"\x00" * 64, "text/plain", 400, _same("body is not JSON")),
    Case("invalid-utf8", lambda w, t: _into_first_string(_valid(w, t), b"\xff\xfe"), "application/json", 400, _same("not valid utf-8")),
    Case("overlong-utf8", lambda w, t: _into_first_string(_valid(w, t), b"\xc0\xaf"), "application/json", 400, _same("not valid utf-8")),
    Case("utf8-surrogate", lambda w, t: _into_first_string(_valid(w, t), b"\xed\xa0\x80"), "application/json", 400, _same("not valid utf-8")),
    Case("truncated-utf8", lambda w, t: _into_first_string(_valid(w, t), b"\xe2\x82"), "text/json", 400, _same("not valid utf-8")),
    Case("lone-surrogate-escape", lambda w, t: _into_first_string(_valid(w, t), b"\\ud800"), "application/json", 400, _same("unpaired surrogate")),
    Case("invalid-utf16", lambda w, t: b'{\x00"\x00\x00\xd8"\x00}\x00', "application/json; charset=utf-16-le", 400, _same("not valid utf-16")),
    Case("odd-length-utf16", lambda w, t: b'{\x00"\x00\x00', "application/json; charset=utf-16-le", 400, _same("not valid utf-16")),
    Case("invalid-utf8-in-form", lambda w, t: b"people_data=%FF%FE&first_name=%C0%AF", FORM, 400, _same("not valid utf-8")),
    # --- duplicate keys: the meaning is ambiguous, so the request is refused whole
    Case("duplicate-top-key", _duplicate_at_top, "application/json", 400, _same("duplicate key")),
    Case("duplicate-item-key", _duplicate_in_item, "application/json", 400, _same("duplicate key")),
    Case("duplicate-form-field", lambda w, t: b"people_data[0][ID]=1&people_data[0][ID]=2&first_name=A&first_name=B", FORM, 400, _same("given twice")),
    # --- JSON, but not the endpoint's object
    Case("array", lambda w, t: b"[" + _valid(w, t) + b"]", "application/json", 400, _wrong_shape),
    Case("string", lambda w, t: b'"Status update"', "text/plain", 400, _wrong_shape),
    Case("number", lambda w, t: b"3064", "text/json", 400, _wrong_shape),
    Case("null", lambda w, t: b"null", "application/json", 400, _wrong_shape),
    Case("true", lambda w, t: b"true", "application/json", 400, _wrong_shape),
    # --- every content type mislabelled
    Case("xml", _xml, "application/xml", 415, _same("content type application/xml is not accepted")),
    Case("text-xml", _xml, "text/xml; charset=utf-8", 415, _same("content type text/xml is not accepted")),
    Case("xml-as-json", _xml, "application/json", 400, _same("body is not JSON")),
    Case("multipart", _multipart, "multipart/form-data; boundary=XyZ", 415, _same("content type multipart/form-data is not accepted")),
    Case("multipart-as-json", _multipart, "application/json", 400, _same("body is not JSON")),
    Case("json-as-multipart", _valid, "multipart/form-data; boundary=XyZ", 415, _same("multipart/form-data is not accepted")),
    Case("form-as-json", _form, "application/json", 400, _same("body is not JSON")),
    Case("form-as-text-json", _form, "text/json", 400, _same("body is not JSON")),
    Case("form-as-text-plain", _form, "text/plain; charset=utf-8", 400, _same("body is not JSON")),
    Case("form-without-type", _form, None, 400, _same("body is not JSON")),
    Case("json-as-octet-stream", _valid, "application/octet-stream", 415, _same("application/octet-stream is not accepted")),
    Case("json-as-html", _valid, "text/html", 415, _same("text/html is not accepted")),
    Case("json-as-json-patch", _valid, "application/json-patch+json", 415, _same("is not accepted")),
    Case("json-unknown-charset", _valid, "application/json; charset=klingon", 415, _same("charset klingon is not supported")),
    Case("json-binary-charset", _valid, "application/json; charset=base64", 415, _same("charset base64 is not supported")),
    Case("json-in-utf16-labelled-utf8", lambda w, t: _valid(w, t).decode().encode("utf-16"), "application/json", 400, _same("not valid utf-8")),
]  # fmt: skip


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_unusable_bodies_are_refused_whole_and_change_nothing(world: World, target: Target) -> None:
    # One stored world per endpoint, every case against it in turn (a world per case
    # would cost a second each); every failing case is reported, not only the first.
    failures = []
    ledger = world.ledger()
    for case in CASES:
        raw = case.body(world, target)
        response = world.post(target.path, raw, case.content_type)
        try:
            target.check_failure(response, case.status, case.reason(target))
            ledger.unchanged(response)
        except AssertionError as exc:
            failures.append(f"{case.name}: {exc}")
            ledger = world.ledger()
    assert not failures, f"{len(failures)} of {len(CASES)} cases:\n" + "\n\n".join(failures)


# --- form fields that do not make the endpoint's object ---------------------------------


@pytest.mark.parametrize("target", OPERATIONS, ids=lambda t: t.name)
def test_form_fields_of_the_wrong_shape(world: World, target: Target) -> None:
    for raw in (
        f"{target.key}=not json".encode(),
        f"{target.key}[0]=1&{target.key}[0][x]=2".encode(),
        b"<people_data><ID>003</ID></people_data>",
        b"x=1&y=2",
    ):
        ledger = world.ledger()
        response = world.post(target.path, raw, FORM)
        expected = "mixes shapes" if b"[0][x]" in raw else _wrong_field(target)
        target.check_failure(response, 400, expected)
        # The refusal says what we accept.
        assert f"{target.key}[" in response.headers["X-Failure-Reason"]
        ledger.unchanged(response)


@pytest.mark.parametrize("target", [CONTACTS, LEADS, PRODUCTS], ids=lambda t: t.name)
def test_admin_form_junk_is_400_naming_the_fields(world: World, target: Target) -> None:
    # a person needs only a last name (issue 11; this checked first_name before)
    required = "name: is required" if target is PRODUCTS else "last_name: is required"
    for raw in (b"<record><name>x</name></record>", _multipart(world, target), b"x=1&y=2"):
        ledger = world.ledger()
        response = world.post(target.path, raw, FORM)
        target.check_failure(response, 400, required)
        assert "is not a known field" in response.json()["detail"]
        ledger.unchanged(response)


# --- the size limits: once per endpoint -------------------------------------------------


@pytest.mark.parametrize("target", TARGETS, ids=lambda t: t.name)
def test_ten_mib_body_is_413(world: World, target: Target) -> None:
    # Valid JSON all the way, so only its size can be the reason.
    key = target.key or "first_name"
    raw = b'{"' + key.encode() + b'": [' + b" " * TEN_MIB + b"]}"
    ledger = world.ledger()
    response = world.post(target.path, raw)
    target.check_failure(response, 413, "body is larger than 1048576 bytes")
    ledger.unchanged(response)
    # Not the body: a note of its declared size (issue 10: refusals store no bodies).
    assert world.audit(response)["request_body"] == unread_note(str(len(raw)))


@pytest.mark.parametrize("target", [RIDER_COURSES, MODIFY], ids=lambda t: t.name)
def test_ten_thousand_items_are_413_whole(world: World, target: Target) -> None:
    # Short items that would each write if carried out, so the limit is what stops them.
    item = (
        {"asset_id": world.asset, "course_status": "cancelled"}
        if target is RIDER_COURSES
        else {"ID": world.contact, "city": "Kilsyth"}
    )
    ledger = world.ledger()
    response = world.post(target.path, json.dumps({target.key: [item] * MANY}).encode())
    target.check_failure(response, 413, f"too many items: {MANY} in {target.key}, the limit is 200")
    ledger.unchanged(response)


@pytest.mark.parametrize("target", [PEOPLE_MATCH, LEADS_MATCH], ids=lambda t: t.name)
def test_ten_thousand_people_in_a_match_is_400(world: World, target: Target) -> None:
    raw = json.dumps({"person_data": [{"first_name": "Ann"}] * MANY}).encode()
    ledger = world.ledger()
    response = world.post(target.path, raw)
    target.check_failure(
        response, 400, "person_data: must be an object of fields (received an array)"
    )
    ledger.unchanged(response)


def test_ten_thousand_assets_in_a_match_are_read_not_written(world: World) -> None:
    """``assets`` is one field of one person, not a list of items: it is answered."""
    assets = [world.asset] + [new_id(RecordKind.ASSET) for _ in range(MANY - 1)]
    query: dict[str, Any] = {**PEOPLE_MATCH.body(world.valid_item(PEOPLE_MATCH))}
    query["person_data"]["assets"] = assets
    ledger = world.ledger()
    response = world.post(PEOPLE_MATCH.path, json.dumps(query).encode())
    assert response.status_code == 200, response.text
    assert response.json()["ID"] == world.contact
    ledger.unchanged(response)


@pytest.mark.parametrize("target", [CONTACTS, LEADS, PRODUCTS], ids=lambda t: t.name)
def test_ten_thousand_records_to_an_admin_create_is_400(world: World, target: Target) -> None:
    raw = json.dumps([{"name": "A", "first_name": "A"}] * MANY).encode()
    ledger = world.ledger()
    response = world.post(target.path, raw)
    target.check_failure(response, 400, "body: must be an object of fields")
    ledger.unchanged(response)
