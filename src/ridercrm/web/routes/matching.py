"""Operations 3 and 4: POST crm/people/match and POST crm/leads/match."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from ridercrm.errors import ApiError, sentence
from ridercrm.fields import error_messages, parse_bool, received
from ridercrm.matching.answer import ExplainRefused, MatchAsk, answer_match
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
from ridercrm.web import openapi
from ridercrm.web.operations import Requested, post
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import forms

router = APIRouter(tags=["matching"])


def match_failure_shape(error: ApiError, audit_id: str) -> dict[str, Any]:
    """A refused match request: the operation's own shape, the receipt naming the problem."""
    return {"delivery": "false", "receipt": sentence(error.reason), "ID": "", "audit_ID": audit_id}


def _details(
    model: type[BaseModel], body: Any, request: Requested, *, leads_only: bool
) -> MatchAsk:
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
    return MatchAsk(
        details,
        leads_only=leads_only,
        explain=explain,
        audit_id=request.audit_id,
        caller=request.caller,
        explain_limiter=request.explain_limiter,
        thresholds=request.match_thresholds,
    )


def people_details(body: Any, request: Requested) -> MatchAsk:
    """Operation 3's ``person_data`` (with ``assets``) and ``explain``."""
    return _details(PeopleMatchQuery, body, request, leads_only=False)


def lead_details(body: Any, request: Requested) -> MatchAsk:
    """Operation 4's ``person_data`` and ``explain``."""
    return _details(LeadsMatchQuery, body, request, leads_only=True)


def match_people(session: Session, ask: MatchAsk) -> Reply:
    """Find the contact or unconverted lead that identifying details describe."""
    return _reply(session, ask)


def match_leads(session: Session, ask: MatchAsk) -> Reply:
    """Find the unconverted lead that identifying details describe."""
    return _reply(session, ask)


def _reply(session: Session, ask: MatchAsk) -> Reply:
    try:
        answer = answer_match(session, ask)
    except ExplainRefused as refused:
        raise ApiError(refused.status, refused.reason, headers=refused.headers) from None
    return Reply(answer.body, audit=answer.explanation)


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
