"""Console pages: the audit trail, filtered, and one record with its request and response."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from ridercrm.staff import audit_search
from ridercrm.web.console import frame
from ridercrm.web.console.frame import AsViewer

router = APIRouter()
FILTERS = ("operation", "since", "until", "who", "person", "booking", "outcome")


@router.get("/audit", name="audit")
async def audit_page(request: Request, staff: AsViewer) -> Response:
    """Audit records, newest first, filtered by operation, dates, who, person, booking, outcome."""
    params = {
        name: value.replace("\x00", "")[:200]
        for name, value in request.query_params.items()
        if name in (*FILTERS, "before")
    }
    filters, problems = audit_search.read_filters(params)
    records, following = await frame.read(
        request, lambda session: audit_search.search(session, filters)
    )
    shown = {name: params.get(name, "") for name in FILTERS}
    return frame.render(
        request,
        staff,
        "audit.html",
        {
            "records": records,
            "following": following,
            "filters": shown,
            "problems": problems,
            "next_params": {**{k: v for k, v in shown.items() if v}, "before": following},
        },
        status=400 if problems else 200,
    )


@router.get("/audit/{audit_id}", name="audit_record")
async def audit_record(request: Request, audit_id: str, staff: AsViewer) -> Response:
    """One audit record with its request and response (as stored: RIDERCRM_AUDIT_REDACT)."""
    found = await frame.read(request, lambda session: audit_search.record(session, audit_id[:40]))
    if found is None:
        raise frame.ConsoleRefusal(404, f"There is no audit record {audit_id[:40]}.")
    return frame.render(
        request,
        staff,
        "audit_record.html",
        {
            "record": found,
            "request_body": audit_search.pretty(found.request_body),
            "response_body": audit_search.pretty(found.response_body),
            "redacted": frame.services_of(request).settings.audit_redact,
        },
    )
