"""Admin API for people: create contacts and leads, read and search them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.http import openapi
from ridercrm.http.context import Call
from ridercrm.http.errors import ApiError, sentence
from ridercrm.http.runtime import Outcome, operation, run_post, run_read, services_of
from ridercrm.http.validation import items_of, parse_model
from ridercrm.people import modify, service
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.schemas import (
    MODIFY_EXAMPLE,
    NEW_PERSON_EXAMPLE,
    ModifyRefusal,
    ModifyRequest,
    ModifyResponse,
    NewPerson,
    PeopleFound,
    PersonCreate,
    PersonRead,
)

router = APIRouter(prefix="/admin", tags=["admin"])
crm_router = APIRouter(tags=["people"])


def _creator(kind: str) -> Any:
    def handler(session: Session, payload: Any) -> Outcome:
        data = parse_model(PersonCreate, payload)
        person = service.create_person(session, kind=kind, data=data)
        return Outcome({"id": person.id}, status=201)

    return handler


@router.post(
    "/contacts",
    status_code=201,
    summary="Create a contact",
    openapi_extra=openapi.request_body(NewPerson, example=NEW_PERSON_EXAMPLE),
    responses=openapi.responses(
        ok=(201, "Created.", openapi.json_content(openapi.ref(openapi.Created))),
        refused=openapi.ADMIN_POST_REFUSALS,
    ),
)
async def create_contact(
    request: Request, call: Call = Depends(operation("admin.create_contact", scope="admin"))
) -> Response:
    """Create a contact from the interface's person fields."""
    return await run_post(request, call, _creator(CONTACT))


@router.post(
    "/leads",
    status_code=201,
    summary="Create a lead",
    openapi_extra=openapi.request_body(NewPerson, example=NEW_PERSON_EXAMPLE),
    responses=openapi.responses(
        ok=(201, "Created.", openapi.json_content(openapi.ref(openapi.Created))),
        refused=openapi.ADMIN_POST_REFUSALS,
    ),
)
async def create_lead(
    request: Request, call: Call = Depends(operation("admin.create_lead", scope="admin"))
) -> Response:
    """Create a lead from the interface's person fields."""
    return await run_post(request, call, _creator(LEAD))


@router.get(
    "/people/{person_id}",
    summary="Read a contact or lead",
    responses=openapi.responses(
        ok=(200, "The person.", openapi.json_content(openapi.ref(PersonRead))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def read_person(
    request: Request,
    person_id: str,
    _call: Call = Depends(operation("admin.read_person", scope="admin")),
) -> Response:
    """Return every stored field of a contact or lead."""

    def handler(session: Session) -> Outcome:
        person = service.find_person(session, person_id)
        if person is None:
            raise ApiError(404, f"no person with id {person_id}")
        read = PersonRead.model_validate(person)
        read.merged_from = service.merged_from(session, person.id)
        return Outcome(read.to_json())

    return await run_read(request, handler)


@router.get(
    "/people",
    summary="Search people by name, e-mail or phone",
    responses=openapi.responses(
        ok=(
            200,
            "The people found (at most limit).",
            openapi.json_content(openapi.ref(PeopleFound)),
        ),
        refused=openapi.READ_REFUSALS,
    ),
)
async def search_people(
    request: Request,
    q: str = Query(
        min_length=1, max_length=200, description="a name, e-mail address or phone number"
    ),
    limit: int = Query(50, ge=1, le=200),
    _call: Call = Depends(operation("admin.search_people", scope="admin")),
) -> Response:
    """Find people by name (prefix of first and last name), e-mail or phone."""

    def handler(session: Session) -> Outcome:
        people = service.search_people(session, query=q, limit=limit)
        return Outcome({"people": [PersonRead.model_validate(p).to_json() for p in people]})

    return await run_read(request, handler)


def modify_failure_shape(error: ApiError, audit_id: str) -> dict[str, Any]:
    """Operation 2's whole-request failure: its own JSON shape, the receipt names the problem."""
    return {
        "status": False,
        "receipt": sentence(error.reason),
        "audit_ID": audit_id,
        "details": [],
        "items_failed": 0,
    }


@crm_router.post(
    "/crm/modify",
    summary="Modify people's stored fields, several per request (operation 2; scope people)",
    openapi_extra=openapi.request_body(
        ModifyRequest,
        example=MODIFY_EXAMPLE,
        bracket_pattern=r"^people_data\[[0-9]+\]\[[A-Za-z0-9_]+\]$",
    ),
    responses=openapi.responses(
        ok=(
            200,
            "Every item was processed; status and items_failed say whether all were applied.",
            openapi.json_content(openapi.ref(ModifyResponse)),
        ),
        refused=openapi.INTERFACE_REFUSALS,
        refusal=openapi.json_content(openapi.ref(ModifyRefusal)),
    ),
)
async def modify_people(
    request: Request,
    call: Call = Depends(operation("crm.modify", scope="people", shape=modify_failure_shape)),
) -> Response:
    """Modify stored fields of contacts and leads, several per request."""
    limit = services_of(request).settings.max_items

    def handler(session: Session, payload: Any) -> Outcome:
        items = items_of(payload, "people_data", limit=limit)
        results = modify.modify_people(session, items=items)
        call.outcomes = [
            {"index": index, "ID": r.ID, "status": r.status, "fields": r.fields, "errors": r.errors}
            for index, r in enumerate(results)
        ]
        return Outcome(modify.response_body(results, call.audit_id))

    return await run_post(request, call, handler)
