"""Admin API for duplicates: the review queue, merging people and undoing a merge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Path, Query
from sqlalchemy.orm import Session

from ridercrm.db import MAX_INTEGER_ID
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
from ridercrm.duplicates.scoring import SameCheck
from ridercrm.errors import ApiError
from ridercrm.web import openapi
from ridercrm.web.operations import Operations, Requested
from ridercrm.web.runtime import Reply
from ridercrm.web.validation import parse_model

router = APIRouter(prefix="/admin", tags=["admin"])
admin = Operations(router, "admin", scope="admin")

MERGE_NOTES = {
    404: "A person named in people is not stored.",
    409: "The matcher scores two of the people as different (send force: true to merge "
    "them anyway), another request merged or converted one of them meanwhile, or the merge "
    "would break a constraint; nothing was changed.",
}


@dataclass(frozen=True)
class Merge:
    """A merge request, and the audit id its merge record cites."""

    request: MergeRequest
    audit_id: str
    same: SameCheck | None  # None: forced


def same_check(request: Requested) -> SameCheck:
    """The matcher's judgement a merge asks for unless forced (the app's thresholds)."""
    return SameCheck.of(request.settings)


def merge_of(body: Any, request: Requested) -> Merge:
    """The body as a merge request."""
    asked = parse_model(MergeRequest, body)
    return Merge(asked, request.audit_id, None if asked.force else same_check(request))


def merge_people(session: Session, merge_: Merge) -> Reply:
    """Merge 2 to 20 people: fields chosen per member, courses re-pointed, nothing deleted."""
    body = merge_.request
    plan, record = merge.merge_people(
        session,
        people_ids=body.people,
        survivor_id=body.survivor,
        fields=body.fields,
        dry_run=body.dry_run,
        audit_id=merge_.audit_id,
        same=merge_.same,
    )
    result = {"merge_id": record.id if record else None, "dry_run": body.dry_run}
    return Reply({**result, **plan.preview()})


admin.post(
    "/people/merge",
    merge_people,
    decode=merge_of,
    example=MERGE_EXAMPLE,
    body=MergeRequest,
    ok="Merged (or, with dry_run, the preview).",
    answer=MergeResult,
    refused=(*openapi.INTERFACE_REFUSALS, 404),
    notes=MERGE_NOTES,
    summary="Merge duplicate people into one survivor",
)

MergeId = Annotated[int, Path(ge=1, le=MAX_INTEGER_ID)]
ClusterId = Annotated[int, Path(ge=1, le=MAX_INTEGER_ID)]


@dataclass(frozen=True)
class Undo:
    merge_id: int
    audit_id: str


def undo_of(body: Any, request: Requested) -> Undo:
    """The merge the path names; the body may only be ``{}``."""
    parse_model(UndoRequest, body)
    return Undo(request.path["merge_id"], request.audit_id)


def undo_merge(session: Session, undo: Undo) -> Reply:
    """Restore each member's own values and move the re-pointed courses back."""
    record = merge.undo_merge(session, undo.merge_id, audit_id=undo.audit_id)
    return Reply(
        {
            "merge_id": record.id,
            "survivor": record.survivor_id,
            "restored": list(record.merged_ids),
            "moved_back": {"courses": sorted(record.moved_assets)},
        }
    )


admin.post(
    "/people/merge/{merge_id}/undo",
    undo_merge,
    decode=undo_of,
    path_types={"merge_id": MergeId},
    # The merge id is in the path: a body-less POST is the natural call.
    empty_body_is_object=True,
    example={},
    body=UndoRequest,
    ok="The merge is undone.",
    answer=UndoResult,
    notes={
        404: "No merge has this id.",
        409: "The merge was undone already, or a later change makes undoing it unsafe "
        "(the reason says which); nothing was changed.",
    },
    summary="Undo a merge",
)


@dataclass(frozen=True)
class ClustersAsked:
    """The query of the review queue."""

    limit: int
    before: int | None
    status: str


def clusters_asked(
    limit: int = Query(50, ge=1, le=500),
    before: int | None = Query(
        None, ge=1, le=MAX_INTEGER_ID, description="A cluster id: the next_before of a page."
    ),
    status: str = Query("open", pattern="^(open|skipped|merged|dismissed)$"),
) -> ClustersAsked:
    """The queue's query."""
    return ClustersAsked(limit, before, status)


def list_duplicates(session: Session, asked: ClustersAsked) -> Reply:
    """List clusters found by `ridercrm duplicates scan`, paged by next_before."""
    after = None
    if asked.before is not None:
        after = service.find_cluster(session, asked.before)
        if after is None:
            raise ApiError(400, f"before: no cluster with id {asked.before}")
    page = service.list_clusters(session, limit=asked.limit, before=after, status=asked.status)
    return Reply(
        {"clusters": [service.summary(c) for c in page.clusters], "next_before": page.next_before}
    )


admin.get(
    "/duplicates",
    list_duplicates,
    ask=clusters_asked,
    response=ClusterList,
    ok="A page of clusters (at most limit).",
    summary="The review queue: clusters of likely duplicates, best score first",
)


def read_duplicates(session: Session, cluster_id: int) -> Reply:
    """Return a cluster's records, the fields that differ and each pair's explanation."""
    cluster = service.find_cluster(session, cluster_id)
    if cluster is None:
        raise ApiError(404, f"no cluster with id {cluster_id}")
    return Reply(service.detail(session, cluster))


admin.get(
    "/duplicates/{cluster_id}",
    read_duplicates,
    path_types={"cluster_id": ClusterId},
    response=ClusterDetail,
    ok="The cluster.",
    summary="One cluster side by side",
)


@dataclass(frozen=True)
class Decision:
    """A decision on the cluster the path names, and the audit id a merge cites."""

    cluster_id: int
    request: DecideRequest
    audit_id: str
    same: SameCheck | None  # None: forced


def decision_of(body: Any, request: Requested) -> Decision:
    """The body as a decision on the path's cluster."""
    asked = parse_model(DecideRequest, body)
    same = None if asked.force else same_check(request)
    return Decision(request.path["cluster_id"], asked, request.audit_id, same)


def decide_duplicates(session: Session, decision: Decision) -> Reply:
    """Merge the cluster's people, remember they are not duplicates, or skip the cluster."""
    cluster = service.find_cluster(session, decision.cluster_id)
    if cluster is None:
        raise ApiError(404, f"no cluster with id {decision.cluster_id}")
    body = decision.request
    result = service.decide(
        session,
        cluster,
        decision=body.decision,
        survivor=body.survivor,
        fields=body.fields,
        dry_run=body.dry_run,
        audit_id=decision.audit_id,
        same=decision.same,
    )
    return Reply(result)


admin.post(
    "/duplicates/{cluster_id}/decide",
    decide_duplicates,
    decode=decision_of,
    path_types={"cluster_id": ClusterId},
    example={"decision": "dismiss"},
    body=DecideRequest,
    ok="Decided (or, with dry_run, the preview).",
    answer=DecideResult,
    notes={404: "No cluster has this id.", 409: "The cluster was decided already."},
    summary="Decide on a cluster: merge, dismiss (not duplicates) or skip",
)
