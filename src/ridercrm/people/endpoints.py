"""Admin API for people: create contacts and leads, read and search them."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.http.context import Call
from ridercrm.http.errors import ApiError, sentence
from ridercrm.http.runtime import Outcome, operation, run_post, run_read, services_of
from ridercrm.http.validation import items_of, parse_model
from ridercrm.people import modify, service
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.schemas import PersonCreate, PersonRead

router = APIRouter(prefix="/admin", tags=["admin"])
crm_router = APIRouter(tags=["people"])


def _creator(kind: str) -> Any:
    def handler(session: Session, payload: Any) -> Outcome:
        data = parse_model(PersonCreate, payload)
        person = service.create_person(session, kind=kind, data=data)
        return Outcome({"id": person.id}, status=201)

    return handler


@router.post("/contacts", status_code=201)
async def create_contact(
    request: Request, call: Call = Depends(operation("admin.create_contact", scope="admin"))
) -> Response:
    """Create a contact from the interface's person fields."""
    return await run_post(request, call, _creator(CONTACT))


@router.post("/leads", status_code=201)
async def create_lead(
    request: Request, call: Call = Depends(operation("admin.create_lead", scope="admin"))
) -> Response:
    """Create a lead from the interface's person fields."""
    return await run_post(request, call, _creator(LEAD))


@router.get("/people/{person_id}")
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
        return Outcome(PersonRead.model_validate(person).to_json())

    return await run_read(request, handler)


@router.get("/people")
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


@crm_router.post("/crm/modify")
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
