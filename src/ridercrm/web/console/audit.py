"""Console pages: the audit trail, filtered, and one record with its request and response."""

from __future__ import annotations

import json

from fastapi.responses import Response

from ridercrm.audit.redact import without_stop_tokens
from ridercrm.staff import audit_search
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Visit
from ridercrm.web.runtime import app_context

router = ConsoleRouter()
FILTERS = ("operation", "since", "until", "who", "person", "booking", "outcome")


@router.page("/audit", role="viewer", name="audit")
async def audit_page(visit: Visit) -> Response:
    """Audit records, newest first, filtered by operation, dates, who, person, booking, outcome."""
    params = {
        name: value.replace("\x00", "")[:200]
        for name, value in visit.request.query_params.items()
        if name in (*FILTERS, "before")
    }
    zone = app_context(visit.request).settings.zone  # the days of the business's calendar
    filters, problems = audit_search.read_filters(params, zone)
    # A filter that cannot be read lists nothing (as the messages page): the records of
    # the other filters alone would read as the answer to what was asked.
    records, following = (
        ([], None)
        if problems
        else await visit.read(lambda session: audit_search.search(session, filters))
    )
    shown = {name: params.get(name, "") for name in FILTERS}
    return visit.render(
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


@router.page("/audit/{audit_id}", role="viewer", name="audit_record")
async def audit_record(visit: Visit, audit_id: str) -> Response:
    """One audit record with its request and response (as stored: RIDERCRM_AUDIT_REDACT)."""
    found = await visit.read(lambda session: audit_search.record(session, audit_id[:40]))
    if found is None:
        raise frame.ConsoleRefusal(404, f"There is no audit record {audit_id[:40]}.")
    # Stop-reminders links' tokens only for those who may stop reminders themselves.
    shown = (lambda text: text) if visit.user.may("staff") else without_stop_tokens
    outcomes = found.outcomes
    if outcomes:
        outcomes = json.loads(shown(json.dumps(outcomes)))
    return visit.render(
        "audit_record.html",
        {
            "record": found,
            "path": shown(found.path or ""),
            "failure_reason": shown(found.failure_reason or ""),
            "request_body": shown(audit_search.pretty(found.request_body)),
            "response_body": shown(audit_search.pretty(found.response_body)),
            "outcomes": outcomes,
            "redacted": frame.services_of(visit.request).settings.audit_redact,
        },
    )
