"""What comes in and goes out about people, in the interface's field names."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from ridercrm import fields


class PersonCreate(BaseModel):
    """A new contact or lead. The last name is required; the rest is optional.

    A CRM export's contact may have no first name (Salesforce requires only the last).
    """

    model_config = ConfigDict(extra="forbid")

    first_name: fields.Name = None
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

    @field_validator("last_name")
    @classmethod
    def _required_name(cls, value: str | None) -> str:
        if not value:
            raise ValueError("is required")
        return value


class PersonRead(BaseModel):
    id: str
    kind: str
    first_name: str | None
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
    merged_into: str | None = None
    merged_from: list[str] = []
    created_at: dt.datetime
    updated_at: dt.datetime

    model_config = ConfigDict(from_attributes=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json")


# --- Documentation of the wire (the OpenAPI document) ------------------------------
#
# The models above are what the service validates with; these describe the same
# fields to clients, with the spellings, patterns and enumerations the rules accept
# (the rules themselves compare case-insensitively and accept a few aliases).
# tests/http/test_openapi.py checks that both name the same fields.


def doc_text(max_length: int, description: str = "") -> WithJsonSchema:
    """Free text of at most ``max_length`` characters; empty or null is absent."""
    schema: dict[str, Any] = {"type": ["string", "null"], "maxLength": max_length}
    if description:
        schema["description"] = description
    return WithJsonSchema(schema)


def doc_enum(values: tuple[str, ...], description: str = "") -> WithJsonSchema:
    """One of ``values`` (any case); empty or null is absent."""
    schema: dict[str, Any] = {"enum": [*values, "", None]}
    schema["description"] = (description + " " if description else "") + (
        "Compared case-insensitively; stored in the spelling shown."
    )
    return WithJsonSchema(schema)


DATE_PATTERN = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$"

DocId = Annotated[
    str | None,
    WithJsonSchema(
        {
            "type": ["string", "null"],
            "maxLength": 40,
            "description": "A record id, 15 or 18 characters (18 is read case-insensitively).",
        }
    ),
]
DocName = Annotated[str | None, doc_text(80)]
DocEmail = Annotated[
    str | None,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "email", "maxLength": 254},
                {"enum": ["", None]},
            ],
            "description": "An e-mail address (checked by its syntax; no DNS look-up).",
        }
    ),
]
POSTCODE_PATTERN = r"^\s*([0-9]{4}|[2-9][0-9]{2})\s*$"
POSTCODE_DESCRIPTION = (
    '4 digits; 3 digits or a whole number 200-9999 is zero-padded ("800", 800 and 800.0'
    ' are all stored as "0800").'
)
DocPostcode = Annotated[
    str | int | None,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": POSTCODE_PATTERN},
                {"type": "integer", "minimum": 200, "maximum": 9999},
                {"enum": ["", None]},
            ],
            "description": POSTCODE_DESCRIPTION,
        }
    ),
]
DocBirthDate = Annotated[
    str | None,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "format": "date", "pattern": DATE_PATTERN},
                {"enum": ["", None]},
            ],
            "description": "YYYY-MM-DD, a real date from 1900 on and not in the future.",
        }
    ),
]
DocPhone = Annotated[
    str | None,
    doc_text(40, "A phone number as written; compared as E.164 (0412 345 678 = +61412345678)."),
]
DocLicence = Annotated[str | None, doc_text(40, "Driver's licence number.")]
DocStreet = Annotated[str | None, doc_text(255)]
DocShortText = Annotated[str | None, doc_text(80)]
DocLeadSource = Annotated[
    str | None,
    doc_enum(
        fields.LEAD_SOURCES, "The interface's spelling is canonical; Purchased List is an alias."
    ),
]
DocLicenseType = Annotated[str | None, doc_enum(fields.LICENSE_TYPES)]
FLAG_WORDS = ("true", "false", "1", "0", "on", "off", "yes", "no")
# JSON Schema patterns have no case-insensitive flag: each letter is a class.
_FLAG_PATTERN = (
    r"^\s*("
    + "|".join("".join(f"[{c.upper()}{c}]" if c.isalpha() else c for c in w) for w in FLAG_WORDS)
    + r")\s*$"
)
DocFlag = Annotated[
    bool | str | int | None,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "boolean"},
                {"enum": [0, 1]},
                {"type": "string", "pattern": _FLAG_PATTERN},
                {"enum": ["", None]},
            ],
            "description": (
                "true or false: JSON true/false or 1/0, or the text true/false, 1/0, on/off,"
                " yes/no in any case (as PHP, HTML checkboxes and spreadsheets write them)."
            ),
        }
    ),
]


class NewPerson(BaseModel):
    """A new contact or lead (admin API). The last name is required; the first may be absent."""

    model_config = ConfigDict(extra="forbid")

    first_name: DocName = None
    last_name: Annotated[str, WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 80})]
    date_of_birth: DocBirthDate = None
    email: DocEmail = None
    postcode: DocPostcode = None
    mobile_phone: DocPhone = None
    home_phone: DocPhone = None
    drivers_license: DocLicence = None
    license_type: DocLicenseType = None
    street: DocStreet = None
    city: DocShortText = None
    state: DocShortText = None
    country: DocShortText = None
    lead_source: DocLeadSource = None
    opt_in: DocFlag = None


NEW_PERSON_EXAMPLE: dict[str, Any] = {
    "first_name": "Ann",
    "last_name": "Nguyen",
    "date_of_birth": "1999-04-12",
    "email": "ann.nguyen@example.com",
    "postcode": "3064",
    "mobile_phone": "0412 345 678",
}


class PersonChange(BaseModel):
    """One item of ``people_data`` (operation 2): ID and the fields to change.

    Only supplied fields change; null or "" clears an optional field; first and last
    name cannot be cleared. Unknown fields are ignored. An item that fails changes
    nothing and is reported with status false, fields 0 and its errors.
    """

    ID: Annotated[
        str,
        WithJsonSchema(
            {"type": "string", "description": "The contact's or lead's id (15 or 18 characters)."}
        ),
    ]
    first_name: DocName = None
    last_name: DocName = None
    date_of_birth: DocBirthDate = None
    email: DocEmail = None
    postcode: DocPostcode = None
    mobile_phone: DocPhone = None
    drivers_license: DocLicence = None
    street: DocStreet = None
    city: DocShortText = None
    state: DocShortText = None
    country: DocShortText = None
    lead_source: DocLeadSource = None


class ModifyRequest(BaseModel):
    """Operation 2's body: the people to modify, each item independent and atomic."""

    people_data: list[PersonChange]


MODIFY_EXAMPLE: dict[str, Any] = {
    "people_data": [
        {"ID": "0035g00000AbCdEAAZ", "city": "Somerton", "postcode": 3061},
        {"ID": "00Q5g00000XyZaBEAU", "email": "ann@example.com", "lead_source": "Web"},
    ]
}


class ModifiedPerson(BaseModel):
    """One entry of ``details``: how one item went."""

    ID: str = Field(description="The ID the item gave, echoed as sent (empty if none).")
    fields: int = Field(ge=0, description="How many supplied fields were written; 0 if failed.")
    status: bool = Field(description="Whether the item was applied.")
    errors: list[str] = Field(
        default_factory=list,
        description="Only on a failed item: one `field: reason` per problem.",
    )


class ModifyResponse(BaseModel):
    """Operation 2's answer: one entry per item, in order."""

    status: bool = Field(description="true when every item was applied.")
    receipt: Literal["All records modified.", "One or more records could not be modified."]
    audit_ID: str = Field(description="The request's audit record.")
    details: list[ModifiedPerson]
    items_failed: int = Field(ge=0)


class ModifyRefusal(BaseModel):
    """Operation 2's answer when the request as a whole is refused: no item was looked at."""

    status: Literal[False]
    receipt: str = Field(description="A sentence naming the problem.")
    audit_ID: str = Field(description="The request's audit record.")
    details: list[ModifiedPerson] = Field(max_length=0)
    items_failed: Literal[0]


class PeopleFound(BaseModel):
    """A page of people, newest first, or the people an admin search found."""

    people: list[PersonRead]
    next_before: str | None = Field(
        description="The id to pass as before for the next page; null on the last page"
        " and for a search."
    )
