"""The person_data of the two match operations (interface §4.3, §4.4)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict

from ridercrm import fields

RequiredName = Annotated[str, BeforeValidator(fields.required(fields.text(80)))]
RequiredEmail = Annotated[str, BeforeValidator(fields.required(fields.parse_email))]
RequiredPostcode = Annotated[str, BeforeValidator(fields.required(fields.parse_postcode))]
RequiredBirthDate = Annotated[dt.date, BeforeValidator(fields.required(fields.parse_birth_date))]
RequiredLeadSource = Annotated[str, BeforeValidator(fields.required(fields.text(40)))]


def _asset_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError("must be an array of asset id strings")
    return [item.strip() for item in value if item.strip()]


class _Optional(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mobile_phone: fields.Phone = None
    drivers_license: fields.Phone = None
    street: fields.LongText = None
    city: fields.ShortText = None
    state: fields.ShortText = None
    country: fields.ShortText = None


class PeopleMatchQuery(_Optional):
    """person_data of crm/people/match: names, date of birth, e-mail and postcode are mandatory."""

    first_name: RequiredName
    last_name: RequiredName
    date_of_birth: RequiredBirthDate
    email: RequiredEmail
    postcode: RequiredPostcode
    assets: Annotated[list[str], BeforeValidator(_asset_list)] = []
    lead_source: Annotated[str | None, BeforeValidator(fields.text(40))] = None


class LeadsMatchQuery(_Optional):
    """person_data of crm/leads/match: names, e-mail, postcode and lead_source are mandatory."""

    first_name: RequiredName
    last_name: RequiredName
    email: RequiredEmail
    postcode: RequiredPostcode
    lead_source: RequiredLeadSource
    date_of_birth: fields.BirthDate = None
