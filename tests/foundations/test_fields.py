"""Field rules shared by every way data comes in (docs/decisions.md, "Wire"), through their Pydantic types."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from ridercrm import fields

ENUMERATIONS: list[tuple[str, Any, tuple[str, ...]]] = [
    ("course_location", fields.CourseLocation, fields.COURSE_LOCATIONS),
    ("course_feedback", fields.CourseFeedback, fields.COURSE_FEEDBACK),
    ("booking_source", fields.BookingSource, fields.BOOKING_SOURCES),
    ("course_status", fields.CourseStatus, fields.COURSE_STATUSES),
    ("license_type", fields.LicenseType, fields.LICENSE_TYPES),
    ("lead_source", fields.LeadSource, fields.LEAD_SOURCES),
]


def test_the_enumerations_are_the_interfaces_values() -> None:
    # The interface's spelling is canonical, misspellings included (spec §2).
    assert fields.COURSE_LOCATIONS == (
        "somerton",
        "tullamarine",
        "kilsyth",
        "st ives",
        "slacks creek",
        "ipswitch",
        "Toowoomba",
    )
    assert fields.COURSE_FEEDBACK == (
        "pass A",
        "pass B",
        "pass C",
        "pass F",
        "fail 1",
        "fail 2",
        "fail 3",
        "fail 4",
    )
    assert fields.BOOKING_SOURCES == ("None", "Website", "Phone", "In Person")
    assert fields.COURSE_STATUSES == ("booked", "cancelled", "completed - pass", "completed - fail")
    assert fields.LICENSE_TYPES == ("CYL", "CYP")
    assert fields.LEAD_SOURCES == (
        "Web",
        "Phone Inquiry",
        "Partner Referral",
        "Purchansed List",
        "Other",
    )


def validate(kind: Any, value: Any) -> Any:
    return TypeAdapter(kind).validate_python(value)


def reason(kind: Any, value: Any) -> str:
    with pytest.raises(ValidationError) as caught:
        validate(kind, value)
    return str(caught.value.errors()[0]["msg"]).removeprefix("Value error, ")


ENUM_CASES = [
    pytest.param(kind, canonical, id=f"{name}:{canonical}")
    for name, kind, values in ENUMERATIONS
    for canonical in values
]


@pytest.mark.parametrize(("kind", "canonical"), ENUM_CASES)
def test_each_allowed_value_in_any_casing_maps_to_its_spelling(kind: Any, canonical: str) -> None:
    spellings = {
        canonical,
        canonical.lower(),
        canonical.upper(),
        canonical.title(),
        canonical.swapcase(),
        f"  {canonical}\t",
        canonical.replace(" ", "  "),
    }
    for spelling in spellings:
        assert validate(kind, spelling) == canonical, spelling


@settings(max_examples=200)
@given(
    st.sampled_from([(kind, value) for _name, kind, values in ENUMERATIONS for value in values]),
    st.lists(st.booleans(), min_size=20, max_size=20),
)
def test_any_mix_of_cases_maps_to_the_spelling(case: tuple[Any, str], flips: list[bool]) -> None:
    kind, canonical = case
    mixed = "".join(
        ch.swapcase() if flip else ch for ch, flip in zip(canonical, flips, strict=False)
    )
    assert validate(kind, mixed) == canonical


@pytest.mark.parametrize(
    ("kind", "alias", "canonical"),
    [
        (fields.CourseLocation, "ipswich", "ipswitch"),
        (fields.CourseLocation, "Ipswich", "ipswitch"),
        (fields.CourseLocation, "IPSWICH", "ipswitch"),
        (fields.LeadSource, "Purchased List", "Purchansed List"),
        (fields.LeadSource, "purchased list", "Purchansed List"),
        (fields.LeadSource, " PURCHASED  LIST ", "Purchansed List"),
    ],
)
def test_correct_spellings_are_aliases_of_the_interfaces_misspellings(
    kind: Any, alias: str, canonical: str
) -> None:
    assert validate(kind, alias) == canonical


@pytest.mark.parametrize(
    ("kind", "alias"),
    [
        (fields.LeadSource, "ipswich"),
        (fields.CourseLocation, "Purchased List"),
        (fields.BookingSource, "ipswich"),
    ],
)
def test_aliases_belong_to_their_own_field_only(kind: Any, alias: str) -> None:
    assert reason(kind, alias).startswith("must be one of")


@pytest.mark.parametrize(("name", "kind", "values"), ENUMERATIONS, ids=[e[0] for e in ENUMERATIONS])
@pytest.mark.parametrize(
    "wrong", ["nope", "booked!", "pass", "pass D", "CYX", "   x   ", 5, True, 1.5, ["booked"], {}]
)
def test_a_wrong_value_names_the_allowed_values(
    name: str, kind: Any, values: tuple[str, ...], wrong: Any
) -> None:
    message = reason(kind, wrong)
    assert message.startswith("must be one of ")
    for value in values:
        assert value in message
    assert message.endswith(f" (received {fields.received(wrong)})")


@pytest.mark.parametrize(("name", "kind", "values"), ENUMERATIONS, ids=[e[0] for e in ENUMERATIONS])
def test_enumerations_take_null_and_empty_as_absent(
    name: str, kind: Any, values: tuple[str, ...]
) -> None:
    assert validate(kind, None) is None
    assert validate(kind, "") is None


# --- postcode -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("3064", "3064"),
        ("0800", "0800"),
        (" 3064 ", "3064"),
        ("0200", "0200"),
        ("0001", "0001"),
        (3064, "3064"),
        (800, "0800"),
        (200, "0200"),
        (9999, "9999"),
        # However encoded, the same postcode: form encoders send the text "800",
        # JSON encoders of a float (PHP json_encode of 3064.0, pandas) send 3064.0.
        ("800", "0800"),
        (" 800 ", "0800"),
        ("200", "0200"),
        (800.0, "0800"),
        (3064.0, "3064"),
        (None, None),
        ("", None),
    ],
)
def test_postcode_is_stored_as_four_digits(given: Any, stored: str | None) -> None:
    assert validate(fields.Postcode, given) == stored


@pytest.mark.parametrize(
    "given",
    [
        199,
        0,
        -3064,
        10000,
        "123",
        "12345",
        "abcd",
        "30 4",
        "3O64",
        "-800",
        "+800",
        "\uff13\uff10\uff16\uff14",  # full-width digits
        "\u0663\u0660\u0666\u0664",  # Arabic-Indic digits
        "199",
        "080",
        "80",
        "3064.0",
        3064.5,
        199.0,
        True,
        False,
        [3064],
        {"postcode": 3064},
    ],
)
def test_postcode_rejects_anything_else(given: Any) -> None:
    message = reason(fields.Postcode, given)
    assert message.startswith('must be 4 digits, or 3 (800 is "0800"), as text or a whole number')
    assert f"(received {fields.received(given)})" in message


# --- dates ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("1999-04-12", dt.date(1999, 4, 12)),
        ("2000-02-29", dt.date(2000, 2, 29)),
        ("1900-01-01", dt.date(1900, 1, 1)),
        (" 1999-04-12 ", dt.date(1999, 4, 12)),
        (dt.date(1999, 4, 12), dt.date(1999, 4, 12)),
        (None, None),
        ("", None),
    ],
)
def test_birth_dates_that_are_real_calendar_dates(given: Any, parsed: dt.date | None) -> None:
    assert validate(fields.BirthDate, given) == parsed


@pytest.mark.parametrize(
    "given",
    [
        "1999-02-30",
        "1900-02-29",
        "2023-02-29",
        "1999-13-01",
        "1999-00-10",
        "1999-04-31",
        "1999-04-00",
    ],
)
def test_dates_that_do_not_exist_are_refused(given: str) -> None:
    assert reason(fields.BirthDate, given) == (
        "must be a real calendar date written YYYY-MM-DD"
        " (received a YYYY-MM-DD text that names no calendar day)"
    )


@pytest.mark.parametrize(
    "given",
    [
        "12/04/1999",
        "1999/04/12",
        "1999-4-12",
        "99-04-12",
        "19990412",
        "1999-04-12T00:00:00",
        "1999-04-12 00:00:00",
        "12 April 1999",
        "1999-W15-1",
        19990412,
        True,
        dt.datetime(1999, 4, 12, 0, 0),
    ],
)
def test_dates_are_written_yyyy_mm_dd_only(given: Any) -> None:
    assert reason(fields.BirthDate, given) == (
        f"must be a date written YYYY-MM-DD (received {fields.received(given)})"
    )


def test_birth_date_before_1900_is_refused() -> None:
    assert reason(fields.BirthDate, "1899-12-31") == (
        "must be a date from 1900 on (received a date before 1900)"
    )


def test_birth_date_in_the_future_is_refused() -> None:
    today = dt.date.today()
    assert validate(fields.BirthDate, today.isoformat()) == today
    tomorrow = today + dt.timedelta(days=1)
    future = "must be a date up to today (received a date in the future)"
    assert reason(fields.BirthDate, tomorrow.isoformat()) == future
    assert reason(fields.BirthDate, "2999-01-01") == future


def test_plain_dates_may_be_in_the_future() -> None:
    assert fields.parse_date("2999-01-01") == dt.date(2999, 1, 1)


# --- date-times -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("2026-05-01 09:00:00", "2026-05-01 09:00:00"),
        ("2026-05-01 23:59:59", "2026-05-01 23:59:59"),
        (" 2026-05-01 09:00:00 ", "2026-05-01 09:00:00"),
        ("2028-02-29 00:00:00", "2028-02-29 00:00:00"),
        ("2026-05-01", "2026-05-01"),
        (None, None),
        ("", None),
    ],
)
def test_date_times_are_kept_as_written(given: Any, kept: str | None) -> None:
    assert validate(fields.DateTimeText, given) == kept


@pytest.mark.parametrize(
    "given",
    [
        "2026-05-01T09:00:00",
        "2026-05-01 09:00",
        "2026-05-01 9:00:00",
        "2026-05-01 09:00:00Z",
        "2026-05-01 09:00:00+10:00",
        "2026-05-01 09:00:00.5",
        "2026-02-30 09:00:00",
        "2027-02-29 09:00:00",
        "2026-05-01 24:00:00",
        "2026-05-01 09:60:00",
        "2026-05-01 09:00:61",
        "01/05/2026 09:00:00",
        "tomorrow",
        1777626000,
        True,
    ],
)
def test_date_times_that_are_not_real_or_not_in_the_format_are_refused(given: Any) -> None:
    assert reason(fields.DateTimeText, given) == (
        "must be a real date-time written YYYY-MM-DD HH:MM:SS or a date YYYY-MM-DD"
        f" (received {fields.received(given)})"
    )


# --- prices ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "price"),
    [
        ("249.00", Decimal("249.00")),
        ("249", Decimal("249.00")),
        ("249.5", Decimal("249.50")),
        (" 249.95 ", Decimal("249.95")),
        (249, Decimal("249.00")),
        (249.5, Decimal("249.50")),
        (Decimal("0.10"), Decimal("0.10")),
        ("0", Decimal("0.00")),
        ("9999999999.99", Decimal("9999999999.99")),
        (None, None),
        ("", None),
    ],
)
def test_prices_are_decimals_of_two_places(given: Any, price: Decimal | None) -> None:
    parsed = validate(fields.Price, given)
    assert parsed == price
    if price is not None:
        assert str(parsed) == str(price)


@pytest.mark.parametrize("given", ["249.001", "0.005", 249.999, Decimal("1.234")])
def test_more_than_two_decimal_places_is_refused(given: Any) -> None:
    assert reason(fields.Price, given) == (
        "must be a decimal number of at most 2 places, such as 249.00"
        f" (received {fields.received(given)})"
    )


@pytest.mark.parametrize(
    "given", ["-1", "-0.01", -249, "NaN", "Infinity", "-Infinity", float("inf"), "1e10"]
)
def test_negative_infinite_and_huge_prices_are_refused(given: Any) -> None:
    assert reason(fields.Price, given) == (
        f"must be a decimal number from 0 to 9999999999.99 (received {fields.received(given)})"
    )


@pytest.mark.parametrize("given", ["$249", "249,00", "two hundred", "249.00 AUD", True, [249]])
def test_prices_that_are_not_numbers_are_refused(given: Any) -> None:
    assert reason(fields.Price, given) == (
        f"must be a decimal number such as 249.00 (received {fields.received(given)})"
    )


# --- opt_in ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "flag"),
    [
        (True, True),
        (False, False),
        ("true", True),
        ("false", False),
        ("TRUE", True),
        ("False", False),
        (" true ", True),
        # As form encoders and spreadsheets write flags: PHP http_build_query 1/0, an
        # HTML checkbox "on", yes/no; JSON 1/0.
        ("1", True),
        ("0", False),
        ("on", True),
        ("OFF", False),
        ("Yes", True),
        ("no", False),
        (1, True),
        (0, False),
        (None, None),
        ("", None),
    ],
)
def test_opt_in_takes_booleans_and_their_spellings(given: Any, flag: bool | None) -> None:
    assert validate(fields.Flag, given) is flag


@pytest.mark.parametrize("given", ["t", "y", "maybe", "2", 2, -1, 0.5, "true false", [True], {}])
def test_opt_in_refuses_other_values(given: Any) -> None:
    message = reason(fields.Flag, given)
    assert message.startswith("must be true or false (also 1/0, on/off, yes/no, any case)")
    assert f"(received {fields.received(given)})" in message


# --- e-mail ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "stored"),
    [
        ("ann.nguyen@example.com", "ann.nguyen@example.com"),
        (" ann@example.com\n", "ann@example.com"),
        ("Ann@Example.COM", "Ann@example.com"),
        ("ann+rider@mail.example.com.au", "ann+rider@mail.example.com.au"),
        ("o'neil@example.com", "o'neil@example.com"),
        (None, None),
        ("", None),
    ],
)
def test_valid_email_addresses(given: Any, stored: str | None) -> None:
    assert validate(fields.Email, given) == stored


@pytest.mark.parametrize(
    "given",
    [
        "nope",
        "ann@",
        "@example.com",
        "ann@@example.com",
        "ann example@example.com",
        "ann@example",
        "ann@.example.com",
        "ann..nguyen@example.com",
        "ann@exa mple.com",
        # Longer than 254 characters: more than any mail system (or our column) takes.
        "a" * 243 + "@example.com",
        5,
        True,
    ],
)
def test_invalid_email_addresses_are_refused(given: Any) -> None:
    assert reason(fields.Email, given) == (
        f"must be an e-mail address such as ann@example.com (received {fields.received(given)})"
    )


# --- free text and error messages ------------------------------------------------------


def test_text_is_trimmed_bounded_and_free_of_nul() -> None:
    assert validate(fields.Name, "  Ann ") == "Ann"
    assert validate(fields.Name, "   ") is None
    assert validate(fields.Name, "a" * 80) == "a" * 80
    assert reason(fields.Name, "a" * 81) == (
        "must be at most 80 characters (received text of 81 characters)"
    )
    assert reason(fields.Name, "A\x00nn") == (
        "must be text without NUL characters (received text with a NUL character)"
    )
    assert reason(fields.Name, ["Ann"]) == (
        "must be text of at most 80 characters (received an array)"
    )
    assert reason(fields.Name, True) == (
        "must be text of at most 80 characters (received a JSON boolean)"
    )
    assert reason(fields.IdText, 5) == "must be a record id as text (received a JSON number)"


class _Sample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    postcode: fields.Postcode
    email: fields.Email = None
    course_status: fields.CourseStatus = None


def test_error_messages_name_each_field() -> None:
    with pytest.raises(ValidationError) as caught:
        _Sample.model_validate({"email": "nope", "course_status": "done", "shoe_size": 9})
    assert sorted(fields.error_messages(caught.value)) == sorted(
        [
            "postcode: is required",
            "email: must be an e-mail address such as ann@example.com"
            " (received text of 4 characters)",
            "course_status: must be one of booked, cancelled, completed - pass, completed - fail"
            " (received text of 4 characters)",
            "shoe_size: is not a known field",
        ]
    )
