"""Admin API for duplicates: the review queue, merging people and undoing a merge."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.audit.call import Call
from ridercrm.duplicates import merge, service
from ridercrm.duplicates.schemas import (
    MERGE_EXAMPLE,
    ClusterDetail,
    ClusterList,
    DecideRequest,
    DecideResult,
    MergeRequest,
    MergeResult,
    UndoRequest,
    UndoResult,
)
from ridercrm.errors import ApiError
from ridercrm.web import openapi
from ridercrm.web.runtime import Reply, operation, run_post, run_read
from ridercrm.web.validation import parse_model

# Ids are database integers: a larger number names nothing (and would overflow SQLite).
MAX_ID = 2**62

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

    def handler(session: Session, payload: Any) -> Reply:
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
        return Reply({**result, **plan.preview()})

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
    merge_id: int = Path(ge=1, le=MAX_ID),
    call: Call = Depends(operation("admin.undo_merge", scope="admin")),
) -> Response:
    """Restore each member's own values and move the re-pointed courses back."""
    if not (call.request_body or b"").strip():
        # The merge id is in the path: a body-less POST is the natural call.
        call.request_body = b"{}"

    def handler(session: Session, payload: Any) -> Reply:
        parse_model(UndoRequest, payload)
        try:
            record = merge.undo_merge(session, merge_id)
        except merge.MergeError as exc:
            raise ApiError(exc.status, exc.reason) from None
        return Reply(
            {
                "merge_id": record.id,
                "survivor": record.survivor_id,
                "restored": list(record.merged_ids),
                "moved_back": {"courses": sorted(record.moved_assets)},
            }
        )

    return await run_post(request, call, handler)


@router.get(
    "/duplicates",
    summary="The review queue: clusters of likely duplicates, best score first",
    responses=openapi.responses(
        ok=(
            200,
            "A page of clusters (at most limit).",
            openapi.json_content(openapi.ref(ClusterList)),
        ),
        refused=openapi.READ_REFUSALS,
    ),
)
async def list_duplicates(
    request: Request,
    limit: int = Query(50, ge=1, le=500),
    before: int | None = Query(
        None, ge=1, le=MAX_ID, description="A cluster id: the next_before of a page."
    ),
    status: str = Query("open", pattern="^(open|skipped|merged|dismissed)$"),
    _call: Call = Depends(operation("admin.list_duplicates", scope="admin")),
) -> Response:
    """List clusters found by `ridercrm duplicates scan`, paged by next_before."""

    def handler(session: Session, _payload: None) -> Reply:
        after = None
        if before is not None:
            after = service.find_cluster(session, before)
            if after is None:
                raise ApiError(400, f"before: no cluster with id {before}")
        page = service.list_clusters(session, limit=limit, before=after, status=status)
        return Reply(
            {
                "clusters": [service.summary(c) for c in page.clusters],
                "next_before": page.next_before,
            }
        )

    return await run_read(request, handler)


@router.get(
    "/duplicates/{cluster_id}",
    summary="One cluster side by side",
    responses=openapi.responses(
        ok=(200, "The cluster.", openapi.json_content(openapi.ref(ClusterDetail))),
        refused=openapi.RECORD_REFUSALS,
    ),
)
async def read_duplicates(
    request: Request,
    cluster_id: int = Path(ge=1, le=MAX_ID),
    _call: Call = Depends(operation("admin.read_duplicates", scope="admin")),
) -> Response:
    """Return a cluster's records, the fields that differ and each pair's explanation."""

    def handler(session: Session, _payload: None) -> Reply:
        cluster = service.find_cluster(session, cluster_id)
        if cluster is None:
            raise ApiError(404, f"no cluster with id {cluster_id}")
        return Reply(service.detail(session, cluster))

    return await run_read(request, handler)


@router.post(
    "/duplicates/{cluster_id}/decide",
    summary="Decide on a cluster: merge, dismiss (not duplicates) or skip",
    openapi_extra=openapi.request_body(DecideRequest, example={"decision": "dismiss"}),
    responses=openapi.responses(
        ok=(
            200,
            "Decided (or, with dry_run, the preview).",
            openapi.json_content(openapi.ref(DecideResult)),
        ),
        refused=(*openapi.ADMIN_POST_REFUSALS, 404),
        notes={404: "No cluster has this id.", 409: "The cluster was decided already."},
    ),
)
async def decide_duplicates(
    request: Request,
    cluster_id: int = Path(ge=1, le=MAX_ID),
    call: Call = Depends(operation("admin.decide_duplicates", scope="admin")),
) -> Response:
    """Merge the cluster's people, remember they are not duplicates, or skip the cluster."""

    def handler(session: Session, payload: Any) -> Reply:
        body = parse_model(DecideRequest, payload)
        cluster = service.find_cluster(session, cluster_id)
        if cluster is None:
            raise ApiError(404, f"no cluster with id {cluster_id}")
        try:
            result = service.decide(
                session,
                cluster,
                decision=body.decision,
                survivor=body.survivor,
                fields=body.fields,
                dry_run=body.dry_run,
                audit_id=call.audit_id,
            )
        except merge.MergeError as exc:
            raise ApiError(exc.status, exc.reason) from None
        return Reply(result)

    return await run_post(request, call, handler)
