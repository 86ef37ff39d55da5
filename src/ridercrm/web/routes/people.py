"""Admin API for people: create contacts and leads, read, list and search them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from ridercrm.errors import ApiError, sentence
from ridercrm.people import modify, service
from ridercrm.people.models import CONTACT, LEAD, Person
from ridercrm.people.schemas import (
    MODIFY_EXAMPLE,
    NEW_PERSON_EXAMPLE,
    ModifyRefusal,
    ModifyRequest,
    ModifyResponse,
    PeopleFound,
    PersonCreate,
    PersonDetail,
)
from ridercrm.web import openapi
from ridercrm.web.operations import Operations, Requested
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import items_of, utc_time

router = APIRouter(prefix="/admin", tags=["admin"])
crm_router = APIRouter(tags=["people"])
admin = Operations(router, "admin", scope="admin")


def create_contact(session: Session, data: PersonCreate) -> Reply:
    """Create a contact from the interface's person fields."""
    return Reply({"id": service.create_person(session, kind=CONTACT, data=data).id}, status=201)


def create_lead(session: Session, data: PersonCreate) -> Reply:
    """Create a lead from the interface's person fields."""
    return Reply({"id": service.create_person(session, kind=LEAD, data=data).id}, status=201)


for _path, _work, _summary in (
    ("/contacts", create_contact, "Create a contact"),
    ("/leads", create_lead, "Create a lead"),
):
    admin.post(
        _path,
        _work,
        example=NEW_PERSON_EXAMPLE,
        status_code=201,
        ok="Created.",
        answer=openapi.Created,
        summary=_summary,
    )


def read_person(session: Session, person_id: str) -> PersonDetail | None:
    """Return every stored field of a contact or lead."""
    return service.read_person(session, person_id)


admin.get(
    "/people/{person_id}",
    read_person,
    missing="person",
    ok="The person.",
    summary="Read a contact or lead",
)


@dataclass(frozen=True)
class PeopleAsked:
    """The query of a people list or search."""

    q: str | None
    kind: str | None
    created_since: dt.datetime | None
    updated_since: dt.datetime | None
    limit: int
    before: str | None


def people_asked(
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
) -> PeopleAsked:
    """The query, its times in UTC; ``before`` only pages the list, never a search."""
    if q is not None and before is not None:
        reason = "before: pages the list without q; a search answers at most limit people"
        raise ApiError(400, reason, errors=[reason])
    return PeopleAsked(
        q=q,
        kind=kind,
        created_since=utc_time("created_since", created_since),
        updated_since=utc_time("updated_since", updated_since),
        limit=limit,
        before=before,
    )


def search_people(session: Session, asked: PeopleAsked) -> dict[str, Any]:
    """List people newest first, a page at a time, or find them by name, e-mail or phone.

    Without ``q``: every person (or those of ``kind``, created or updated since a
    time), newest first; ``next_before`` names the person to ask ``before`` for the
    next page. With ``q``: the best ``limit`` matches by name, e-mail or phone.
    """
    people: Sequence[Person]
    next_before = None
    if asked.q is not None:
        people = service.search_people(
            session,
            query=asked.q,
            limit=asked.limit,
            kind=asked.kind,
            created_since=asked.created_since,
            updated_since=asked.updated_since,
        )
    else:
        try:
            people, next_before = service.list_people(
                session,
                kind=asked.kind,
                created_since=asked.created_since,
                updated_since=asked.updated_since,
                limit=asked.limit,
                before=asked.before,
            )
        except ValueError as exc:
            raise ApiError(400, str(exc), errors=[str(exc)]) from None
    return {"people": people, "next_before": next_before}


admin.get(
    "/people",
    search_people,
    ask=people_asked,
    response=PeopleFound,
    ok="A page of people (at most limit).",
    summary="List people newest first, or search them by name, e-mail or phone",
)


def modify_failure_shape(error: ApiError, audit_id: str) -> dict[str, Any]:
    """Operation 2's whole-request failure: its own JSON shape, the receipt names the problem."""
    return {
        "status": False,
        "receipt": sentence(error.reason),
        "audit_ID": audit_id,
        "details": [],
        "items_failed": 0,
    }


crm = Operations(
    crm_router,
    "crm",
    scope="people",
    shape=modify_failure_shape,
    refusal=openapi.json_content(openapi.ref(ModifyRefusal)),
)


@dataclass(frozen=True)
class Changes:
    """Operation 2's payload: the items, at most RIDERCRM_MAX_ITEMS, and the audit id."""

    items: list[Any]
    audit_id: str


def changes_of(body: Any, request: Requested) -> Changes:
    """The body's ``people_data`` items."""
    limit = request.settings.max_items
    return Changes(items_of(body, "people_data", limit=limit), request.audit_id)


def modify_people(session: Session, changes: Changes) -> Reply:
    """Modify stored fields of contacts and leads, several per request."""
    answer = modify.modify_people(session, items=changes.items, audit_id=changes.audit_id)
    return Reply(
        answer.model_dump(mode="json"),
        audit=[
            {"index": index, "ID": r.ID, "status": r.status, "fields": r.fields, "errors": r.errors}
            for index, r in enumerate(answer.details)
        ],
    )


crm.post(
    "/crm/modify",
    modify_people,
    decode=changes_of,
    name="crm.modify",
    example=MODIFY_EXAMPLE,
    body=ModifyRequest,
    brackets=r"^people_data\[[0-9]+\]\[[A-Za-z0-9_]+\]$",
    ok="Every item was processed; status and items_failed say whether all were applied.",
    answer=ModifyResponse,
    summary="Modify people's stored fields, several per request (operation 2; scope people)",
)
