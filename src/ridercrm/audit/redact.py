"""Personal fields taken out of stored audit bodies (``RIDERCRM_AUDIT_REDACT``).

With redaction on, the audit record keeps each body's structure (ids, statuses,
receipts, item outcomes, field names) and replaces the value of every personal field,
at any depth, by ``[redacted]``. JSON bodies are read as JSON (also JSON text inside a
string, such as a form field ``people_data=[...]`` or a body quoted in an audit record
read through the admin API), form bodies field by field. A body that cannot be read
that way might hold anything, so a note of its size is stored instead of it.
Empty values (null, "") are kept: they say a field was cleared, not what it held.
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ridercrm.http.wire import (
    ACCEPTED_TYPES,
    FORM_TYPE,
    BodyError,
    parse_content_type,
    parse_json,
)

PERSONAL_FIELDS = frozenset(
    {
        "first_name",
        "last_name",
        "date_of_birth",
        "email",
        "postcode",
        "mobile_phone",
        "home_phone",
        "drivers_license",
        "street",
        "city",
        "state",
        "country",
    }
)
REDACTED = "[redacted]"
# Bodies of the service's own making that are not JSON and hold no personal data:
# operation 1's whole-request failure (ridercrm.courses.endpoints.FAILURE_TEXT).
PLAIN_TEXTS = frozenset({"Status update failed."})
# Keys whose string values are themselves bodies: audit records read through the API.
QUOTED_BODIES = frozenset({"request_body", "response_body"})

_FIELD_NAME = re.compile(r"[A-Za-z0-9_]*")
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")


class _Unreadable(Exception):
    """The body cannot be read as JSON or form fields."""


def note(size: int) -> str:
    """What is stored instead of a body that could not be read for redaction."""
    return (
        f"[not stored: {size} bytes that could not be read as JSON or form fields;"
        " audit redaction is on]"
    )


def redact_request(body: bytes, content_type: str | None) -> str:
    """A request body as text with personal values redacted, read by its Content-Type."""
    if not body:
        return ""
    media, params = parse_content_type(content_type)
    try:
        if media and media not in ACCEPTED_TYPES:
            raise _Unreadable
        try:
            encoding = codecs.lookup(params.get("charset", "utf-8")).name
            text = body.decode(encoding)
        except (LookupError, UnicodeError):
            raise _Unreadable from None
        text = text.removeprefix("\ufeff")
        if not text.strip():
            return text
        if media == FORM_TYPE and not text.lstrip().startswith(("{", "[")):
            return _redact_form(text, encoding)
        return _redact_json_text(text)
    except _Unreadable:
        return note(len(body))


def redact_response(body: bytes) -> str:
    """A response body (JSON, or one of the service's fixed texts) with personal values
    redacted."""
    if not body:
        return ""
    try:
        text = body.decode("utf-8")
        return text if text in PLAIN_TEXTS else _redact_json_text(text)
    except (UnicodeError, _Unreadable):
        return note(len(body))


def _redact_json_text(text: str) -> str:
    try:
        value = parse_json(text)
    except BodyError:
        raise _Unreadable from None
    return json.dumps(_redact(value), ensure_ascii=False)


def _redact(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _redact_member(key, item) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact(item) for item in value]
    if isinstance(value, str) and value.lstrip().startswith(("{", "[")):
        try:
            return _redact_json_text(value)
        except _Unreadable:
            return value  # text that only starts like JSON, under a field that is not personal
    return value


def _redact_member(key: str, value: Any) -> Any:
    if value is None or value == "":
        return value
    if key.lower() in PERSONAL_FIELDS:
        return REDACTED
    if key in QUOTED_BODIES and isinstance(value, str):
        if value in PLAIN_TEXTS:
            return value
        try:
            return _redact_json_text(value)
        except _Unreadable:
            return note(len(value.encode("utf-8", errors="replace")))
    return _redact(value)


def _redact_form(text: str, encoding: str) -> str:
    # Stored re-encoded as UTF-8, whatever charset the client's percent-escapes used.
    try:
        pairs = parse_qsl(text, keep_blank_values=True, encoding=encoding, errors="strict")
    except (UnicodeError, ValueError):
        raise _Unreadable from None
    if not pairs:
        raise _Unreadable
    fields = [(name, _redact_form_field(name, value)) for name, value in pairs]
    return urlencode(fields, safe="[]")


def _redact_form_field(name: str, value: str) -> str:
    head, _, rest = name.partition("[")
    path = [head, *_BRACKETS.findall("[" + rest)] if rest else [head]
    if not all(_FIELD_NAME.fullmatch(part) for part in path):
        # Not a field name but text: a body that was never a form (or a name that is data).
        raise _Unreadable
    named = [part for part in path if part and not part.isdigit()]
    if value and named and named[-1].lower() in PERSONAL_FIELDS:
        return REDACTED
    if value.lstrip().startswith(("{", "[")):
        return _redact_json_text(value.strip())
    return value
