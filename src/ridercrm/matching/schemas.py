"""The person_data of the two match operations (interface §4.3, §4.4)."""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from ridercrm import fields
from ridercrm.people import schemas as people

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


# --- Documentation of the wire (the OpenAPI document) ------------------------------
# The queries above are what the service validates; these describe the same fields to
# clients (tests/http/test_openapi.py checks that they name the same fields).

_RequiredName = Annotated[str, WithJsonSchema({"type": "string", "minLength": 1, "maxLength": 80})]
_RequiredEmail = Annotated[
    str, WithJsonSchema({"type": "string", "format": "email", "maxLength": 254})
]
_RequiredPostcode = Annotated[
    str | int,
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "string", "pattern": people.POSTCODE_PATTERN},
                {"type": "integer", "minimum": 200, "maximum": 9999},
            ],
            "description": people.POSTCODE_DESCRIPTION,
        }
    ),
]
_RequiredBirthDate = Annotated[
    str,
    WithJsonSchema(
        {
            "type": "string",
            "format": "date",
            "pattern": people.DATE_PATTERN,
            "description": "YYYY-MM-DD, from 1900 on and not in the future.",
        }
    ),
]
_Assets = Annotated[
    list[str] | None,
    WithJsonSchema(
        {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, {"enum": ["", None]}],
            "description": "Ids of courses the person booked: strong evidence for their contact.",
        }
    ),
]


class _OptionalPersonData(BaseModel):
    mobile_phone: people.DocPhone = None
    drivers_license: people.DocLicence = None
    street: people.DocStreet = None
    city: people.DocShortText = None
    state: people.DocShortText = None
    country: people.DocShortText = None


class PeopleMatchPerson(_OptionalPersonData):
    """``person_data`` of operation 3. Unknown fields are ignored."""

    first_name: _RequiredName
    last_name: _RequiredName
    date_of_birth: _RequiredBirthDate
    email: _RequiredEmail
    postcode: _RequiredPostcode
    assets: _Assets = None
    lead_source: people.DocShortText = Field(
        default=None, description="Recorded in the audit trail; not used to match."
    )


class LeadsMatchPerson(_OptionalPersonData):
    """``person_data`` of operation 4. Unknown fields are ignored."""

    first_name: _RequiredName
    last_name: _RequiredName
    email: _RequiredEmail
    postcode: _RequiredPostcode
    lead_source: Annotated[
        str,
        WithJsonSchema(
            {
                "type": "string",
                "minLength": 1,
                "maxLength": 40,
                "description": "Recorded in the audit trail; not used to match.",
            }
        ),
    ]
    date_of_birth: people.DocBirthDate = None


_EXPLAIN = Field(
    default=False,
    description=(
        "true adds under `match` why the answer is what it is: the matched candidate's score"
        " and per-field reasons, nothing when no match. Needs a key with scope `explain`"
        " (or `admin`), else 403; limited per key by RIDERCRM_EXPLAIN_RATE_LIMIT (429)."
    ),
)


class PeopleMatchRequest(BaseModel):
    """Operation 3's body: find a contact or an unconverted lead."""

    person_data: PeopleMatchPerson
    explain: people.DocFlag = _EXPLAIN


class LeadsMatchRequest(BaseModel):
    """Operation 4's body: find an unconverted lead."""

    person_data: LeadsMatchPerson
    explain: people.DocFlag = _EXPLAIN


PEOPLE_MATCH_EXAMPLE: dict[str, Any] = {
    "person_data": {
        "first_name": "Ann",
        "last_name": "Nguyen",
        "date_of_birth": "1999-04-12",
        "email": "ann.nguyen@example.com",
        "postcode": 3064,
        "mobile_phone": "0412 345 678",
    }
}
LEADS_MATCH_EXAMPLE: dict[str, Any] = {
    "person_data": {
        "first_name": "Ann",
        "last_name": "Nguyen",
        "email": "ann.nguyen@example.com",
        "postcode": "3064",
        "lead_source": "Web",
    },
    "explain": True,
}


class MatchCandidate(BaseModel):
    id: str
    kind: Literal["contact", "lead"]
    score: float
    accepted: bool = Field(description="Whether the candidate passes the decision rule.")
    rule: str = Field(description="The rule that accepted it, or why none did.")
    reasons: dict[str, str] = Field(description="One reason per compared field.")


class MatchExplanation(BaseModel):
    """Why the answer is what it is, about the matched person only (the audit record
    keeps every candidate)."""

    decision: str = Field(description='Why the answer is what it is; "no match" when none.')
    id: str | None = Field(description="The person found, or null.")
    candidates: list[MatchCandidate] = Field(
        description="The matched candidate only; empty when no match."
    )


class MatchResponse(BaseModel):
    """The answer of operations 3 and 4: found (delivery "true") or not (delivery "false")."""

    delivery: Literal["true", "false"]
    receipt: Literal["Contact found.", "Lead found.", "Match not found."]
    ID: str = Field(description="The contact or lead found; empty when none.")
    audit_ID: str = Field(description="The request's audit record.")
    match: MatchExplanation | SkipJsonSchema[None] = Field(
        default=None, description='Only when the request says `"explain": true`.'
    )


class MatchRefusal(BaseModel):
    """The answer of operations 3 and 4 when the request as a whole is refused."""

    delivery: Literal["false"]
    receipt: str = Field(description="A sentence naming the problem.")
    ID: Literal[""]
    audit_ID: str = Field(description="The request's audit record.")
