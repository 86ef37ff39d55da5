"""Admin API for people: create contacts and leads, read, list and search them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from typing import Any, Literal

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call
from ridercrm.errors import ApiError, sentence
from ridercrm.people import modify, service
from ridercrm.people.models import CONTACT, LEAD, Person
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
from ridercrm.web import openapi
from ridercrm.web.runtime import Outcome, operation, run_post, run_read, services_of
from ridercrm.web.validation import items_of, parse_model, utc_time

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
    summary="List people newest first, or search them by name, e-mail or phone",
    responses=openapi.responses(
        ok=(
            200,
            "A page of people (at most limit).",
            openapi.json_content(openapi.ref(PeopleFound)),
        ),
        refused=openapi.READ_REFUSALS,
    ),
)
async def search_people(
    request: Request,
    q: str | None = Query(
        None,
        min_length=1,
        max_length=200,
        description="a name, e-mail address or phone number; without it, every person",
    ),
    kind: Literal["contact", "lead"] | None = Query(None, description="only contacts or leads"),
    created_since: dt.datetime | None = Query(
        None, description="ISO 8601 time; UTC when no zone is given"
    ),
    updated_since: dt.datetime | None = Query(
        None, description="ISO 8601 time; UTC when no zone is given"
    ),
    limit: int = Query(50, ge=1, le=1000),
    before: str | None = Query(
        None,
        max_length=40,
        description="A person id: only people created before it (the next_before of a page).",
    ),
    _call: Call = Depends(operation("admin.search_people", scope="admin")),
) -> Response:
    """List people newest first, a page at a time, or find them by name, e-mail or phone.

    Without ``q``: every person (or those of ``kind``, created or updated since a
    time), newest first; ``next_before`` names the person to ask ``before`` for the
    next page. With ``q``: the best ``limit`` matches by name, e-mail or phone.
    """
    created = utc_time("created_since", created_since)
    updated = utc_time("updated_since", updated_since)
    if q is not None and before is not None:
        reason = "before: pages the list without q; a search answers at most limit people"
        raise ApiError(400, reason, errors=[reason])

    def handler(session: Session) -> Outcome:
        people: Sequence[Person]
        if q is not None:
            found = service.search_people(session, query=q, limit=limit)
            people = [
                p
                for p in found
                if (kind is None or p.kind == kind)
                and (created is None or p.created_at >= created)
                and (updated is None or p.updated_at >= updated)
            ]
            next_before = None
        else:
            try:
                people, next_before = service.list_people(
                    session,
                    kind=kind,
                    created_since=created,
                    updated_since=updated,
                    limit=limit,
                    before=before,
                )
            except ValueError as exc:
                raise ApiError(400, str(exc), errors=[str(exc)]) from None
        return Outcome(
            {
                "people": [PersonRead.model_validate(p).to_json() for p in people],
                "next_before": next_before,
            }
        )

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
