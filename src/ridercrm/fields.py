"""Field rules shared by every way data comes in (interface, admin API, import).

Plain functions that raise ValueError with a short reason, wrapped as Pydantic
annotated types. Enumerations compare case-insensitively and are stored in the
interface's spelling; its misspellings are canonical, their corrections aliases.
"""

from __future__ import annotations

import datetime as dt
import re
import unicodedata
from collections.abc import Callable, Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any, Literal

from email_validator import EmailNotValidError, validate_email
from pydantic import BeforeValidator, PlainSerializer, ValidationError, WithJsonSchema

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

# What staff read: the interface's values are kept on the wire and in storage exactly as
# it spells them ("ipswitch", "Purchansed List", lower-case sites); people see the proper
# names (docs/decisions.md, "The front desk in the console (issue 26, 2026-11-27)").
SITE_NAMES: Mapping[str, str] = {
    "somerton": "Somerton",
    "tullamarine": "Tullamarine",
    "kilsyth": "Kilsyth",
    "st ives": "St Ives",
    "slacks creek": "Slacks Creek",
    "ipswitch": "Ipswich",
    "Toowoomba": "Toowoomba",
}
# Each site's zone: its course times are that zone's local wall time.
SITE_ZONES: Mapping[str, str] = {
    "somerton": "Australia/Melbourne",
    "tullamarine": "Australia/Melbourne",
    "kilsyth": "Australia/Melbourne",
    "st ives": "Australia/Sydney",
    "slacks creek": "Australia/Brisbane",
    "ipswitch": "Australia/Brisbane",
    "Toowoomba": "Australia/Brisbane",
}
LEAD_SOURCE_NAMES: Mapping[str, str] = {"Purchansed List": "Purchased List"}
# The interface lists the codes and defines no meaning for them: a pass carries one of
# four grades, a fail one of four reasons. Shown as what they are, never guessed at.
RESULT_LABELS: Mapping[str, str] = {
    "pass A": "Pass, grade A (1st of 4)",
    "pass B": "Pass, grade B (2nd of 4)",
    "pass C": "Pass, grade C (3rd of 4)",
    "pass F": "Pass, grade F (4th of 4; still a pass)",
    "fail 1": "Fail, reason 1 (of 4)",
    "fail 2": "Fail, reason 2 (of 4)",
    "fail 3": "Fail, reason 3 (of 4)",
    "fail 4": "Fail, reason 4 (of 4)",
}
RESULT_CODES_EXPLAINED = (
    "A pass is recorded with one of four grades, A, B, C and F, in that order: grade F"
    " is the fourth pass grade, not a fail. A fail is recorded with one of four reasons,"
    " 1 to 4. The interface lists these codes without defining them further: what each"
    " grade and reason stands for is the business's own assessment practice."
)


def display_name(value: str | None) -> str:
    """A site's or lead source's name as staff read it (the stored value otherwise)."""
    if value is None:
        return ""
    return SITE_NAMES.get(value) or LEAD_SOURCE_NAMES.get(value) or value


ALIASES: Mapping[str, str] = {
    "ipswich": "ipswitch",
    "purchased list": "Purchansed List",
}

_SPACES = re.compile(r"\s+")
# ASCII digits only: \d and strptime also take Arabic-Indic or full-width digits, and a
# date-time is kept as written, so "٢٠٢٦-12-05 08:30:00" was stored as a start that
# names no session and sorts outside every day
# (docs/decisions.md, "Sessions and messages under adversarial use").
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$", re.ASCII)
_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$", re.ASCII)


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
        found = lookup.get(_fold(value)) if isinstance(value, str) else None
        if found is None:
            raise ValueError(f"must be one of {listing} (received {received(value)})")
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


ECHO_LIMIT = 40


def echoed(text: str, limit: int = ECHO_LIMIT) -> str:
    """A client's text as an error quotes it: whole up to ``limit`` characters, else its
    first ones and "..." (a refusal need not repeat a 10,000-character name in full)."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def item_refusal(item: Any, key: str) -> str:
    """Why an item that is not an object is refused, and how to send one."""
    got = received(item)
    if isinstance(item, str) and item.lstrip().startswith(("{", "[")):
        # people_data[]={"ID":...}: a form field's value is text, never JSON.
        got += f" that looks like JSON, but the value of a field such as {key}[] is text"
    return (
        f"item: must be an object of fields (received {got}); send"
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
        raise ValueError(f"must be a date written YYYY-MM-DD (received {received(value)})")
    try:
        parsed = dt.date.fromisoformat(value.strip())
    except ValueError:
        raise ValueError(
            "must be a real calendar date written YYYY-MM-DD (received a YYYY-MM-DD text"
            " that names no calendar day)"
        ) from None
    if parsed.year < 1900:
        raise ValueError("must be a date from 1900 on (received a date before 1900)")
    return parsed


def parse_birth_date(value: Any) -> dt.date | None:
    parsed = parse_date(value)
    if parsed is not None and parsed > dt.date.today():
        raise ValueError("must be a date up to today (received a date in the future)")
    return parsed


# The years a course's date-times may fall in (operation 1, sessions, the day sheet).
COURSE_FIRST_YEAR, COURSE_LAST_YEAR = 1900, 9998


def check_course_year(year: int) -> None:
    """Raise ValueError unless ``year`` is one a course's date-time may fall in."""
    if not COURSE_FIRST_YEAR <= year <= COURSE_LAST_YEAR:
        raise ValueError(
            f"must be in the years {COURSE_FIRST_YEAR} to {COURSE_LAST_YEAR} (received {year})"
        )


def parse_datetime_text(value: Any) -> str | None:
    """A date-time written YYYY-MM-DD HH:MM:SS (or a date), kept as written."""
    if value is None or value == "":
        return None
    form = "must be a real date-time written YYYY-MM-DD HH:MM:SS or a date YYYY-MM-DD"
    if not isinstance(value, str):
        raise ValueError(f"{form} (received {received(value)})")
    text = value.strip()
    try:
        if _DATETIME.match(text):
            year = dt.datetime.strptime(text, "%Y-%m-%d %H:%M:%S").year
        elif _DATE.match(text):
            year = dt.date.fromisoformat(text).year
        else:
            raise ValueError
    except ValueError:
        raise ValueError(f"{form} (received {received(value)})") from None
    # As a session's times: a course in year 1 has no moment in UTC to remind at, and the
    # day sheet has no day after 9999-12-31 (docs/decisions.md, "Operation 1 (rider courses)").
    check_course_year(year)
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
    refusal = f"must be an e-mail address such as ann@example.com (received {received(value)})"
    if not isinstance(value, str):
        raise ValueError(refusal)
    plain = _plain_email(value.strip())
    if plain is not None:
        return plain
    try:
        return validate_email(value.strip(), check_deliverability=False).normalized
    except EmailNotValidError:
        raise ValueError(refusal) from None


def parse_price(value: Any) -> Decimal | None:
    """A price: a decimal number of at most 2 places, zero or more."""
    if value is None or value == "":
        return None
    got = f"(received {received(value)})"
    if isinstance(value, bool) or not isinstance(value, str | int | float | Decimal):
        raise ValueError(f"must be a decimal number such as 249.00 {got}")
    try:
        price = Decimal(str(value).strip())
    except InvalidOperation:
        raise ValueError(f"must be a decimal number such as 249.00 {got}") from None
    if not price.is_finite() or price < 0 or price >= Decimal("1e10"):
        raise ValueError(f"must be a decimal number from 0 to 9999999999.99 {got}")
    if price != price.quantize(Decimal("0.01")):
        raise ValueError(f"must be a decimal number of at most 2 places, such as 249.00 {got}")
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


CONTROL_CATEGORIES = ("Cc", "Cf", "Cs", "Zl", "Zp")
CONTROL_REASON = "must not contain control characters (line breaks, escapes, direction marks)"


def control_problem(text: str) -> str | None:
    """Why ``text`` cannot name someone or something staff read on terminals and pages (a
    key's name, a webhook's description, `--as`), or None: a line break, an escape
    sequence or a direction override there could forge or hide what follows."""
    if text.isprintable():  # no character of those categories (a space is printable)
        return None
    if any(unicodedata.category(char) in CONTROL_CATEGORIES for char in text):
        return CONTROL_REASON
    return None


def _invisible(text: str) -> bool:
    """Whether the text shows nothing: only spaces and format characters (zero-width
    space U+200B, joiners, U+FEFF), so "\u200b" is as empty as "  " (the name it stands
    for cannot be cleared by it)."""
    return all(char.isspace() or unicodedata.category(char) == "Cf" for char in text)


def text(max_length: int) -> Callable[[Any], str | None]:
    """Free text: trimmed, empty is absent, at most ``max_length`` characters, no NULs."""

    def parse(value: Any) -> str | None:
        if value is None:
            return None
        if type(value) is str:  # the common case first: imports call this ~8 times a row
            stripped = value.strip()
        elif isinstance(value, bool) or not isinstance(value, str | int):
            raise ValueError(
                f"must be text of at most {max_length} characters (received {received(value)})"
            )
        else:
            stripped = str(value).strip()
        if not stripped or (not stripped.isprintable() and _invisible(stripped)):
            return None
        if "\x00" in stripped:
            raise ValueError(
                "must be text without NUL characters (received text with a NUL character)"
            )
        if len(stripped) > max_length:
            raise ValueError(
                f"must be at most {max_length} characters (received {received(stripped)})"
            )
        return stripped

    return parse


def parse_id_text(value: Any) -> str | None:
    """An id field: a string (empty means absent; the interface's sample sends asset_id "")."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"must be a record id as text (received {received(value)})")
    return value.strip() or None


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


# --- The rules as Pydantic types, each with the JSON schema that documents it -------
#
# One source per shape: the OpenAPI document is generated from the same annotated
# types the service validates with. A schema says what the rule accepts in the
# interface's spelling (the rules also compare case-insensitively and take aliases).

ABSENT: dict[str, Any] = {"enum": ["", None]}
DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"
DATETIME_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2})?$"
POSTCODE_PATTERN = r"^\s*([0-9]{4}|[2-9][0-9]{2})\s*$"
PRICE_PATTERN = r"^[0-9]{1,10}(\.[0-9]{1,2})?$"
FLAG_WORDS = ("true", "false", "1", "0", "on", "off", "yes", "no")
# JSON Schema patterns have no case-insensitive flag: each letter is a class.
_FLAG_PATTERN = (
    r"^\s*("
    + "|".join("".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in w) for w in FLAG_WORDS)
    + r")\s*$"
)


def rule(
    parse: Callable[[Any], Any],
    kind: Any,
    accepted: list[dict[str, Any]],
    description: str = "",
    *,
    optional: bool = True,
) -> Any:
    """``kind`` read by ``parse`` and documented as ``accepted``; an optional field
    also takes "" and null (absent); a required one refuses them."""
    variants = [*accepted, ABSENT] if optional else accepted
    schema: dict[str, Any] = dict(variants[0]) if len(variants) == 1 else {"anyOf": variants}
    if description:
        schema["description"] = description
    check = parse if optional else required(parse)
    return Annotated[kind, BeforeValidator(check), WithJsonSchema(schema)]


def free_text(max_length: int, description: str = "", *, optional: bool = True) -> Any:
    """Free text of at most ``max_length`` characters."""
    schema: dict[str, Any] = {"type": ["string", "null"], "maxLength": max_length}
    if not optional:
        schema = {"type": "string", "minLength": 1, "maxLength": max_length}
    if description:
        schema["description"] = description
    check = text(max_length) if optional else required(text(max_length))
    return Annotated[
        str | None if optional else str, BeforeValidator(check), WithJsonSchema(schema)
    ]


def one_of(values: tuple[str, ...], description: str = "") -> Any:
    """One of ``values`` in any case; empty or null is absent."""
    schema = {
        "enum": [*values, "", None],
        "description": (description + " " if description else "")
        + "Compared case-insensitively; stored in the spelling shown.",
    }
    return Annotated[str | None, BeforeValidator(enumeration(values)), WithJsonSchema(schema)]


CourseLocation = one_of(
    COURSE_LOCATIONS, "The interface's spelling is canonical; ipswich is an alias."
)
CourseFeedback = one_of(
    COURSE_FEEDBACK,
    "completed - pass needs a pass; completed - fail needs a fail; booked and cancelled none.",
)
BookingSource = one_of(BOOKING_SOURCES)
CourseStatus = one_of(
    COURSE_STATUSES,
    "A new course may start in any status. booked -> cancelled, completed - pass or"
    " completed - fail; cancelled -> booked; completed - pass <-> completed - fail;"
    " staying in a status is always allowed.",
)
LicenseType = one_of(LICENSE_TYPES)
LeadSource = one_of(
    LEAD_SOURCES, "The interface's spelling is canonical; Purchased List is an alias."
)

_POSTCODE_VARIANTS: list[dict[str, Any]] = [
    {"type": "string", "pattern": POSTCODE_PATTERN},
    {"type": "integer", "minimum": 200, "maximum": 9999},
]
_POSTCODE_DESCRIPTION = (
    '4 digits; 3 digits or a whole number 200-9999 is zero-padded ("800", 800 and 800.0'
    ' are all stored as "0800").'
)
Postcode = rule(parse_postcode, str | None, _POSTCODE_VARIANTS, _POSTCODE_DESCRIPTION)
RequiredPostcode = rule(
    parse_postcode, str, _POSTCODE_VARIANTS, _POSTCODE_DESCRIPTION, optional=False
)
_BIRTH_DATE = [{"type": "string", "format": "date", "pattern": DATE_PATTERN}]
BirthDate = rule(
    parse_birth_date,
    dt.date | None,
    _BIRTH_DATE,
    "YYYY-MM-DD, a real date from 1900 on and not in the future.",
)
RequiredBirthDate = rule(
    parse_birth_date,
    dt.date,
    _BIRTH_DATE,
    "YYYY-MM-DD, from 1900 on and not in the future.",
    optional=False,
)
DateTimeText = rule(
    parse_datetime_text,
    str | None,
    [{"type": "string", "pattern": DATETIME_PATTERN}],
    "YYYY-MM-DD HH:MM:SS (or YYYY-MM-DD) in the years 1900 to 9998, the local wall time"
    " of the course location, stored and echoed as written.",
)
_EMAIL = [{"type": "string", "format": "email", "maxLength": 254}]
Email = rule(
    parse_email, str | None, _EMAIL, "An e-mail address (checked by its syntax; no DNS look-up)."
)
RequiredEmail = rule(parse_email, str, _EMAIL, optional=False)
_PRICE: list[dict[str, Any]] = [
    {"type": "string", "pattern": PRICE_PATTERN},
    {"type": "number", "minimum": 0, "exclusiveMaximum": 10000000000},
]
_PRICE_DESCRIPTION = 'A decimal of at most 2 places, such as "249.00".'
Price = rule(parse_price, Decimal | None, _PRICE, _PRICE_DESCRIPTION)
RequiredPrice = rule(parse_price, Decimal, _PRICE, _PRICE_DESCRIPTION, optional=False)
Flag = rule(
    parse_bool,
    bool | None,
    [
        {"type": "boolean"},
        {"enum": [0, 1]},
        {"type": "string", "pattern": _FLAG_PATTERN},
    ],
    "true or false: JSON true/false or 1/0, or the text true/false, 1/0, on/off,"
    " yes/no in any case (as PHP, HTML checkboxes and spreadsheets write them).",
)
IdText = Annotated[
    str | None,
    BeforeValidator(parse_id_text),
    WithJsonSchema(
        {
            "type": ["string", "null"],
            "maxLength": 40,
            "description": "A record id, 15 or 18 characters (18 is read case-insensitively).",
        }
    ),
]
Name = free_text(80)
RequiredName = free_text(80, optional=False)
ShortText = free_text(80)
Phone = free_text(40, "A phone number as written; compared as E.164 (0412 345 678 = +61412345678).")
Licence = free_text(40, "Driver's licence number.")
LongText = free_text(255)
RequiredLongText = free_text(255, optional=False)
RequiredShortText = free_text(80, optional=False)
Instructor = free_text(120)
# The lead source a match request may carry: free text, only recorded.
LeadSourceText = free_text(40)
RequiredLeadSourceText = free_text(40, optional=False)


# --- The wire's spellings in responses (the response models serialise with these) --


def _true_false(value: Any) -> Any:
    return ("true" if value else "false") if isinstance(value, bool) else value


def _decimal_text(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else value


# "true"/"false" as text, where the interface spells a flag so.
TrueFalse = Annotated[Literal["true", "false"], BeforeValidator(_true_false)]
# A decimal as text, such as "249.00".
DecimalText = Annotated[str, BeforeValidator(_decimal_text)]
OptionalDecimalText = Annotated[str | None, BeforeValidator(_decimal_text)]
# A timestamp as Python's isoformat writes it ("+00:00", not pydantic's "Z").
Timestamp = Annotated[
    dt.datetime, PlainSerializer(dt.datetime.isoformat, return_type=str, when_used="json")
]
