"""Operations 3 and 4: POST crm/people/match and POST crm/leads/match."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import BaseModel, ValidationError
from sqlalchemy.orm import Session

from ridercrm.errors import ApiError, sentence
from ridercrm.fields import error_messages, parse_bool, received
from ridercrm.keys import service as keys
from ridercrm.matching.answer import MatchAsk, answer_match
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
from ridercrm.matching.service import thresholds_of
from ridercrm.web import openapi
from ridercrm.web.operations import Operations, Requested
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import forms

router = APIRouter(tags=["matching"])

EXPLAIN_SCOPE = "explain"
# The app's limiter of explained matches per key (RIDERCRM_EXPLAIN_RATE_LIMIT), by this name.
EXPLAIN_LIMITER = "explain"


def match_failure_shape(error: ApiError, audit_id: str) -> dict[str, Any]:
    """A refused match request: the operation's own shape, the receipt naming the problem."""
    return {"delivery": "false", "receipt": sentence(error.reason), "ID": "", "audit_ID": audit_id}


crm = Operations(
    router,
    "crm",
    scope="match",
    shape=match_failure_shape,
    refusal=openapi.json_content(openapi.ref(MatchRefusal)),
)


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
    if explain:
        _allow_explain(request)
    return MatchAsk(
        details,
        leads_only=leads_only,
        explain=explain,
        audit_id=request.audit_id,
        thresholds=thresholds_of(request.settings),
    )


def _allow_explain(request: Requested) -> None:
    """Refuse an explanation to a key without the explain scope, or over its explain limit
    (checked in that order: a key without the scope does not count against the limit).

    Decided once per request, before its transaction: a transaction that a deadlock
    makes run again does not count the explanation a second time
    (docs/decisions.md, "The house (issue 13)")."""
    if not keys.allows(request.caller.scopes, EXPLAIN_SCOPE):
        raise ApiError(403, f'API key lacks scope {EXPLAIN_SCOPE!r}, which "explain": true needs')
    limiter = request.limiters.get(EXPLAIN_LIMITER)
    refusal = limiter.check(request.caller.key_id) if limiter is not None else None
    if refusal is not None:
        raise ApiError(429, refusal.reason, headers={"Retry-After": str(refusal.retry_after)})


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
    answer = answer_match(session, ask)
    return Reply(answer.body, audit=answer.explanation)


MATCH_DOCS: dict[str, Any] = {
    "brackets": r"^person_data\[[A-Za-z0-9_]+\]$",
    "ok": 'Found (delivery "true", the id in ID) or not (delivery "false", ID empty).',
    "answer": MatchResponse,
    "write": False,  # reads only
}
crm.post(
    "/crm/people/match",
    match_people,
    decode=people_details,
    name="crm.people_match",
    example=PEOPLE_MATCH_EXAMPLE,
    body=PeopleMatchRequest,
    summary="Find a contact or unconverted lead (operation 3; scope match)",
    **MATCH_DOCS,
)
crm.post(
    "/crm/leads/match",
    match_leads,
    decode=lead_details,
    name="crm.leads_match",
    example=LEADS_MATCH_EXAMPLE,
    body=LeadsMatchRequest,
    summary="Find an unconverted lead (operation 4; scope match)",
    **MATCH_DOCS,
)
