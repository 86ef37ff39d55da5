"""Salesforce-format ids (docs/decisions.md, "Ids"): checksum, both input forms, prefixes, bad input."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ridercrm.ids import (
    MISTYPED,
    RecordKind,
    canonical_id,
    checksum,
    id_problem,
    kind_of,
    mistyped_suffix,
    new_id,
    unknown_id_note,
)

ALPHANUMERIC = string.ascii_letters + string.digits

# 15-character ids and their 18-character forms. The first pair is a widely quoted real
# Salesforce account id; the others were worked out by hand from the algorithm: split the 15 characters into three chunks of five; in
# each chunk, bit i is set when character i is an upper-case letter; the chunk's
# suffix character is "ABCDEFGHIJKLMNOPQRSTUVWXYZ012345"[bits].
KNOWN_PAIRS = [
    # 001A0 -> A at 3 -> 8 -> I;  00000 -> 0 -> A;  6Vm9r -> V at 1 -> 2 -> C
    ("001A0000006Vm9r", "001A0000006Vm9rIAC"),
    # 00150 -> A;  00000 -> A;  Gv7qJ -> G at 0, J at 4 -> 1 + 16 = 17 -> R
    ("0015000000Gv7qJ", "0015000000Gv7qJAAR"),
    # 003AB -> A at 3, B at 4 -> 24 -> Y;  CDEFG -> 31 -> 5;  HIJKL -> 31 -> 5
    ("003ABCDEFGHIJKL", "003ABCDEFGHIJKLY55"),
    # all lower case and digits: no bits anywhere
    ("003abcdefghijkl", "003abcdefghijklAAA"),
    # 00Q5x -> Q at 2 -> 4 -> E;  Yz0Ab -> Y at 0, A at 3 -> 9 -> J;  cDeFg -> D 1, F 3 -> 10 -> K
    ("00Q5xYz0AbcDeFg", "00Q5xYz0AbcDeFgEJK"),
    # a0A00 -> A at 2 -> 4 -> E;  00000 -> A;  0000Z -> Z at 4 -> 16 -> Q
    ("a0A000000000000", "a0A000000000000EAA"),
    ("a0A00000000000Z", "a0A00000000000ZEAQ"),
]

id15s = st.text(alphabet=ALPHANUMERIC, min_size=15, max_size=15)
kinds = st.sampled_from(list(RecordKind))


def random_case(text: str, flips: list[bool]) -> str:
    return "".join(ch.swapcase() if flip else ch for ch, flip in zip(text, flips, strict=True))


@pytest.mark.parametrize(("id15", "id18"), KNOWN_PAIRS)
def test_checksum_of_known_ids(id15: str, id18: str) -> None:
    assert checksum(id15) == id18[15:]
    assert canonical_id(id15) == id18
    assert canonical_id(id18) == id18


@pytest.mark.parametrize(("id15", "id18"), KNOWN_PAIRS)
def test_eighteen_character_form_in_any_case_restores_the_original(id15: str, id18: str) -> None:
    assert canonical_id(id18.lower()) == id18
    assert canonical_id(id18.upper()) == id18
    assert canonical_id(id18.swapcase()) == id18


def test_surrounding_space_is_ignored() -> None:
    assert canonical_id("  001A0000006Vm9rIAC\n") == "001A0000006Vm9rIAC"


@settings(max_examples=200)
@given(kinds)
def test_new_id_round_trips(kind: RecordKind) -> None:
    made = new_id(kind)
    assert len(made) == 18
    assert made.startswith(kind.prefix)
    assert canonical_id(made) == made
    assert canonical_id(made, kind) == made
    assert canonical_id(made[:15], kind) == made
    assert kind_of(made) is kind


def test_new_ids_differ() -> None:
    made = {new_id(RecordKind.CONTACT) for _ in range(1000)}
    assert len(made) == 1000


@settings(max_examples=200)
@given(id15s)
def test_fifteen_to_eighteen_to_fifteen(id15: str) -> None:
    id18 = canonical_id(id15)
    assert id18 is not None
    assert len(id18) == 18
    assert id18[:15] == id15
    assert canonical_id(id18) == id18
    assert canonical_id(id18[:15]) == id18


@settings(max_examples=200)
@given(id15s, st.lists(st.booleans(), min_size=18, max_size=18))
def test_any_casing_of_the_eighteen_character_form_restores_the_original(
    id15: str, flips: list[bool]
) -> None:
    id18 = id15 + checksum(id15)
    assert canonical_id(random_case(id18, flips)) == id18


@settings(max_examples=200)
@given(id15s)
def test_fifteen_character_form_is_case_sensitive(id15: str) -> None:
    swapped = id15.swapcase()
    if swapped != id15:
        assert canonical_id(swapped) != canonical_id(id15)


@settings(max_examples=200)
@given(kinds, kinds)
def test_wrong_prefix_is_rejected(made_as: RecordKind, asked_for: RecordKind) -> None:
    made = new_id(made_as)
    expected = made if made_as is asked_for else None
    assert canonical_id(made, asked_for) == expected
    assert canonical_id(made[:15], asked_for) == expected
    assert canonical_id(made.lower(), asked_for) == expected


def test_prefix_is_compared_case_sensitively() -> None:
    # 00q... is not a lead: in the 15-character form case matters.
    assert canonical_id("00q5xYz0AbcDeFg", RecordKind.LEAD) is None
    assert canonical_id("00Q5xYz0AbcDeFg", RecordKind.LEAD) == "00Q5xYz0AbcDeFgEJK"


@settings(max_examples=200)
@given(st.text(alphabet=ALPHANUMERIC).filter(lambda s: len(s) not in (15, 18)))
def test_wrong_length_is_rejected(value: str) -> None:
    assert canonical_id(value) is None


@settings(max_examples=200)
@given(
    st.sampled_from([15, 18]).flatmap(
        lambda n: st.tuples(
            st.text(alphabet=ALPHANUMERIC, min_size=n - 1, max_size=n - 1),
            st.characters().filter(lambda c: c not in ALPHANUMERIC and not c.isspace()),
            st.integers(min_value=0, max_value=n - 1),
        )
    )
)
def test_non_alphanumeric_character_is_rejected(parts: tuple[str, str, int]) -> None:
    rest, bad, position = parts
    assert canonical_id(rest[:position] + bad + rest[position:]) is None


@pytest.mark.parametrize("bad", ["6", "7", "8", "9"])
@pytest.mark.parametrize("position", [15, 16, 17])
def test_suffix_character_outside_the_alphabet_is_rejected(bad: str, position: int) -> None:
    id18 = "001A0000006Vm9rIAC"
    assert canonical_id(id18[:position] + bad + id18[position + 1 :]) is None


def test_suffix_marking_a_digit_as_upper_case_is_rejected() -> None:
    # "B" sets bit 0 of the first chunk, whose first character is the digit 0.
    assert canonical_id("001A0000006Vm9rBAC") is None
    # "5" (31) sets every bit of the last chunk, which holds digits 6 and 9.
    assert canonical_id("001A0000006Vm9rIA5") is None


@pytest.mark.parametrize(
    "value",
    [
        None,
        15,
        1.0,
        b"001A0000006Vm9rIAC",
        ["001A0000006Vm9rIAC"],
        {"id": "001A0000006Vm9rIAC"},
        "",
        "001A0000006Vm9",
        "001A0000006Vm9rIA",
        "001A0000006Vm9rIACX",
        "001A 000006Vm9r",
        "001A-000006Vm9rIAC",
        "001Á0000006Vm9r",
        "00\uff11A0000006Vm9r",  # a full-width digit one
    ],
)
def test_malformed_input_gives_none(value: object) -> None:
    assert canonical_id(value) is None
    assert canonical_id(value, RecordKind.CONTACT) is None


def test_kind_of_unknown_prefix_is_none() -> None:
    assert kind_of("001A0000006Vm9rIAC") is None
    assert kind_of("003A0000006Vm9rIAC") is RecordKind.CONTACT


def test_a_suffix_that_cannot_be_the_checksum_is_called_mistyped() -> None:
    for value in ("001A0000006Vm9r999", "001A0000006Vm9rBAC", " 003abcdefghijkl7AA "):
        assert canonical_id(value) is None
        assert id_problem(value) == MISTYPED
        assert id_problem(value, RecordKind.CONTACT) == MISTYPED
    assert id_problem("bogus") == "an id has 15 or 18 characters, this one 5"
    assert id_problem("001A-000006Vm9r") == "an id has letters and digits only"
    assert id_problem("001A0000006Vm9rIAC", RecordKind.CONTACT) == "it should start 003"


@pytest.mark.parametrize(("id15", "id18"), KNOWN_PAIRS)
def test_a_suffix_that_contradicts_the_case_of_the_first_15_is_mistyped(
    id15: str, id18: str
) -> None:
    assert not mistyped_suffix(id18)
    assert unknown_id_note(id18) == ""
    for folded in (id18.lower(), id18.upper()):
        # one case throughout: an id whose case was dropped, which the suffix restores
        assert not mistyped_suffix(folded)
    mixed = id15 not in (id15.lower(), id15.upper())
    for other in ("AAA", "AAB", "5AC", "IAC"):
        if other != id18[15:]:
            assert mistyped_suffix(id15 + other) is mixed
            assert mistyped_suffix(id15 + other.lower()) is mixed
            assert unknown_id_note(id15 + other) == (f" ({MISTYPED})" if mixed else "")


@given(id15s, st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ012345", min_size=3, max_size=3))
def test_only_the_checksum_fits_an_id_written_in_mixed_case(id15: str, suffix: str) -> None:
    mixed = id15 not in (id15.lower(), id15.upper())
    assert not mistyped_suffix(id15 + checksum(id15))
    assert mistyped_suffix(id15 + suffix) is (mixed and suffix != checksum(id15))


@pytest.mark.parametrize("value", [None, 15, "", "001A0000006Vm9r", "001A0000006Vm9rAA-"])
def test_what_is_no_18_character_id_is_not_called_mistyped(value: object) -> None:
    assert not mistyped_suffix(value)
    assert unknown_id_note(value) == ""
