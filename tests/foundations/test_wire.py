"""Request decoding and response negotiation (docs/decisions.md, "Wire"), without the web framework."""

from __future__ import annotations

import json
import string
from typing import Any
from urllib.parse import urlencode

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ridercrm.wire import BodyError, decode_body, header_value, negotiate, parse_content_type

JSON_TYPES = ["application/json", "text/json", "text/plain"]
FORM = "application/x-www-form-urlencoded"


def refused(raw: bytes, content_type: str | None) -> BodyError:
    with pytest.raises(BodyError) as caught:
        decode_body(raw, content_type)
    return caught.value


# --- the three JSON types and a missing type ---------------------------------------


@pytest.mark.parametrize("content_type", [*JSON_TYPES, None, ""])
def test_json_text_decodes(content_type: str | None) -> None:
    body = {"people_product": [{"person_id": "003A", "opt_in": True, "n": 1.5, "x": None}]}
    assert decode_body(json.dumps(body).encode(), content_type) == body


@pytest.mark.parametrize(
    "content_type",
    ["Application/JSON; Charset=UTF-8", "text/json;charset=utf-8", 'text/plain; charset="UTF-8"'],
)
def test_type_and_charset_are_read_case_insensitively(content_type: str) -> None:
    assert decode_body('{"name": "Zoë"}'.encode(), content_type) == {"name": "Zoë"}


def test_a_json_array_or_scalar_is_still_json() -> None:
    # Whether the top level has the right shape is for the operation to say.
    assert decode_body(b"[1, 2]", "application/json") == [1, 2]
    assert decode_body(b'"text"', "text/plain") == "text"


def test_utf8_byte_order_mark_is_dropped() -> None:
    assert decode_body(b'\xef\xbb\xbf{"a": 1}', "application/json") == {"a": 1}


# --- charsets -----------------------------------------------------------------------


def test_latin1_charset_is_honoured() -> None:
    raw = '{"first_name": "Zoë", "city": "Münster"}'.encode("latin-1")
    assert decode_body(raw, "application/json; charset=iso-8859-1") == {
        "first_name": "Zoë",
        "city": "Münster",
    }


@pytest.mark.parametrize("charset", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
@pytest.mark.parametrize("content_type", JSON_TYPES)
def test_utf16_and_utf32_json_are_honoured(charset: str, content_type: str) -> None:
    body = {"first_name": "Zoë", "last_name": "Ngô"}
    raw = json.dumps(body, ensure_ascii=False).encode(charset)
    assert decode_body(raw, f"{content_type}; charset={charset}") == body


@pytest.mark.parametrize(
    ("raw", "charset"),
    [
        (b'{"a": "\xff"}', "utf-8"),
        (b'{"a": "\xc3"}', "utf-8"),
        (b'{"a": "\x80"}', "us-ascii"),
        ('{"a": 1}'.encode("utf-16-le") + b"\x00", "utf-16-le"),
        (b"\x00\xd8\x00\xd8", "utf-16-le"),
    ],
)
def test_bytes_invalid_in_the_charset_are_400(raw: bytes, charset: str) -> None:
    assert refused(raw, f"application/json; charset={charset}").status == 400


def test_latin1_bytes_without_a_charset_are_400() -> None:
    assert refused('{"a": "Zoë"}'.encode("latin-1"), "application/json").status == 400


@pytest.mark.parametrize("charset", ["klingon", "", "utf-9", "base64", "rot13", "zlib", "hex"])
def test_unknown_or_non_text_charset_is_415(charset: str) -> None:
    assert refused(b'{"a": 1}', f"application/json; charset={charset}").status == 415
    assert refused(b"a=1", f"{FORM}; charset={charset}").status == 415


# --- other content types ------------------------------------------------------------


@pytest.mark.parametrize(
    "content_type",
    [
        "application/xml",
        "text/xml",
        "text/html",
        "multipart/form-data; boundary=x",
        "application/octet-stream",
        "application/json-patch+json",
        "application/jsonx",
        "json",
    ],
)
def test_other_content_types_are_415(content_type: str) -> None:
    assert refused(b'{"a": 1}', content_type).status == 415


# --- unusable JSON ------------------------------------------------------------------


@pytest.mark.parametrize("content_type", [*JSON_TYPES, None])
@pytest.mark.parametrize("raw", [b"", b"   ", b"\r\n\t ", b"\xef\xbb\xbf"])
def test_empty_body_is_400(content_type: str | None, raw: bytes) -> None:
    assert refused(raw, content_type).status == 400


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"not json",
        b"{'a': 1}",
        b'{"a": 1,}',
        b'{"a": 1} trailing',
        b'{"a": "\x00"}',
        b"\x00",
        b"\x00\x00\x00\x00",
    ],
)
def test_text_that_is_not_json_is_400(raw: bytes) -> None:
    assert refused(raw, "application/json").status == 400


@pytest.mark.parametrize(
    "raw",
    [
        b'{"price": NaN}',
        b'{"price": Infinity}',
        b'{"price": -Infinity}',
        b"[NaN]",
        # Valid JSON syntax, but a float of this size is infinite: refused the same way.
        b'{"price": 1e999}',
        b'{"price": -1e999}',
    ],
)
def test_nan_and_infinity_are_refused(raw: bytes) -> None:
    error = refused(raw, "application/json")
    assert error.status == 400


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": "\\ud800"}',
        b'{"a": "x\\uDFFFy"}',
        b'{"\\udc00": 1}',
        b'[["\\ude00\\ud83d"]]',
        b'{"a": "\\ud83d"}',
    ],
)
def test_escapes_of_unpaired_surrogates_are_refused(raw: bytes) -> None:
    # They decode to strings that no database and no UTF-8 response can hold.
    assert "surrogate" in refused(raw, "application/json").reason
    # As a form field's value it is not JSON, so it stays the text it was.
    form = urlencode({"people_product": raw.decode()}).encode()
    assert decode_body(form, FORM) == {"people_product": raw.decode()}


def test_escapes_of_surrogate_pairs_and_escaped_backslashes_are_fine() -> None:
    assert decode_body(b'{"a": "\\ud83d\\ude00"}', "application/json") == {"a": "\U0001f600"}
    assert decode_body(b'{"a": "\\\\ud800"}', "application/json") == {"a": "\\ud800"}


def test_duplicate_keys_are_refused_at_any_level() -> None:
    assert "duplicate key" in refused(b'{"a": 1, "a": 1}', "application/json").reason
    assert refused(b'{"x": [{"a": 1, "b": 2, "a": 3}]}', "text/json").status == 400


@pytest.mark.parametrize("digits", [4_301, 5_000, 100_000])
def test_a_number_of_thousands_of_digits_is_refused_in_plain_words(digits: int) -> None:
    """Python refuses to read it (its int limit): the reason says so in the body's terms,
    naming the field, never with the interpreter's own advice."""
    for sign in ("", "-"):
        error = refused(b'{"capacity": ' + sign.encode() + b"9" * digits + b"}", "application/json")
        assert error.status == 400
        assert error.reason == (
            f"body is not usable JSON (capacity: has too many digits ({digits};"
            " a number is read up to 4300))"
        )
        assert "sys." not in error.reason
    assert decode_body(b'{"capacity": ' + b"9" * 4_300 + b"}", "application/json") == {
        "capacity": int("9" * 4_300)
    }


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b'{"people_data": [{"ID": "x", "postcode": %s}]}', "postcode: has too many digits"),
        (b'{"assets": ["02i", [1, %s]]}', "assets: has too many digits"),
        (b"[1, [%s]]", "a value has too many digits"),
        (b"%s", "a value has too many digits"),
        (b'{"price": %s.5}', "price: is too large a number)"),
        (b'{"price": 1e999}', "price: is too large a number)"),
        (b"[-1e999]", "a value is too large a number)"),
    ],
)
def test_a_number_too_large_to_read_is_refused_naming_its_field(raw: bytes, reason: str) -> None:
    """The field it stands in is named (in an array: the array's), the number itself is not
    quoted back (it may be megabytes)."""
    error = refused(raw.replace(b"%s", b"9" * 5_000), "application/json")
    assert error.status == 400
    assert error.reason.startswith("body is not usable JSON (" + reason), error.reason
    assert "999" not in error.reason
    assert "sys." not in error.reason


@pytest.mark.parametrize("depth", [33, 100, 990, 5_000, 200_000])
@pytest.mark.parametrize("opening", ["[", '{"a":'])
def test_deep_nesting_is_400_without_recursion_error(depth: int, opening: str) -> None:
    closing = "]" if opening == "[" else "}"
    raw = (opening * depth + "1" + closing * depth).encode()
    error = refused(raw, "application/json")
    assert error.status == 400
    assert "nested too deeply" in error.reason


def test_unterminated_deep_nesting_is_400() -> None:
    assert refused(b"[" * 100_000, "application/json").status == 400


def test_nesting_within_the_limit_is_fine() -> None:
    raw = ("[" * 32 + "1" + "]" * 32).encode()
    value: Any = decode_body(raw, "application/json")
    for _ in range(32):
        assert isinstance(value, list)
        value = value[0]
    assert value == 1


@pytest.mark.parametrize("digits", [4_301, 10_000, 100_000])
def test_huge_integers_are_400_not_a_crash(digits: int) -> None:
    raw = b'{"postcode": ' + b"7" * digits + b"}"
    assert refused(raw, "application/json").status == 400
    assert refused(b"-" + b"9" * digits, "text/plain").status == 400


def test_big_integers_within_pythons_limit_decode() -> None:
    assert decode_body(b"1" + b"0" * 100, "application/json") == 10**100


# --- application/x-www-form-urlencoded ------------------------------------------------


def test_form_with_raw_json_text() -> None:
    body = {"person_data": {"first_name": "Ann", "postcode": 3064}}
    assert decode_body(json.dumps(body).encode(), FORM) == body
    assert decode_body(b"  \n" + json.dumps(body).encode(), FORM) == body


def test_form_fields_with_json_values() -> None:
    items = [{"person_id": "003A", "course_status": "booked"}, {"person_id": "00QB"}]
    raw = urlencode({"people_product": json.dumps(items)}).encode()
    assert decode_body(raw, FORM) == {"people_product": items}


def test_form_field_json_values_keep_their_shape() -> None:
    # An object whose keys happen to be "0", "1" is an object, not a list.
    value = {"0": "zero", "1": "one"}
    raw = urlencode({"person_data": json.dumps(value), "flag": "true"}).encode()
    assert decode_body(raw, FORM) == {"person_data": value, "flag": "true"}


@pytest.mark.parametrize("text", ["null", "Null", "NULL", "true", "false", "0", "3064"])
def test_form_scalar_values_stay_text(text: str) -> None:
    # A surname can be Null; flags and numbers are read from their text by each field.
    raw = urlencode({"last_name": text, "person_data[last_name]": text}).encode()
    assert decode_body(raw, FORM) == {"last_name": text, "person_data": {"last_name": text}}


def test_form_fields_with_plain_text_values() -> None:
    raw = b"first_name=Ann&last_name=O%27Neil&postcode=3064&empty=&notjson=%7Bnope"
    assert decode_body(raw, FORM) == {
        "first_name": "Ann",
        "last_name": "O'Neil",
        "postcode": "3064",
        "empty": "",
        "notjson": "{nope",
    }


def test_form_bracket_fields_make_objects() -> None:
    raw = b"person_data[first_name]=Ann&person_data[last_name]=Lee+Smith&person_data[postcode]=0800"
    assert decode_body(raw, FORM) == {
        "person_data": {"first_name": "Ann", "last_name": "Lee Smith", "postcode": "0800"}
    }


def test_form_indexed_bracket_fields_make_lists_of_objects() -> None:
    raw = (
        b"items[0][a]=1&items[0][b]=x&items[1][a]=2"
        b"&items[2][a]=3&items[10][a]=11&items[3][a]=4&items[4][a]=5&items[5][a]=6"
        b"&items[6][a]=7&items[7][a]=8&items[8][a]=9&items[9][a]=10"
    )
    decoded = decode_body(raw, FORM)
    assert decoded["items"][0] == {"a": "1", "b": "x"}
    assert [item["a"] for item in decoded["items"]] == [str(n) for n in range(1, 12)]


def test_form_empty_brackets_append_to_a_list() -> None:
    raw = b"person_data[first_name]=Ann&person_data[assets][]=02iA&person_data[assets][]=02iB"
    assert decode_body(raw, FORM) == {
        "person_data": {"first_name": "Ann", "assets": ["02iA", "02iB"]}
    }
    assert decode_body(b"assets[]=x", FORM) == {"assets": ["x"]}


def test_form_sparse_and_non_zero_based_indexes_are_a_list_in_index_order() -> None:
    # PHP arrays after unset(), qs with indices of a filtered array, hand-written forms.
    assert decode_body(b"a[0]=x&a[2]=y", FORM) == {"a": ["x", "y"]}
    raw = b"items[5][a]=3&items[1][a]=1&items[3][a]=2&items[3][b]=x"
    assert decode_body(raw, FORM) == {"items": [{"a": "1"}, {"a": "2", "b": "x"}, {"a": "3"}]}
    assert decode_body(b"items[1][a]=1", FORM) == {"items": [{"a": "1"}]}


def test_form_indexes_of_any_length_are_ordered_without_a_crash() -> None:
    huge = "9" * 5_000  # int() refuses more than 4300 digits
    raw = f"a[{huge}]=z&a[10]=y&a[9]=x".encode()
    assert decode_body(raw, FORM) == {"a": ["x", "y", "z"]}


def test_form_index_written_twice_is_refused_saying_how() -> None:
    error = refused(b"items[0][a]=1&items[00][b]=2", FORM)
    assert error.reason == (
        "form fields items[0] and items[00] name the same index;"
        " write each index once, e.g. items[0], items[1]"
    )


def test_form_empty_brackets_start_a_new_item_when_a_field_repeats() -> None:
    # Rack's rule, which qs (arrayFormat brackets), Rails' to_query and jQuery.param rely on.
    raw = b"p[][a]=1&p[][b]=2&p[][a]=3&p[][b]=4&p[][a]=5"
    assert decode_body(raw, FORM) == {"p": [{"a": "1", "b": "2"}, {"a": "3", "b": "4"}, {"a": "5"}]}
    raw = b"p[][a][x]=1&p[][a][y]=2&p[][a][x]=3"
    assert decode_body(raw, FORM) == {"p": [{"a": {"x": "1", "y": "2"}}, {"a": {"x": "3"}}]}
    raw = b"p[][tags][]=x&p[][tags][]=y&p[][a]=1"
    assert decode_body(raw, FORM) == {"p": [{"tags": ["x", "y"], "a": "1"}]}


def test_form_indexes_and_empty_brackets_mixed_are_refused_saying_how() -> None:
    error = refused(b"p[0][a]=1&p[][a]=2", FORM)
    assert "form field 'p[][a]' mixes shapes" in error.reason
    assert "p[0][field]=...&p[1][field]=... or p[][field]=..." in error.reason


def test_form_dot_notation_is_read_as_brackets() -> None:
    # qs.stringify(..., {allowDots: true})
    raw = b"p[0].a=1&p[0].b=2&p[1].a=3&d.x=4&d.y.z=5&d.list[]=6"
    assert decode_body(raw, FORM) == {
        "p": [{"a": "1", "b": "2"}, {"a": "3"}],
        "d": {"x": "4", "y": {"z": "5"}, "list": ["6"]},
    }
    # A dot inside brackets is part of the name, as qs reads it.
    assert decode_body(b"a[b.c]=1", FORM) == {"a": {"b.c": "1"}}


@pytest.mark.parametrize("name", ["a[b]c", "a[b", "a.", "a..b", "a[b]]", "a]"])
def test_form_names_we_cannot_read_are_refused_not_dropped(name: str) -> None:
    error = refused(urlencode({name: "1", "a[z]": "2"}).encode(), FORM)
    assert f"form field {name!r}" in error.reason


def test_form_non_ascii_digit_names_are_names_not_indexes() -> None:
    assert decode_body("a[²]=x".encode(), FORM) == {"a": {"²": "x"}}
    assert decode_body(b"a[%D9%A1]=x&a[0]=y", FORM) == {"a": {"\u0661": "x", "0": "y"}}


def test_form_percent_escapes_use_the_charset() -> None:
    assert decode_body(b"first_name=Zo%C3%AB", FORM) == {"first_name": "Zoë"}
    assert decode_body(b"first_name=Zo%EB", f"{FORM}; charset=iso-8859-1") == {"first_name": "Zoë"}
    assert decode_body("first_name=Zoë".encode("latin-1"), f"{FORM}; charset=latin-1") == {
        "first_name": "Zoë"
    }


@pytest.mark.parametrize("charset", ["utf-16", "utf-16-le", "utf-16-be"])
@pytest.mark.parametrize(("first", "last"), [("Zoë", "Ngô"), ("Ann", "Lee")])
def test_form_in_utf16_is_honoured(charset: str, first: str, last: str) -> None:
    raw = f"person_data[first_name]={first}&person_data[last_name]={last}".encode(charset)
    assert decode_body(raw, f"{FORM}; charset={charset}") == {
        "person_data": {"first_name": first, "last_name": last}
    }


@pytest.mark.parametrize(
    "raw",
    [
        b"first_name=Zo%FF",
        b"a=1&a=2",
        b"a[0]=1&a[]=2",
        b"a[b]=1&a[b]=2",
        b"a=1&a[b]=2",
        b"a[b]=1&a=2",
        b"a[]=1&a[b]=2",
        b"=1",
        b"[x]=1",
        b"&&&",
    ],
)
def test_unusable_form_bodies_are_400(raw: bytes) -> None:
    assert refused(raw, FORM).status == 400


def test_form_nested_too_deeply_is_400() -> None:
    name = "a" + "[b]" * 40
    assert refused(f"{name}=1".encode(), FORM).status == 400
    deep = "a" + "[b]" * 10_000
    assert refused(f"{deep}=1".encode(), FORM).status == 400


def test_form_field_with_deeply_nested_json_is_kept_as_text_not_a_crash() -> None:
    value = "[" * 100_000
    assert decode_body(urlencode({"a": value}).encode(), FORM) == {"a": value}


# --- negotiation ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        (None, "application/json"),
        ("", "application/json"),
        ("*/*", "application/json"),
        ("application/json", "application/json"),
        ("text/json", "text/json"),
        ("TEXT/JSON", "text/json"),
        ("text/*", "text/json"),
        ("application/json, text/json", "application/json"),
        ("text/json, application/json", "application/json"),
        ("text/json;q=0.9, application/json;q=0.8", "text/json"),
        ("application/json;q=0.5, text/json", "text/json"),
        ("application/json;q=0.9, text/json;q=1.0", "text/json"),
        ("text/json; q=0.5, */*; q=0.1", "text/json"),
        ("text/json;q=0, */*", "application/json"),
        ("text/json;q=0.4, application/*;q=0.5", "application/json"),
        ("text/*;q=0.8, application/json;q=0.7", "text/json"),
        ("text/json;q=nonsense, application/json;q=0.1", "application/json"),
        ("application/xml", "application/json"),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "application/json"),
    ],
)
def test_negotiate_prefers_text_json_only_when_asked(accept: str | None, chosen: str) -> None:
    assert negotiate(accept) == chosen


def test_parse_content_type() -> None:
    assert parse_content_type(' Text/JSON ; Charset="ISO-8859-1" ; x=y') == (
        "text/json",
        {"charset": "ISO-8859-1", "x": "y"},
    )
    assert parse_content_type(None) == ("", {})


# --- properties -----------------------------------------------------------------------

texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=20)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | texts,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(texts, children, max_size=4),
    max_leaves=12,
)
json_objects = st.dictionaries(texts, json_values, max_size=6)


@settings(max_examples=100)
@given(json_objects, st.sampled_from([*JSON_TYPES, FORM]), st.booleans())
def test_any_json_object_decodes_to_itself(
    value: dict[str, Any], content_type: str, ascii_only: bool
) -> None:
    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8")
    assert decode_body(raw, content_type) == value


@settings(max_examples=100)
@given(json_objects, st.sampled_from(["utf-16", "utf-32", "utf-8-sig"]))
def test_any_json_object_decodes_to_itself_in_other_charsets(
    value: dict[str, Any], charset: str
) -> None:
    raw = json.dumps(value, ensure_ascii=False).encode(charset)
    assert decode_body(raw, f"application/json; charset={charset}") == value


field_names = st.text(string.ascii_letters + string.digits + "_", min_size=1, max_size=12).filter(
    lambda name: not name.isdigit()
)


@settings(max_examples=200)
@given(st.dictionaries(field_names, texts, min_size=1, max_size=8))
def test_a_flat_dict_of_strings_as_bracket_fields_decodes_to_itself(
    value: dict[str, str],
) -> None:
    raw = urlencode([(f"person_data[{name}]", text) for name, text in value.items()]).encode()
    assert decode_body(raw, FORM) == {"person_data": value}


@given(st.text())
def test_a_header_value_is_one_h11_sends(text: str) -> None:
    """Whatever a failure reason quotes, h11 (`ridercrm serve`) accepts it as a header."""
    import h11

    value = header_value(text)
    h11.Response(status_code=400, headers=[("X-Failure-Reason", value)])
    assert len(value) <= 500
