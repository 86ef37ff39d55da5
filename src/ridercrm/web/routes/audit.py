"""Admin API for the audit trail."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Query
from sqlalchemy.orm import Session

from ridercrm.audit import service
from ridercrm.audit.models import AuditRecord
from ridercrm.audit.schemas import AuditEntries, AuditEntry
from ridercrm.errors import ApiError
from ridercrm.web.operations import Operations
from ridercrm.web.validation import utc_time

router = APIRouter(prefix="/admin/audit", tags=["admin"])
admin = Operations(router, "admin", scope="admin")


def read_audit_record(session: Session, audit_id: str) -> AuditRecord | None:
    """Return one audit record: the request, the response and what happened."""
    return service.find_record(session, audit_id)


admin.get(
    "/{audit_id}",
    read_audit_record,
    name="admin.read_audit",
    response=AuditEntry,
    missing="audit record",
    ok="The record.",
    summary="Read an audit record",
)


@dataclass(frozen=True)
class RecordsAsked:
    """The query of an audit list."""

    operation: str | None
    since: dt.datetime | None
    limit: int
    before: str | None


def records_asked(
    operation_name: str | None = Query(None, alias="operation", max_length=40),
    since: dt.datetime | None = Query(None, description="ISO 8601 time; UTC when no zone is given"),
    limit: int = Query(50, ge=1, le=1000),
    before: str | None = Query(
        None,
        max_length=40,
        description="An audit id: only records older than it (the next_before of a page).",
    ),
) -> RecordsAsked:
    """The list's query, ``since`` in UTC."""
    return RecordsAsked(operation_name, utc_time("since", since), limit, before)


def search_audit_records(session: Session, asked: RecordsAsked) -> dict[str, Any]:
    """List audit records, newest first, optionally of one operation and since a time.

    A page holds at most ``limit`` records and about 8 MiB of stored bodies (at least
    one record); ``next_before`` names the record to ask ``before`` for the next page.
    """
    after = None
    if asked.before is not None:
        after = service.find_record(session, asked.before)
        if after is None:
            reason = f"before: no audit record with id {asked.before}"
            raise ApiError(400, reason, errors=[reason])
    page = service.search_records(
        session, operation=asked.operation, since=asked.since, limit=asked.limit, before=after
    )
    return {"records": page.records, "next_before": page.next_before}


admin.get(
    "",
    search_audit_records,
    ask=records_asked,
    name="admin.search_audit",
    response=AuditEntries,
    ok="A page of records (at most limit).",
    summary="List audit records, newest first",
)
