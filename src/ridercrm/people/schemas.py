"""What comes in and goes out about people, in the interface's field names."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    WithJsonSchema,
    model_serializer,
)

from ridercrm import fields


class PersonCreate(BaseModel):
    """A new contact or lead (admin API). The last name is required; the first may be absent.

    A CRM export's contact may have no first name (Salesforce requires only the last).
    Unknown fields are refused.
    """

    model_config = ConfigDict(extra="forbid")

    first_name: fields.Name = None
    last_name: fields.RequiredName
    date_of_birth: fields.BirthDate = None
    email: fields.Email = None
    postcode: fields.Postcode = None
    mobile_phone: fields.Phone = None
    home_phone: fields.Phone = None
    drivers_license: fields.Licence = None
    license_type: fields.LicenseType = None
    street: fields.LongText = None
    city: fields.ShortText = None
    state: fields.ShortText = None
    country: fields.ShortText = None
    lead_source: fields.LeadSource = None
    opt_in: fields.Flag = None


class ImportOrigin(BaseModel):
    """The import a person came from: the run, its file and the person's line in it."""

    run_id: int = Field(description="The import run (`ridercrm import`).")
    target: str = Field(description="What the run imported: contacts, leads or products.")
    file_name: str = Field(description="The imported file, as the command was given it.")
    operator: str | None = Field(description="Who ran it (`ridercrm --as`, or the OS user).")
    imported_at: dt.datetime = Field(description="When the run began (UTC).")
    line: int | None = Field(description="The person's line in the file (the header is 1).")


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


class PersonDetail(PersonRead):
    """One person as ``GET /admin/people/{id}`` reads it: with where an import brought them from."""

    imported_from: ImportOrigin | None = Field(
        None, description="The import this person came from; null when created another way."
    )


NEW_PERSON_EXAMPLE: dict[str, Any] = {
    "first_name": "Ann",
    "last_name": "Nguyen",
    "date_of_birth": "1999-04-12",
    "email": "ann.nguyen@example.com",
    "postcode": "3064",
    "mobile_phone": "0412 345 678",
}


class PersonModify(BaseModel):
    """One item of ``people_data`` (operation 2): ID and the fields to change.

    Only supplied fields change; null or "" clears an optional field; first and last
    name cannot be cleared. Unknown fields are ignored. An item that fails changes
    nothing and is reported with status false, fields 0 and its errors.
    """

    # ID is optional here so that an item without one fails alone ("ID: is required").
    model_config = ConfigDict(extra="ignore", json_schema_extra={"required": ["ID"]})

    ID: Annotated[
        str | None,
        BeforeValidator(fields.parse_id_text),
        WithJsonSchema(
            {"type": "string", "description": "The contact's or lead's id (15 or 18 characters)."}
        ),
    ] = None
    first_name: fields.Name = None
    last_name: fields.Name = None
    date_of_birth: fields.BirthDate = None
    email: fields.Email = None
    postcode: fields.Postcode = None
    mobile_phone: fields.Phone = None
    drivers_license: fields.Licence = None
    street: fields.LongText = None
    city: fields.ShortText = None
    state: fields.ShortText = None
    country: fields.ShortText = None
    lead_source: fields.LeadSource = None

    def changes(self) -> dict[str, Any]:
        """The supplied fields and their new values (None clears)."""
        return {name: getattr(self, name) for name in self.model_fields_set if name != "ID"}


class ModifyRequest(BaseModel):
    """Operation 2's body: the people to modify, each item independent and atomic."""

    people_data: list[PersonModify]


MODIFY_EXAMPLE: dict[str, Any] = {
    "people_data": [
        {"ID": "0035g00000AbCdEAAZ", "city": "Somerton", "postcode": 3061},
        {"ID": "00Q5g00000XyZaBEAU", "email": "ann@example.com", "lead_source": "Web"},
    ]
}


class ModifiedPerson(BaseModel):
    """One entry of ``details``: how one item went."""

    model_config = ConfigDict(from_attributes=True)

    ID: str = Field(description="The ID the item gave, echoed as sent (empty if none).")
    fields: int = Field(ge=0, description="How many supplied fields were written; 0 if failed.")
    status: bool = Field(description="Whether the item was applied.")
    errors: list[str] = Field(
        default_factory=list,
        description="Only on a failed item: one `field: reason` per problem.",
    )

    @model_serializer(mode="wrap")
    def _errors_only_when_failed(self, write: SerializerFunctionWrapHandler) -> dict[str, Any]:
        entry: dict[str, Any] = write(self)
        if not self.errors:
            del entry["errors"]
        return entry


class ModifyResponse(BaseModel):
    """Operation 2's answer: one entry per item, in order."""

    model_config = ConfigDict(from_attributes=True)

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
