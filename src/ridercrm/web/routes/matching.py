"""Operations 3 and 4: POST crm/people/match and POST crm/leads/match."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call
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
from ridercrm.people.blocking import Identity
from ridercrm.people.models import CONTACT
from ridercrm.ratelimit import KeyRateLimiter
from ridercrm.web import openapi
from ridercrm.web.runtime import Outcome, operation, run_post, services_of
from ridercrm.web.validation import forms

router = APIRouter(tags=["matching"])

NOT_FOUND = "Match not found."
EXPLAIN_SCOPE = "explain"


def match_failure_shape(error: ApiError, audit_id: str) -> dict[str, Any]:
    """A refused match request: the operation's own shape, the receipt naming the problem."""
    return {"delivery": "false", "receipt": sentence(error.reason), "ID": "", "audit_ID": audit_id}


def _query(model: type[BaseModel], payload: Any) -> tuple[Any, bool]:
    if not isinstance(payload, dict):
        raise ApiError(
            400, f"body: must be an object with a person_data object (received {received(payload)})"
        )
    if not isinstance(payload.get("person_data"), dict):
        given = payload.get("person_data")
        got = "nothing" if "person_data" not in payload else received(given)
        raise ApiError(
            400,
            f"person_data: must be an object of fields (received {got});"
            f" {forms('person_data', many=False)}",
        )
    try:
        explain = bool(parse_bool(payload.get("explain")))
    except ValueError as exc:
        raise ApiError(400, f"explain: {exc}") from None
    try:
        return model.model_validate(payload["person_data"]), explain
    except ValidationError as exc:
        raise ApiError(400, "; ".join(error_messages(exc))) from None


def _allow_explain(call: Call, limiter: KeyRateLimiter | None) -> None:
    """Refuse an explanation to a key without the explain scope, or over its explain limit."""
    assert call.caller is not None
    if not keys.allows(call.caller.scopes, EXPLAIN_SCOPE):
        raise ApiError(403, f'API key lacks scope {EXPLAIN_SCOPE!r}, which "explain": true needs')
    refusal = limiter.check(call.caller.key_id) if limiter is not None else None
    if refusal is not None:
        raise ApiError(429, refusal.reason, headers={"Retry-After": str(refusal.retry_after)})


def _handler(
    call: Call, model: type[BaseModel], *, leads_only: bool, explain_limiter: KeyRateLimiter | None
) -> Any:
    def handler(session: Session, payload: Any) -> Outcome:
        data, explain = _query(model, payload)
        if explain:
            _allow_explain(call, explain_limiter)
        identity = Identity.of(
            first_name=data.first_name,
            last_name=data.last_name,
            date_of_birth=data.date_of_birth,
            email=data.email,
            phones=(data.mobile_phone,),
            drivers_license=data.drivers_license,
            street=data.street,
            postcode=data.postcode,
        )
        result = service.find_match(
            session, query=identity, assets=getattr(data, "assets", []), leads_only=leads_only
        )
        call.outcomes = result.explanation()
        person = result.person
        if person is None:
            body: dict[str, Any] = {"delivery": "false", "receipt": NOT_FOUND, "ID": ""}
        else:
            receipt = "Contact found." if person.kind == CONTACT else "Lead found."
            body = {"delivery": "true", "receipt": receipt, "ID": person.id}
        body["audit_ID"] = call.audit_id
        if explain:
            body["match"] = disclosed(result.explanation())
        return Outcome(body)

    return handler


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


@router.post(
    "/crm/people/match",
    summary="Find a contact or unconverted lead (operation 3; scope match)",
    openapi_extra=_request_docs(PeopleMatchRequest, PEOPLE_MATCH_EXAMPLE),
    responses=_RESPONSES,
)
async def match_people(
    request: Request,
    call: Call = Depends(operation("crm.people_match", scope="match", shape=match_failure_shape)),
) -> Response:
    """Find the contact or unconverted lead that identifying details describe."""
    limiter = services_of(request).explain_limiter
    handler = _handler(call, PeopleMatchQuery, leads_only=False, explain_limiter=limiter)
    return await run_post(request, call, handler, write=False)


@router.post(
    "/crm/leads/match",
    summary="Find an unconverted lead (operation 4; scope match)",
    openapi_extra=_request_docs(LeadsMatchRequest, LEADS_MATCH_EXAMPLE),
    responses=_RESPONSES,
)
async def match_leads(
    request: Request,
    call: Call = Depends(operation("crm.leads_match", scope="match", shape=match_failure_shape)),
) -> Response:
    """Find the unconverted lead that identifying details describe."""
    limiter = services_of(request).explain_limiter
    handler = _handler(call, LeadsMatchQuery, leads_only=True, explain_limiter=limiter)
    return await run_post(request, call, handler, write=False)
