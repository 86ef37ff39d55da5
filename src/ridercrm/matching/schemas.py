"""The person_data of the two match operations (docs/decisions.md, "Operations 3 and 4 (matching)")."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.json_schema import SkipJsonSchema

from ridercrm import fields

LEAD_SOURCE_NOTE = "Recorded in the audit trail; not used to match."


def _asset_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(
            f"must be an array of asset id strings (received {fields.received(value)})"
        )
    return [item.strip() for item in value if item.strip()]


Assets = Annotated[
    list[str],
    BeforeValidator(_asset_list),
    WithJsonSchema(
        {
            "anyOf": [{"type": "array", "items": {"type": "string"}}, fields.ABSENT],
            "description": "Ids of courses the person booked: strong evidence for their contact.",
        }
    ),
]


class _Optional(BaseModel):
    model_config = ConfigDict(extra="ignore")

    mobile_phone: fields.Phone = None
    drivers_license: fields.Licence = None
    street: fields.LongText = None
    city: fields.ShortText = None
    state: fields.ShortText = None
    country: fields.ShortText = None


class PeopleMatchQuery(_Optional):
    """``person_data`` of operation 3: names, date of birth, e-mail and postcode are
    mandatory. Unknown fields are ignored."""

    first_name: fields.RequiredName
    last_name: fields.RequiredName
    date_of_birth: fields.RequiredBirthDate
    email: fields.RequiredEmail
    postcode: fields.RequiredPostcode
    assets: Assets = []
    lead_source: fields.LeadSourceText = Field(default=None, description=LEAD_SOURCE_NOTE)


class LeadsMatchQuery(_Optional):
    """``person_data`` of operation 4: names, e-mail, postcode and lead_source are
    mandatory. Unknown fields are ignored."""

    first_name: fields.RequiredName
    last_name: fields.RequiredName
    email: fields.RequiredEmail
    postcode: fields.RequiredPostcode
    lead_source: fields.RequiredLeadSourceText = Field(description=LEAD_SOURCE_NOTE)
    date_of_birth: fields.BirthDate = None


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

    person_data: PeopleMatchQuery
    explain: fields.Flag = _EXPLAIN


class LeadsMatchRequest(BaseModel):
    """Operation 4's body: find an unconverted lead."""

    person_data: LeadsMatchQuery
    explain: fields.Flag = _EXPLAIN


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
