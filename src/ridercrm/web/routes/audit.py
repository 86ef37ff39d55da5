"""Admin API for the audit trail."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.audit import service
from ridercrm.audit.call import Call
from ridercrm.audit.schemas import AuditEntries, AuditEntry
from ridercrm.errors import ApiError
from ridercrm.web import openapi
from ridercrm.web.runtime import Reply, operation, run_read

router = APIRouter(prefix="/admin/audit", tags=["admin"])

ReadAudit = Annotated[Call, Depends(operation("admin.read_audit", scope="admin"))]
SearchAudit = Annotated[Call, Depends(operation("admin.search_audit", scope="admin"))]


@router.get(
    "/{audit_id}",
    summary="Read an audit record",
    responses=openapi.responses(
        ok=(200, "The record.", openapi.json_content(openapi.ref(AuditEntry))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def read_audit_record(request: Request, audit_id: str, _call: ReadAudit) -> Response:
    """Return one audit record: the request, the response and what happened."""
    return await run_read(request, record_reply, audit_id)


def record_reply(session: Session, audit_id: str) -> Reply:
    """The record ``audit_id`` names, or 404."""
    record = service.find_record(session, audit_id)
    if record is None:
        raise ApiError(404, f"no audit record with id {audit_id}")
    return Reply(AuditEntry.model_validate(record).model_dump(mode="json"))


@router.get(
    "",
    summary="List audit records, newest first",
    responses=openapi.responses(
        ok=(
            200,
            "A page of records (at most limit).",
            openapi.json_content(openapi.ref(AuditEntries)),
        ),
        refused=openapi.READ_REFUSALS,
    ),
)
async def search_audit_records(
    request: Request,
    _call: SearchAudit,
    operation_name: str | None = Query(None, alias="operation", max_length=40),
    since: dt.datetime | None = Query(None, description="ISO 8601 time; UTC when no zone is given"),
    limit: int = Query(50, ge=1, le=1000),
    before: str | None = Query(
        None,
        max_length=40,
        description="An audit id: only records older than it (the next_before of a page).",
    ),
) -> Response:
    """List audit records, newest first, optionally of one operation and since a time.

    A page holds at most ``limit`` records and about 8 MiB of stored bodies (at least
    one record); ``next_before`` names the record to ask ``before`` for the next page.
    """
    if since is not None:
        if since.tzinfo is None:
            since = since.replace(tzinfo=dt.UTC)
        try:
            since = since.astimezone(dt.UTC)
        except OverflowError:
            # e.g. 0001-01-01T00:00:00+10:00 is before the first representable UTC time
            raise ApiError(
                400, "since: is out of range", errors=["since: is out of range"]
            ) from None

    asked = RecordsAsked(operation=operation_name, since=since, limit=limit, before=before)
    return await run_read(request, records_page, asked)


@dataclass(frozen=True)
class RecordsAsked:
    """The query of an audit list."""

    operation: str | None
    since: dt.datetime | None
    limit: int
    before: str | None


def records_page(session: Session, asked: RecordsAsked) -> Reply:
    """A page of records, newest first, and the next page's ``next_before``."""
    after = None
    if asked.before is not None:
        after = service.find_record(session, asked.before)
        if after is None:
            reason = f"before: no audit record with id {asked.before}"
            raise ApiError(400, reason, errors=[reason])
    page = service.search_records(
        session, operation=asked.operation, since=asked.since, limit=asked.limit, before=after
    )
    answer = {"records": page.records, "next_before": page.next_before}
    return Reply(AuditEntries.model_validate(answer).model_dump(mode="json"))
