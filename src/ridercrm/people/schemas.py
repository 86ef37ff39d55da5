"""What comes in and goes out about people, in the interface's field names."""

from __future__ import annotations

import datetime as dt
from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

from ridercrm import fields


class PersonCreate(BaseModel):
    """A new contact or lead. First and last name are required; the rest is optional."""

    model_config = ConfigDict(extra="forbid")

    first_name: fields.Name
    last_name: fields.Name
    date_of_birth: fields.BirthDate = None
    email: fields.Email = None
    postcode: fields.Postcode = None
    mobile_phone: fields.Phone = None
    home_phone: fields.Phone = None
    drivers_license: fields.Phone = None
    license_type: fields.LicenseType = None
    street: fields.LongText = None
    city: fields.ShortText = None
    state: fields.ShortText = None
    country: fields.ShortText = None
    lead_source: fields.LeadSource = None
    opt_in: fields.Flag = None

    @field_validator("first_name", "last_name")
    @classmethod
    def _required_name(cls, value: str | None) -> str:
        if not value:
            raise ValueError("is required")
        return value


class PersonRead(BaseModel):
    id: str
    kind: str
    first_name: str
    last_name: str
    date_of_birth: dt.date | None
    email: str | None
    postcode: str | None
    mobile_phone: str | None
    home_phone: str | None
    drivers_license: str | None
    license_type: str | None
    street: str | None
    city: str | None
    state: str | None
    country: str | None
    lead_source: str | None
    opt_in: bool | None
    converted_contact_id: str | None
    created_at: dt.datetime
    updated_at: dt.datetime

    model_config = ConfigDict(from_attributes=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")
