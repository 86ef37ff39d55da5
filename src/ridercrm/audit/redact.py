"""Personal fields taken out of stored audit bodies (``RIDERCRM_AUDIT_REDACT``).

With redaction on, the audit record keeps each body's structure (ids, statuses,
receipts, item outcomes, field names) and replaces personal values, at any depth, by
``[redacted]``. JSON bodies are read as JSON (also JSON text inside a string, such as a
form field ``people_data=[...]`` or a body quoted in an audit record read through the
admin API), form bodies field by field. A body that cannot be read that way might hold
anything, so a note of its size is stored instead of it. Empty values (null, "") are
kept: they say a field was cleared, not what it held.

Which values are personal is decided by rules rather than a list of spellings:

- a personal field under any spelling: ``first_name``, ``FirstName``, ``Birthdate``,
  ``MobilePhone``, ``MailingStreet``, ``Drivers_License__c`` ... (names compared
  without case, underscores and Salesforce's ``__c``; any name holding "phone",
  "email" or "birth");
- an id field (``ID``, ``person_id``, ``ContactId`` ...) keeps its value only when it
  is a well-formed record id: an e-mail or a name sent where an id belongs is personal;
- a value redacted from the request is also redacted wherever the response, the
  outcomes or the failure reason quote it (a receipt such as ``person_id: Jane Smith
  is not a valid record id``).
"""

from __future__ import annotations

import codecs
import json
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode

from ridercrm.ids import canonical_id
from ridercrm.wire import (
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
# The same fields as other systems spell them (Salesforce's standard and custom field
# names, see ridercrm.transfer.columns), and a few more ways of naming a person.
OTHER_SPELLINGS = frozenset(
    {
        "firstname", "lastname", "middlename", "fullname", "name", "surname", "givenname",
        "familyname", "nickname", "birthdate", "dob", "postalcode", "zip", "zipcode",
        "mailingpostalcode", "mailingstreet", "mailingcity", "mailingstate",
        "mailingcountry", "mailingaddress", "address", "otherstreet", "othercity",
        "driverslicence", "licensenumber", "licencenumber",
    }
)  # fmt: skip
PERSONAL_PARTS = ("phone", "email", "birth")  # MobilePhone, OtherPhone, Email__c, ...
REDACTED = "[redacted]"
# Bodies of the service's own making that are not JSON and hold no personal data:
# operation 1's whole-request failure (ridercrm.web.routes.courses.FAILURE_TEXT).
PLAIN_TEXTS = frozenset({"Status update failed."})
# Keys whose string values are themselves bodies: audit records read through the API.
QUOTED_BODIES = frozenset({"request_body", "response_body"})
# Keys whose values are the matcher's verdicts per field ("email": "same"), not values.
VERDICTS = frozenset({"reasons"})
# Redacted values shorter than this are not looked for in texts that may quote them:
# a postcode or a state would match inside booking numbers and words. What an id field
# held is looked for from 2 characters: receipts quote exactly those values.
MIN_QUOTED = 6
MIN_QUOTED_ID = 2

_FIELD_NAME = re.compile(r"[A-Za-z0-9_]*")
_BRACKETS = re.compile(r"\[([^\[\]]*)\]")
_CAMEL_ID = re.compile(r"[a-z0-9]Id$")


def _normal(name: str) -> str:
    return name.lower().removesuffix("__c").replace("_", "").replace("-", "")


_PERSONAL_NORMAL = frozenset({_normal(name) for name in PERSONAL_FIELDS}) | OTHER_SPELLINGS


def is_personal(name: str) -> bool:
    """Whether a field of this name holds personal data, however it is spelt."""
    normal = _normal(name)
    return normal in _PERSONAL_NORMAL or any(part in normal for part in PERSONAL_PARTS)


def is_id_field(name: str) -> bool:
    """ID, person_id, audit_ID, ContactId: a field that should hold a record id."""
    return name.lower() == "id" or name.lower().endswith("_id") or bool(_CAMEL_ID.search(name))


class _Unreadable(Exception):
    """The body cannot be read as JSON or form fields."""


def note(size: int) -> str:
    """What is stored instead of a body that could not be read for redaction."""
    return (
        f"[not stored: {size} bytes that could not be read as JSON or form fields;"
        " audit redaction is on]"
    )


class Redaction:
    """Redacts one request's bodies, outcomes and reason, remembering what it took out
    of the request so that texts quoting those values lose them too."""

    def __init__(self) -> None:
        self.taken: set[str] = set()
        self._quoted: re.Pattern[str] | None = None

    # -- the request -------------------------------------------------------------

    def request(self, body: bytes, content_type: str | None) -> str:
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
                return self._form(text, encoding)
            return self._json_text(text)
        except _Unreadable:
            return note(len(body))

    # -- what the service answered and noted ------------------------------------------

    def response(self, body: bytes) -> str:
        """A response body (JSON, or one of the service's fixed texts) redacted."""
        if not body:
            return ""
        try:
            text = body.decode("utf-8")
            return text if text in PLAIN_TEXTS else self._json_text(text)
        except (UnicodeError, _Unreadable):
            return note(len(body))

    def value(self, value: Any) -> Any:
        """A JSON value (the outcomes) redacted."""
        return self._redact(value)

    def text(self, text: str | None) -> str | None:
        """A text of the service's (a failure reason) without the values it quotes."""
        return None if text is None else self._unquote(text)

    # -- the rules ---------------------------------------------------------------

    def _json_text(self, text: str) -> str:
        try:
            value = parse_json(text)
        except BodyError:
            raise _Unreadable from None
        return json.dumps(self._redact(value), ensure_ascii=False)

    def _redact(self, value: Any) -> Any:
        if isinstance(value, dict):
            return {key: self._member(key, item) for key, item in value.items()}
        if isinstance(value, list):
            return [self._redact(item) for item in value]
        if isinstance(value, str):
            if value.lstrip().startswith(("{", "[")):
                try:
                    return self._json_text(value)
                except _Unreadable:
                    pass  # text that only starts like JSON
            return self._unquote(value)
        return value

    def _member(self, key: str, value: Any) -> Any:
        if value is None or value == "":
            return value
        if key in VERDICTS and isinstance(value, dict):
            return {name: self._redact(verdict) for name, verdict in value.items()}
        if is_personal(key):
            self._take_all(value)  # a structure under a personal name: all of it
            return REDACTED
        if is_id_field(key) and not isinstance(value, (dict, list, bool)):
            if canonical_id(value) is not None:
                return value
            return self._take(value, quoted_from=MIN_QUOTED_ID)
        if key in QUOTED_BODIES and isinstance(value, str):
            if value in PLAIN_TEXTS:
                return value
            try:
                return self._json_text(value)
            except _Unreadable:
                return note(len(value.encode("utf-8", errors="replace")))
        return self._redact(value)

    def _take_all(self, value: Any) -> None:
        if isinstance(value, dict):
            value = list(value.values())
        if isinstance(value, list):
            for item in value:
                self._take_all(item)
        elif value is not None and value != "":
            self._take(value)

    def _take(self, value: Any, quoted_from: int = MIN_QUOTED) -> str:
        text = value if isinstance(value, str) else json.dumps(value)
        for form in {text, text.strip()}:
            if len(form) >= quoted_from:
                self.taken.add(form)
                self._quoted = None
        return REDACTED

    def _unquote(self, text: str) -> str:
        if not self.taken:
            return text
        if self._quoted is None:
            longest_first = sorted(self.taken, key=len, reverse=True)
            self._quoted = re.compile("|".join(re.escape(v) for v in longest_first))
        return self._quoted.sub(REDACTED, text)

    def _form(self, text: str, encoding: str) -> str:
        # Stored re-encoded as UTF-8, whatever charset the client's percent-escapes used.
        try:
            pairs = parse_qsl(text, keep_blank_values=True, encoding=encoding, errors="strict")
        except (UnicodeError, ValueError):
            raise _Unreadable from None
        if not pairs:
            raise _Unreadable
        fields = [(name, self._form_field(name, value)) for name, value in pairs]
        return urlencode(fields, safe="[]")

    def _form_field(self, name: str, value: str) -> str:
        head, _, rest = name.partition("[")
        path = [head, *_BRACKETS.findall("[" + rest)] if rest else [head]
        if not all(_FIELD_NAME.fullmatch(part) for part in path):
            # Not a field name but text: a body that was never a form (or a name that is data).
            raise _Unreadable
        named = [part for part in path if part and not part.isdigit()]
        if value and named and is_personal(named[-1]):
            return self._take(value)
        if value and named and is_id_field(named[-1]) and canonical_id(value) is None:
            return self._take(value, quoted_from=MIN_QUOTED_ID)
        if value.lstrip().startswith(("{", "[")):
            return self._json_text(value.strip())
        return value


def redact_request(body: bytes, content_type: str | None) -> str:
    """A request body as text with personal values redacted, read by its Content-Type."""
    return Redaction().request(body, content_type)


def redact_response(body: bytes) -> str:
    """A response body (JSON, or one of the service's fixed texts) with personal values
    redacted."""
    return Redaction().response(body)


# A stop-reminders link's token (notifications/compose.py): whoever holds it may stop a
# rider's reminders. It is kept in the audit trail (the path of the link's page, message
# bodies), but shown only to staff who may stop reminders themselves.
_STOP_TOKEN = re.compile(r"(stop-reminders/)[A-Za-z0-9_.~%-]+")


def without_stop_tokens(text: str) -> str:
    """``text`` with every stop-reminders link's token replaced by [redacted]."""
    return _STOP_TOKEN.sub(r"\1[redacted]", text)
