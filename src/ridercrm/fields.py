"""Field rules shared by every way data comes in (interface, admin API, import).

Plain functions that raise ValueError with a short reason, wrapped as Pydantic
annotated types. Enumerations compare case-insensitively and are stored in the
interface's spelling; its misspellings are canonical, their corrections aliases.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any

from email_validator import EmailNotValidError, validate_email
from pydantic import BeforeValidator, ValidationError

COURSE_LOCATIONS = (
    "somerton",
    "tullamarine",
    "kilsyth",
    "st ives",
    "slacks creek",
    "ipswitch",
    "Toowoomba",
)
COURSE_FEEDBACK = ("pass A", "pass B", "pass C", "pass F", "fail 1", "fail 2", "fail 3", "fail 4")
BOOKING_SOURCES = ("None", "Website", "Phone", "In Person")
COURSE_STATUSES = ("booked", "cancelled", "completed - pass", "completed - fail")
LICENSE_TYPES = ("CYL", "CYP")
LEAD_SOURCES = ("Web", "Phone Inquiry", "Partner Referral", "Purchansed List", "Other")

# Person fields an operator or client can write, in the interface's names.
PERSON_FIELDS = (
    "first_name",
    "last_name",
    "date_of_birth",
    "email",
    "postcode",
    "mobile_phone",
    "home_phone",
    "drivers_license",
    "license_type",
    "street",
    "city",
    "state",
    "country",
    "lead_source",
    "opt_in",
)

ALIASES: Mapping[str, str] = {
    "ipswich": "ipswitch",
    "purchased list": "Purchansed List",
}

_SPACES = re.compile(r"\s+")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$")


def _fold(text: str) -> str:
    return _SPACES.sub(" ", text.strip()).casefold()


def enumeration(values: Iterable[str]) -> Callable[[Any], str | None]:
    """A parser that maps any casing (or an alias) of one of ``values`` to its spelling."""
    values = tuple(values)
    lookup = {_fold(value): value for value in values}
    lookup.update({alias: canon for alias, canon in ALIASES.items() if canon in values})
    listing = ", ".join(values)

    def parse(value: Any) -> str | None:
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise ValueError(f"must be one of {listing}")
        found = lookup.get(_fold(value))
        if found is None:
            raise ValueError(f"must be one of {listing}")
        return found

    return parse


def received(value: Any) -> str:
    """What a value was, by its JSON shape (never the value: it may be personal data)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a JSON boolean"
    if isinstance(value, int | float):
        return "a JSON number"
    if isinstance(value, str):
        return f"text of {len(value)} character{'' if len(value) == 1 else 's'}"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def item_refusal(item: Any, key: str) -> str:
    """Why an item that is not an object is refused, and how to send one."""
    return (
        f"item: must be an object of fields (received {received(item)}); send"
        f" {key}[0][field]=... or {key}=<JSON array of objects>"
    )


_POSTCODE_FORM = '4 digits, or 3 (800 is "0800"), as text or a whole number'


def parse_postcode(value: Any) -> str | None:
    """A postcode is 4 digits; 3 digits or a whole number 200-9999 is zero-padded.

    However it was encoded it is the same postcode: JSON 800, the text "800" that
    every form encoder sends, and 800.0 are all "0800".
    """
    if value is None or value == "":
        return None
    number: int | None = None
    if isinstance(value, str):
        digits = value.strip()
        if digits.isascii() and digits.isdigit():
            if len(digits) == 4:
                return digits
            if len(digits) == 3:
                number = int(digits)
    elif isinstance(value, int | float) and not isinstance(value, bool) and value == int(value):
        number = int(value)
    if number is not None and 200 <= number <= 9999:
        return f"{number:04d}"
    raise ValueError(f"must be {_POSTCODE_FORM} (received {received(value)})")


def parse_date(value: Any) -> dt.date | None:
    """A date written YYYY-MM-DD, a real calendar date from 1900 on."""
    if value is None or value == "":
        return None
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        return value
    if not isinstance(value, str) or not _DATE.match(value.strip()):
        raise ValueError("must be a date written YYYY-MM-DD")
    try:
        parsed = dt.date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError("is not a real calendar date") from None
    if parsed.year < 1900:
        raise ValueError("must be 1900 or later")
    return parsed


def parse_birth_date(value: Any) -> dt.date | None:
    parsed = parse_date(value)
    if parsed is not None and parsed > dt.date.today():
        raise ValueError("must not be in the future")
    return parsed


def parse_datetime_text(value: Any) -> str | None:
    """A date-time written YYYY-MM-DD HH:MM:SS (or a date), kept as written."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("must be written YYYY-MM-DD HH:MM:SS")
    text = value.strip()
    try:
        if _DATETIME.match(text):
            dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S")
        elif _DATE.match(text):
            dt.date.fromisoformat(text)
        else:
            raise ValueError
    except ValueError:
        raise ValueError("must be a real date-time written YYYY-MM-DD HH:MM:SS") from None
    return text


# Addresses of this plain form are valid for email-validator and come out of it
# unchanged but for a lower-cased domain (a property test checks that); reading them
# directly saves ~20 µs an address on imports. Anything else goes to email-validator.
_PLAIN_EMAIL = re.compile(
    r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:(?!xn--)[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+[A-Za-z]{2,63}"
)
_SPECIAL_USE_DOMAINS = ("arpa", "invalid", "local", "localhost", "onion", "test")


def _plain_email(address: str) -> str | None:
    if len(address) > 254 or not _PLAIN_EMAIL.fullmatch(address):
        return None
    local, _, domain = address.rpartition("@")
    domain = domain.lower()
    if len(local) > 64 or domain.rsplit(".", 1)[-1] in _SPECIAL_USE_DOMAINS:
        return None
    if "--" in domain or "-." in domain or ".-" in domain:
        return None
    return f"{local}@{domain}"


def parse_email(value: Any) -> str | None:
    """An e-mail address by its syntax (no DNS look-up); surrounding space is dropped."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError("not a valid e-mail address")
    plain = _plain_email(value.strip())
    if plain is not None:
        return plain
    try:
        return validate_email(value.strip(), check_deliverability=False).normalized
    except EmailNotValidError:
        raise ValueError("not a valid e-mail address") from None


def parse_price(value: Any) -> Decimal | None:
    """A price: a decimal number of at most 2 places, zero or more."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise ValueError("must be a decimal number such as 249.00")
    try:
        price = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError("must be a decimal number such as 249.00") from None
    if not price.is_finite() or price < 0 or price >= Decimal("1e10"):
        raise ValueError("must be a decimal number from 0 to 9999999999.99")
    if price != price.quantize(Decimal("0.01")):
        raise ValueError("must have at most 2 decimal places")
    return price.quantize(Decimal("0.01"))


TRUE_WORDS = frozenset({"true", "1", "on", "yes"})
FALSE_WORDS = frozenset({"false", "0", "off", "no"})
_BOOL_FORM = "true or false (also 1/0, on/off, yes/no, any case)"


def parse_bool(value: Any) -> bool | None:
    """A flag as every encoder writes one: JSON true/false or 1/0, or the text
    true/false, 1/0, on/off, yes/no in any case (PHP sends 1/0, a checkbox "on")."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float) and value in (0, 1):
        return value == 1
    if isinstance(value, str):
        word = value.strip().lower()
        if word in TRUE_WORDS:
            return True
        if word in FALSE_WORDS:
            return False
    raise ValueError(f"must be {_BOOL_FORM} (received {received(value)})")


def text(max_length: int) -> Callable[[Any], str | None]:
    """Free text: trimmed, empty is absent, at most ``max_length`` characters, no NULs."""

    def parse(value: Any) -> str | None:
        if value is None:
            return None
        if type(value) is str:  # the common case first: imports call this ~8 times a row
            stripped = value.strip()
        elif isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError("must be a string")
        else:
            stripped = str(value).strip()
        if not stripped:
            return None
        if "\x00" in stripped:
            raise ValueError("must not contain NUL characters")
        if len(stripped) > max_length:
            raise ValueError(f"must be at most {max_length} characters")
        return stripped

    return parse


def parse_id_text(value: Any) -> str | None:
    """An id field: a string (empty means absent; the interface's sample sends asset_id "")."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError("must be a record id string")
    return value.strip() or None


def _rule(parse: Callable[[Any], Any], kind: Any) -> Any:
    return Annotated[kind, BeforeValidator(parse)]


CourseLocation = _rule(enumeration(COURSE_LOCATIONS), str | None)
CourseFeedback = _rule(enumeration(COURSE_FEEDBACK), str | None)
BookingSource = _rule(enumeration(BOOKING_SOURCES), str | None)
CourseStatus = _rule(enumeration(COURSE_STATUSES), str | None)
LicenseType = _rule(enumeration(LICENSE_TYPES), str | None)
LeadSource = _rule(enumeration(LEAD_SOURCES), str | None)
Postcode = _rule(parse_postcode, str | None)
BirthDate = _rule(parse_birth_date, dt.date | None)
DateTimeText = _rule(parse_datetime_text, str | None)
Email = _rule(parse_email, str | None)
Price = _rule(parse_price, Decimal | None)
Flag = _rule(parse_bool, bool | None)
IdText = _rule(parse_id_text, str | None)
Name = _rule(text(80), str | None)
ShortText = _rule(text(80), str | None)
Phone = _rule(text(40), str | None)
LongText = _rule(text(255), str | None)


def error_messages(exc: ValidationError) -> list[str]:
    """Pydantic errors as the interface's messages: "field: reason"."""
    messages = []
    for error in exc.errors(include_url=False):
        field = ".".join(str(part) for part in error["loc"]) or "body"
        reason = error["msg"].removeprefix("Value error, ")
        if error["type"] == "missing":
            reason = "is required"
        elif error["type"] == "extra_forbidden":
            reason = "is not a known field"
        messages.append(f"{field}: {reason}")
    return messages


def required(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A parser that also refuses an empty value: the field is mandatory."""

    def parse_required(value: Any) -> Any:
        parsed = parse(value)
        if parsed is None:
            raise ValueError("is required")
        return parsed

    return parse_required
