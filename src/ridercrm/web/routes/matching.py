"""Operations 3 and 4: POST crm/people/match and POST crm/leads/match."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from ridercrm.errors import ApiError, sentence
from ridercrm.fields import error_messages, parse_bool, received
from ridercrm.keys import service as keys
from ridercrm.matching import service
from ridercrm.matching.disclosure import disclosed
from ridercrm.matching.schemas import (
    LEADS_MATCH_EXAMPLE,
    PEOPLE_MATCH_EXAMPLE,
    LeadsMatchQuery,
    LeadsMatchRequest,
    MatchRefusal,
    MatchResponse,
    PeopleMatchQuery,
    PeopleMatchRequest,
)
from ridercrm.people.models import CONTACT
from ridercrm.web import openapi
from ridercrm.web.operations import Requested, post
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import forms

router = APIRouter(tags=["matching"])

NOT_FOUND = "Match not found."
EXPLAIN_SCOPE = "explain"


def match_failure_shape(error: ApiError, audit_id: str) -> dict[str, Any]:
    """A refused match request: the operation's own shape, the receipt naming the problem."""
    return {"delivery": "false", "receipt": sentence(error.reason), "ID": "", "audit_ID": audit_id}


@dataclass(frozen=True)
class MatchAsk:
    """A match request's payload: the validated details, and whether to explain."""

    details: Any
    explain: bool
    audit_id: str


def _details(model: type[BaseModel], body: Any, request: Requested) -> MatchAsk:
    if not isinstance(body, dict):
        raise ApiError(
            400,
            "body: must be an object with a person_data object"
            f" (received {received(body)}); {forms('person_data', many=False)}",
        )
    if not isinstance(body.get("person_data"), dict):
        given = body.get("person_data")
        got = "nothing" if "person_data" not in body else received(given)
        raise ApiError(
            400,
            f"person_data: must be an object of fields (received {got});"
            f" {forms('person_data', many=False)}",
        )
    try:
        explain = bool(parse_bool(body.get("explain")))
    except ValueError as exc:
        raise ApiError(400, f"explain: {exc}") from None
    try:
        details = model.model_validate(body["person_data"])
    except ValidationError as exc:
        raise ApiError(400, "; ".join(error_messages(exc))) from None
    if explain:
        _allow_explain(request)
    return MatchAsk(details, explain, request.audit_id)


def people_details(body: Any, request: Requested) -> MatchAsk:
    """Operation 3's ``person_data`` (with ``assets``) and ``explain``."""
    return _details(PeopleMatchQuery, body, request)


def lead_details(body: Any, request: Requested) -> MatchAsk:
    """Operation 4's ``person_data`` and ``explain``."""
    return _details(LeadsMatchQuery, body, request)


def _allow_explain(request: Requested) -> None:
    """Refuse an explanation to a key without the explain scope, or over its explain limit."""
    if not keys.allows(request.caller.scopes, EXPLAIN_SCOPE):
        raise ApiError(403, f'API key lacks scope {EXPLAIN_SCOPE!r}, which "explain": true needs')
    limiter = request.explain_limiter
    refusal = limiter.check(request.caller.key_id) if limiter is not None else None
    if refusal is not None:
        raise ApiError(429, refusal.reason, headers={"Retry-After": str(refusal.retry_after)})


def match_people(session: Session, ask: MatchAsk) -> Reply:
    """Find the contact or unconverted lead that identifying details describe."""
    return _reply(service.find_match(session, details=ask.details, leads_only=False), ask)


def match_leads(session: Session, ask: MatchAsk) -> Reply:
    """Find the unconverted lead that identifying details describe."""
    return _reply(service.find_match(session, details=ask.details, leads_only=True), ask)


def _reply(result: service.MatchResult, ask: MatchAsk) -> Reply:
    person = result.person
    if person is None:
        body: dict[str, Any] = {"delivery": "false", "receipt": NOT_FOUND, "ID": ""}
    else:
        receipt = "Contact found." if person.kind == CONTACT else "Lead found."
        body = {"delivery": "true", "receipt": receipt, "ID": person.id}
    body["audit_ID"] = ask.audit_id
    if ask.explain:
        body["match"] = disclosed(result.explanation())
    return Reply(body, audit=result.explanation())


_RESPONSES = openapi.responses(
    ok=(
        200,
        'Found (delivery "true", the id in ID) or not (delivery "false", ID empty).',
        openapi.json_content(openapi.ref(MatchResponse)),
    ),
    refused=openapi.INTERFACE_REFUSALS,
    refusal=openapi.json_content(openapi.ref(MatchRefusal)),
)


def _request_docs(model: type[BaseModel], example: dict[str, Any]) -> dict[str, Any]:
    return openapi.request_body(
        model, example=example, bracket_pattern=r"^person_data\[[A-Za-z0-9_]+\]$"
    )


post(
    router,
    "/crm/people/match",
    match_people,
    decode=people_details,
    name="crm.people_match",
    scope="match",
    shape=match_failure_shape,
    write=False,
    summary="Find a contact or unconverted lead (operation 3; scope match)",
    openapi_extra=_request_docs(PeopleMatchRequest, PEOPLE_MATCH_EXAMPLE),
    responses=_RESPONSES,
)
post(
    router,
    "/crm/leads/match",
    match_leads,
    decode=lead_details,
    name="crm.leads_match",
    scope="match",
    shape=match_failure_shape,
    write=False,
    summary="Find an unconverted lead (operation 4; scope match)",
    openapi_extra=_request_docs(LeadsMatchRequest, LEADS_MATCH_EXAMPLE),
    responses=_RESPONSES,
)
