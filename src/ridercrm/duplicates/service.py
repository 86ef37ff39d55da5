"""The review queue: clusters found by the scan, and the operator's decisions on them."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.call import Call
from ridercrm.audit.service import record_call
from ridercrm.db import session_scope, utcnow
from ridercrm.duplicates import merge
from ridercrm.duplicates.models import (
    DISMISSED,
    MERGED,
    OPEN,
    SKIPPED,
    DuplicateCluster,
    DuplicatePair,
)
from ridercrm.duplicates.scan import pairs_of
from ridercrm.duplicates.scoring import SameCheck
from ridercrm.errors import CONFLICT, INVALID, NOT_FOUND
from ridercrm.people.models import PERSON_FIELDS, Person
from ridercrm.startup import operator

DECISIONS = ("merge", "dismiss", "skip")


@dataclass
class ClusterPage:
    clusters: list[DuplicateCluster]
    next_before: int | None


def list_clusters(
    session: Session, *, limit: int, before: DuplicateCluster | None = None, status: str = OPEN
) -> ClusterPage:
    """Clusters of one status, best score first (then newest id), after ``before``."""
    statement = select(DuplicateCluster).where(DuplicateCluster.status == status)
    if before is not None:
        statement = statement.where(
            or_(
                DuplicateCluster.score < before.score,
                and_(DuplicateCluster.score == before.score, DuplicateCluster.id < before.id),
            )
        )
    statement = statement.order_by(DuplicateCluster.score.desc(), DuplicateCluster.id.desc())
    found = list(session.scalars(statement.limit(limit + 1)).all())
    if len(found) > limit:
        return ClusterPage(found[:limit], next_before=found[limit - 1].id)
    return ClusterPage(found, next_before=None)


def find_cluster(session: Session, cluster_id: int) -> DuplicateCluster | None:
    """The cluster with this id, or None."""
    return session.get(DuplicateCluster, cluster_id)


def summary(cluster: DuplicateCluster) -> dict[str, Any]:
    """A cluster in the list: its id, people, score and status."""
    return {
        "id": cluster.id,
        "people": list(cluster.people),
        "score": cluster.score,
        "status": cluster.status,
        "merge_id": cluster.merge_id,
        "created_at": cluster.created_at.isoformat(),
    }


def names_of(session: Session, person_ids: Sequence[str]) -> dict[str, str]:
    """Each person's name as staff read it ("Ann Nguyen"), for the command's tables."""
    if not person_ids:
        return {}
    rows = session.execute(
        select(Person.id, Person.first_name, Person.last_name).where(Person.id.in_(set(person_ids)))
    )
    return {pid: " ".join(part for part in (first, last) if part) for pid, first, last in rows}


def detail(session: Session, cluster: DuplicateCluster) -> dict[str, Any]:
    """A cluster side by side: every record, the fields that differ, and each pair's reasons."""
    people = {p.id: p for p in session.scalars(select(Person).where(Person.id.in_(cluster.people)))}
    records = [
        {
            "id": pid,
            "kind": people[pid].kind,
            **{name: merge._dump(getattr(people[pid], name)) for name in PERSON_FIELDS},
            "merged_into": people[pid].merged_into,
            "created_at": people[pid].created_at.isoformat(),
            "updated_at": people[pid].updated_at.isoformat(),
        }
        for pid in cluster.people
        if pid in people
    ]
    differing = [name for name in PERSON_FIELDS if len({json.dumps(r[name]) for r in records}) > 1]
    pairs = [
        {"people": [pair.person_id, pair.other_id], "score": pair.score, **pair.explanation}
        for pair in pairs_of(session, list(cluster.people))
    ]
    return {**summary(cluster), "records": records, "differing": differing, "pairs": pairs}


def decide(
    session: Session,
    cluster: DuplicateCluster,
    *,
    decision: str,
    survivor: str | None = None,
    fields: Mapping[str, str] | None = None,
    dry_run: bool = False,
    audit_id: str | None = None,
    same: SameCheck | None = None,
) -> dict[str, Any]:
    """Merge a cluster, dismiss it (remembered: never proposed again) or skip it;
    ``same``: refuse to merge members the matcher now scores as different people."""
    if decision not in DECISIONS:
        raise merge.MergeError(INVALID, f"decision: one of {', '.join(DECISIONS)}")
    if not dry_run:
        cluster = _lock_cluster(session, cluster)
    if cluster.status != OPEN and not (cluster.status == SKIPPED and decision != "skip"):
        raise merge.MergeError(CONFLICT, f"cluster {cluster.id} is already {cluster.status}")
    result: dict[str, Any] = {"cluster": cluster.id, "decision": decision, "dry_run": dry_run}
    if decision == "merge":
        plan, record = merge.merge_people(
            session,
            people_ids=list(cluster.people),
            survivor_id=survivor,
            fields=fields,
            dry_run=dry_run,
            audit_id=audit_id,
            same=same,
        )
        result |= {"merge_id": record.id if record else None, **plan.preview()}
        if record is not None:
            cluster.status, cluster.merge_id = MERGED, record.id
    elif decision == "dismiss":
        _refuse_merged_since(session, cluster)
        result["dismissed_pairs"] = len(pairs_of(session, list(cluster.people)))
        if not dry_run:
            for pair in session.scalars(
                select(DuplicatePair).where(
                    DuplicatePair.person_id.in_(cluster.people),
                    DuplicatePair.other_id.in_(cluster.people),
                )
            ):
                pair.status = DISMISSED
            cluster.status = DISMISSED
    elif not dry_run:
        cluster.status = SKIPPED
    if not dry_run:
        cluster.decided_at = utcnow()
        session.flush()
    result["status"] = cluster.status
    return result


def _refuse_merged_since(session: Session, cluster: DuplicateCluster) -> None:
    """A cluster whose people were merged (through the people API or the CLI) after it
    was proposed is not theirs to dismiss: that would remember the two as two people,
    never proposed again, even after the merge is undone. The re-check closes it."""
    merged = session.scalars(
        select(Person.id)
        .where(Person.id.in_(cluster.people), Person.merged_into.is_not(None))
        .order_by(Person.id)
    ).all()
    if merged:
        raise merge.MergeError(
            CONFLICT,
            f"{', '.join(merged)} merged since cluster {cluster.id} was proposed; it leaves"
            " the queue at the next re-check; nothing was changed",
        )


def _lock_cluster(session: Session, cluster: DuplicateCluster) -> DuplicateCluster:
    """Hold the cluster for this decision and read its status again (PostgreSQL).

    Two decisions on one cluster queue here: the second sees the first one's status and
    is refused. SQLite has one writer at a time; its write transaction read it current.
    """
    if session.get_bind().dialect.name == "sqlite":
        return cluster
    locked = session.get(DuplicateCluster, cluster.id, with_for_update=True, populate_existing=True)
    if locked is None:
        raise merge.MergeError(NOT_FOUND, f"no cluster with id {cluster.id}")
    return locked


def audit_cli(
    session: Session,
    *,
    operation: str,
    command: str,
    arguments: Mapping[str, Any],
    status: int,
    result: Any,
    started: float,
    audit_id: str | None = None,
    redact: bool = False,
) -> str:
    """Record a CLI action in the audit trail as the API records a request; return its id.

    ``audit_id`` is the id the action already wrote into what it changed (a merge's
    record and events), chosen before it ran; ``redact`` is RIDERCRM_AUDIT_REDACT.
    """
    call = Call(method="CLI", path=command, started=started)
    if audit_id is not None:
        call.audit_id = audit_id
    call.operation = operation
    call.content_type = "application/json"
    call.request_body = json.dumps(arguments, default=str).encode()
    if status >= 400:
        call.failure_reason = str(result)
    record = record_call(
        session,
        call=call,
        status=status,
        response_body=json.dumps(result, default=str).encode(),
        duration_ms=(time.perf_counter() - started) * 1000,
        redact=redact,
    )
    record.staff_user = operator()  # who ran the command: --as NAME or the OS user
    return call.audit_id


def auto_merge(sessions: sessionmaker[Session], *, threshold: float) -> list[int]:
    """Merge each open cluster whose weakest pair reaches ``threshold``; return the merge ids."""
    merged: list[int] = []
    with session_scope(sessions) as session:
        ids = session.scalars(
            select(DuplicateCluster.id).where(
                DuplicateCluster.status == OPEN, DuplicateCluster.score >= threshold
            )
        ).all()
    for cluster_id in ids:
        try:
            with session_scope(sessions, write=True) as session:
                cluster = session.get(DuplicateCluster, cluster_id)
                if cluster is None or cluster.status != OPEN:
                    continue
                result = decide(session, cluster, decision="merge")
                merged.append(result["merge_id"])
        except merge.MergeError:
            continue  # left in the queue for review
    return merged
