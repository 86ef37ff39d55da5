"""CSV header matching and the importer's direct use of the admin API's field rules."""

from __future__ import annotations

import re
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from ridercrm.fields import error_messages
from ridercrm.people.blocking import stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import PERSON_FIELDS
from ridercrm.people.schemas import PersonCreate
from ridercrm.products.schemas import ProductCreate
from ridercrm.transfer.columns import (
    CONTACTS,
    LEADS,
    PRODUCTS,
    TARGETS,
    HeaderProblem,
    plan_columns,
)
from ridercrm.transfer.rows import PERSON_RULES, PRODUCT_RULES, Rules, person_rows, product_row


def fields_of(target_name: str, header: list[str]) -> list[str]:
    plan = plan_columns(TARGETS[target_name], header)
    return [name for _index, name in plan.cells]


def test_headers_match_in_any_case_and_unknown_ones_are_ignored_when_named() -> None:
    header = [" firstname ", "LASTNAME", "Junk", "email", "", "Other"]
    with pytest.raises(HeaderProblem, match="unknown columns Junk, Other"):
        plan_columns(CONTACTS, header)
    plan = plan_columns(CONTACTS, header, ignore=["junk", "OTHER"])
    assert plan.cells == ((0, "first_name"), (1, "last_name"), (3, "email"))
    assert plan.ignored == ("Junk", "Other")
    assert plan.width == 6


def test_salesforce_custom_fields_and_opt_out_is_not_opt_in() -> None:
    header = ["FirstName", "LastName", "Drivers_License__c", "license_type__c", "Opt_In__c",
              "HasOptedOutOfEmail"]  # fmt: skip
    plan = plan_columns(CONTACTS, header, ignore=["HasOptedOutOfEmail"])
    assert [name for _i, name in plan.cells] == [
        "first_name", "last_name", "drivers_license", "license_type", "opt_in",
    ]  # fmt: skip
    assert plan.ignored == ("HasOptedOutOfEmail",)


def test_leads_read_both_address_spellings_and_phone_is_home_phone() -> None:
    assert fields_of("leads", ["FirstName", "LastName", "PostalCode", "Phone", "City"]) == [
        "first_name", "last_name", "postcode", "home_phone", "city",
    ]  # fmt: skip
    assert fields_of("leads", ["FirstName", "LastName", "MailingPostalCode", "HomePhone"]) == [
        "first_name", "last_name", "postcode", "home_phone",
    ]  # fmt: skip
    contact = plan_columns(
        CONTACTS,
        ["FirstName", "LastName", "Phone", "ConvertedContactId"],
        ignore=["Phone", "ConvertedContactId"],
    )
    assert contact.ignored == ("Phone", "ConvertedContactId")


def test_products_take_unit_price_or_price() -> None:
    assert fields_of("products", ["Name", "ProductCode", "UnitPrice", "IsActive"]) == [
        "name", "code", "price", "active",
    ]  # fmt: skip
    assert fields_of("products", ["name", "code", "Price"]) == ["name", "code", "price"]


@pytest.mark.parametrize(
    ("target", "header", "problem"),
    [
        (CONTACTS, ["FirstName", "Email"], "no last_name column (or LastName)"),
        (LEADS, ["FirstName"], "no last_name column (or LastName)"),
        (PRODUCTS, ["Name", "ProductCode"], "no price column (or UnitPrice)"),
        (LEADS, ["FirstName", "LastName", "City", "MailingCity"], "City and MailingCity"),
        (PRODUCTS, ["Name", "code", "Price", "UnitPrice"], "Price and UnitPrice both give price"),
    ],
)
def test_unusable_headers(target: Any, header: list[str], problem: str) -> None:
    with pytest.raises(HeaderProblem, match=re.escape(problem)):
        plan_columns(target, header)


@pytest.mark.parametrize(
    ("target", "header", "problem"),
    [
        (CONTACTS, ["frist_name", "last_name"], "frist_name (did you mean first_name?)"),
        (CONTACTS, ["FirstName", "LastNmae"], "LastNmae (did you mean LastName?)"),
        (PRODUCTS, ["name", "code", "prcie"], "prcie (did you mean price?)"),
        (CONTACTS, ["first_name", "last_name", "AccountId"], "--ignore-columns AccountId"),
        (CONTACTS, ["first_name;last_name;email"], "looks semicolon-separated"),
    ],
)
def test_unknown_columns_refuse_the_file_with_a_suggestion(
    target: Any, header: list[str], problem: str
) -> None:
    with pytest.raises(HeaderProblem, match=re.escape(problem)):
        plan_columns(target, header)


@pytest.mark.parametrize("form", ["ours", "salesforce"])
@pytest.mark.parametrize("target", [CONTACTS, LEADS, PRODUCTS], ids=lambda t: t.name)
def test_every_exported_header_is_read_back_as_the_same_field(target: Any, form: str) -> None:
    header = target.header(form)
    assert header[0] in ("id", "Id")
    plan = plan_columns(target, header)
    # Every column, the export-only ones too (a merged person's survivor, merged_into or
    # MasterRecordId): an import reads them back, so a merged record stays merged.
    assert [name for _i, name in plan.cells] == ["id", *target.fields, *target.export_only]
    assert plan.ignored == ()


def test_the_importer_calls_the_field_rules_directly() -> None:
    assert PERSON_RULES.direct
    assert PRODUCT_RULES.direct


def test_a_model_with_rules_the_shortcut_cannot_copy_is_validated_by_the_model() -> None:
    class Odd(BaseModel):
        name: str

        def model_post_init(self, context: Any) -> None:
            if self.name == "x":
                raise ValueError("no x")

    rules = Rules(Odd)
    assert not rules.direct
    assert rules.validate({"name": "y"}) == ({"name": "y"}, [])


def model_outcome(model: type[BaseModel], values: dict[str, Any]) -> tuple[Any, list[str]]:
    try:
        return model.model_validate(values).model_dump(), []
    except ValidationError as exc:
        return None, error_messages(exc)


SAMPLES = st.sampled_from(
    ["", " ", "Ann", "  Nguyen ", "x" * 81, "x" * 256, "3064", "800", "12", "30a4", "٣٠٦٤",
     "1999-04-12", "1999-02-30", "2999-01-01", "1899-12-31", "ann@example.com",
     " Ann@Example.COM ", "no-at-sign", "a@b", "true", "FALSE", "yes", "cyl", "CYP", "car",
     "web", "purchased list", "Purchansed List", "nope", "249", "249.5", "249.555", "-1",
     "1e3", "NaN", "abc", "a\x00b"]
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(PERSON_FIELDS), st.one_of(SAMPLES, st.text(max_size=12))))
def test_people_are_judged_exactly_as_the_admin_api_judges_them(values: dict[str, str]) -> None:
    data, errors = PERSON_RULES.validate(values)
    expected, expected_errors = model_outcome(PersonCreate, values)
    assert errors == expected_errors
    if not errors:
        assert data == expected


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["name", "code", "price", "active"]),
        st.one_of(SAMPLES, st.text(max_size=12)),
    )
)
def test_products_are_judged_exactly_as_the_admin_api_judges_them(values: dict[str, str]) -> None:
    data, errors = PRODUCT_RULES.validate(values)
    expected, expected_errors = model_outcome(ProductCreate, values)
    assert errors == expected_errors
    if not errors:
        assert data == expected


def test_unknown_fields_are_refused_as_the_model_refuses_them() -> None:
    _data, errors = PERSON_RULES.validate({"first_name": "A", "last_name": "B", "shoe": "9"})
    assert errors == ["shoe: is not a known field"]
    assert model_outcome(PersonCreate, {"first_name": "A", "last_name": "B", "shoe": "9"})[1] == [
        "shoe: is not a known field"
    ]


def test_rows_carry_every_column_and_a_fresh_id_of_the_right_kind() -> None:
    data, _errors = PERSON_RULES.validate(
        {"first_name": "Ann", "last_name": "Ng", "email": "ann@example.com"}
    )
    contact, keys = person_rows("contact", data)
    lead, _keys = person_rows("lead", data)
    assert contact["id"].startswith("003")
    assert lead["id"].startswith("00Q")
    assert set(contact) == {"id", "kind", *PERSON_FIELDS, "converted_contact_id",
                            "created_at", "updated_at", "duplicate_touched_at",
                            "first_name_search", "last_name_search"}  # fmt: skip
    assert (contact["first_name_search"], contact["last_name_search"]) == ("ann", "ng")
    assert contact["duplicate_touched_at"] == contact["updated_at"]  # marked for a re-check
    assert contact["created_at"].tzinfo is not None
    assert keys == stored_keys(identity_of(SimpleNamespace(**contact)))
    assert len(keys) == 2  # the e-mail's and the two name sounds'; the rest need a date or postcode
    with pytest.raises(ValueError, match="unknown kind"):
        person_rows("asset", data)
    product, _errors = PRODUCT_RULES.validate({"name": "A", "code": "B", "price": "1"})
    assert product_row(product)["active"] is True
    assert product_row(product)["id"].startswith("01t")
