"""Admin API for duplicates: merge people, undo a merge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.duplicates import merge
from ridercrm.duplicates.schemas import (
    MERGE_EXAMPLE,
    MergeRequest,
    MergeResult,
    UndoRequest,
    UndoResult,
)
from ridercrm.http import openapi
from ridercrm.http.context import Call
from ridercrm.http.errors import ApiError
from ridercrm.http.runtime import Outcome, operation, run_post
from ridercrm.http.validation import parse_model

router = APIRouter(prefix="/admin", tags=["admin"])

MERGE_NOTES = {
    404: "A person named in people is not stored.",
    409: "Another request merged or converted one of the people meanwhile, or the merge "
    "would break a constraint; nothing was changed.",
}


@router.post(
    "/people/merge",
    summary="Merge duplicate people into one survivor",
    openapi_extra=openapi.request_body(MergeRequest, example=MERGE_EXAMPLE),
    responses=openapi.responses(
        ok=(
            200,
            "Merged (or, with dry_run, the preview).",
            openapi.json_content(openapi.ref(MergeResult)),
        ),
        refused=(*openapi.ADMIN_POST_REFUSALS, 404),
        notes=MERGE_NOTES,
    ),
)
async def merge_people(
    request: Request, call: Call = Depends(operation("admin.merge_people", scope="admin"))
) -> Response:
    """Merge 2 to 20 people: fields chosen per member, courses re-pointed, nothing deleted."""

    def handler(session: Session, payload: Any) -> Outcome:
        body = parse_model(MergeRequest, payload)
        try:
            plan, record = merge.merge_people(
                session,
                people_ids=body.people,
                survivor_id=body.survivor,
                fields=body.fields,
                dry_run=body.dry_run,
                audit_id=call.audit_id,
            )
        except merge.MergeError as exc:
            raise ApiError(exc.status, exc.reason) from None
        result = {"merge_id": record.id if record else None, "dry_run": body.dry_run}
        return Outcome({**result, **plan.preview()})

    return await run_post(request, call, handler)


@router.post(
    "/people/merge/{merge_id}/undo",
    summary="Undo a merge",
    openapi_extra=openapi.request_body(UndoRequest, example={}),
    responses=openapi.responses(
        ok=(200, "The merge is undone.", openapi.json_content(openapi.ref(UndoResult))),
        refused=(*openapi.ADMIN_POST_REFUSALS, 404),
        notes={
            404: "No merge has this id.",
            409: "The merge was undone already, or a later change makes undoing it unsafe "
            "(the reason says which); nothing was changed.",
        },
    ),
)
async def undo_merge(
    request: Request,
    merge_id: int,
    call: Call = Depends(operation("admin.undo_merge", scope="admin")),
) -> Response:
    """Restore each member's own values and move the re-pointed courses back."""
    if not (call.request_body or b"").strip():
        # The merge id is in the path: a body-less POST is the natural call.
        call.request_body = b"{}"

    def handler(session: Session, payload: Any) -> Outcome:
        parse_model(UndoRequest, payload)
        try:
            record = merge.undo_merge(session, merge_id)
        except merge.MergeError as exc:
            raise ApiError(exc.status, exc.reason) from None
        return Outcome(
            {
                "merge_id": record.id,
                "survivor": record.survivor_id,
                "restored": list(record.merged_ids),
                "moved_back": {"courses": sorted(record.moved_assets)},
            }
        )

    return await run_post(request, call, handler)
