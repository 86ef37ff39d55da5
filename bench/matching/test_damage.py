"""The FEBRL benchmark's kinds of damage: what a duplicate changed in its original."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench.matching import damage
from bench.matching.damage import Record

ORIGINAL = Record(
    rec_id="rec-1-org",
    given_name="campbell",
    surname="hursey",
    street_number="3",
    address_1="spinifex street",
    address_2="sweet waters",
    suburb="toowoomba",
    postcode="3980",
    state="sa",
    date_of_birth="19800422",
    soc_sec_id="7118146",
)


def changes(**fields: str) -> dict[str, str]:
    return damage.changes(replace(ORIGINAL, rec_id="rec-1-dup-0", **fields), ORIGINAL)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({}, {}),
        ({"given_name": "cambell"}, {"given_name": "1 slip"}),
        ({"given_name": "cmapbelk"}, {"given_name": "2+ slips"}),
        ({"given_name": "amelia"}, {"given_name": "replaced"}),
        ({"surname": "hur sey"}, {"surname": "spaces"}),
        ({"given_name": "hursey", "surname": "campbell"}, {"names": "swapped"}),
        ({"given_name": ""}, {"given_name": "missing"}),
        ({"date_of_birth": "19800423"}, {"date_of_birth": "1 digit"}),
        ({"date_of_birth": "19810422"}, {"date_of_birth": "year only"}),
        ({"date_of_birth": "19800523"}, {"date_of_birth": "2 digits"}),
        ({"date_of_birth": "19800242"}, {"date_of_birth": "transposed"}),
        ({"date_of_birth": "19870526"}, {"date_of_birth": "replaced"}),
        ({"postcode": "3908"}, {"postcode": "1 slip"}),
        ({"postcode": "2615"}, {"postcode": "different"}),
        ({"street_number": ""}, {"street": "number missing"}),
        ({"address_1": "spinifex sreet"}, {"street": "typo"}),
        ({"soc_sec_id": "7118147"}, {"soc_sec_id": "1 digit"}),
        ({"soc_sec_id": "7118777"}, {"soc_sec_id": "2+ digits"}),
    ],
)
def test_each_field_is_labelled_by_how_it_changed(
    fields: dict[str, str], expected: dict[str, str]
) -> None:
    assert changes(**fields) == expected


def test_a_day_and_month_swap_is_told_apart_from_other_digit_changes() -> None:
    assert damage.date_change("19800304", "19800403") == "day and month swapped"
    assert damage.date_change("19800304", "19800315") == "2 digits"


def test_the_guard_ceiling_readings_widen_from_strict_to_any() -> None:
    twin = changes(given_name="amelia")
    twin_with_a_typo = changes(given_name="amelia", address_1="spinifex sreet")
    sibling = changes(given_name="amelia", date_of_birth="19870526")
    other_person = changes(given_name="amelia", surname="brain")
    assert [damage.guard_ceiling_case(twin, r) for r in damage.CEILINGS] == [True] * 3
    assert [damage.guard_ceiling_case(twin_with_a_typo, r) for r in damage.CEILINGS] == [
        False,
        True,
        True,
    ]
    assert [damage.guard_ceiling_case(sibling, r) for r in damage.CEILINGS] == [
        False,
        False,
        True,
    ]
    assert not any(damage.guard_ceiling_case(other_person, r) for r in damage.CEILINGS)


def test_a_duplicate_counts_its_fields_and_a_swap_as_two() -> None:
    assert damage.size(changes()) == "0 fields"
    assert damage.size(changes(given_name="hursey", surname="campbell")) == "2 fields"
    assert damage.size(changes(given_name="amelia", postcode="3908", soc_sec_id="1")) == (
        "3+ fields"
    )
