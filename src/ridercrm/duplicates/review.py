"""What the console's duplicates pages show, gathered in one read each (framework-free).

The queue and a cluster side by side come from the same service as the admin API
(``service.list_clusters``, ``service.detail``); the default merge plan from the same
planner as a merge's dry run (``merge.plan_merge``). Merges of a person are found from
the person's own links (``merged_into``, and the merges whose survivor it is).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from ridercrm.courses.models import Asset
from ridercrm.duplicates import merge, service
from ridercrm.duplicates.models import OPEN, SKIPPED, DuplicateCluster, PersonMerge
from ridercrm.duplicates.scoring import SameCheck
from ridercrm.errors import NOT_FOUND
from ridercrm.people.models import PERSON_FIELDS, Person

PAGE = 50
STATUSES = ("open", "skipped", "merged", "dismissed")


@dataclass
class QueueRow:
    cluster: DuplicateCluster
    people: list[Person]  # the stored members, in the cluster's order


@dataclass
class QueuePage:
    rows: list[QueueRow]
    next_before: int | None


@dataclass
class FieldRow:
    """One person field across the cluster: each member's value, and whether they differ."""

    name: str
    values: list[Any]  # as the API shows them (dates in ISO form), one per member
    differs: bool


@dataclass
class ClusterView:
    cluster: DuplicateCluster
    people: list[Person]
    courses: dict[str, int]
    rows: list[FieldRow]
    pairs: list[dict[str, Any]]  # each pair's people, score, levels and weights
    explained: list[str]  # the matcher's fields any pair's explanation names, in its order
    plan: dict[str, Any] | None = None  # the default merge's preview
    plan_error: str | None = None  # why the default merge cannot be made
    merge: PersonMerge | None = None

    @property
    def decidable(self) -> bool:
        return self.cluster.status in (OPEN, SKIPPED)


@dataclass
class MergeView:
    record: PersonMerge
    survivor: Person | None
    merged: list[Person] = field(default_factory=list)


def queue(
    session: Session, *, status: str, before: int | None, limit: int | None = None
) -> QueuePage:
    """A page of clusters (``PAGE`` unless ``limit``) of one status, best score first,
    after the cluster ``before``.

    Raises ValueError for a status or ``before`` that names nothing.
    """
    if status not in STATUSES:
        raise ValueError(f"status: one of {', '.join(STATUSES)}")
    after = None
    if before is not None:
        after = service.find_cluster(session, before)
        if after is None or after.status != status:
            raise ValueError(f"before: no {status} cluster with id {before}")
    page = service.list_clusters(session, limit=limit or PAGE, before=after, status=status)
    ids = {pid for cluster in page.clusters for pid in cluster.people}
    people = _people(session, ids)
    rows = [QueueRow(c, [people[pid] for pid in c.people if pid in people]) for c in page.clusters]
    return QueuePage(rows, page.next_before)


def cluster_view(session: Session, cluster_id: int) -> ClusterView | None:
    """A cluster side by side with its explanation and the default merge, or None."""
    cluster = service.find_cluster(session, cluster_id)
    if cluster is None:
        return None
    detail = service.detail(session, cluster)
    people = _people(session, set(cluster.people))
    members = [people[pid] for pid in cluster.people if pid in people]
    records = detail["records"]
    rows = [
        FieldRow(name, [r[name] for r in records], name in detail["differing"])
        for name in PERSON_FIELDS
    ]
    pairs = detail["pairs"]
    explained: list[str] = []
    for pair in pairs:
        explained += [name for name in pair.get("weights", {}) if name not in explained]
    view = ClusterView(
        cluster=cluster,
        people=members,
        courses=course_counts(session, [p.id for p in members]),
        rows=rows,
        pairs=pairs,
        explained=explained,
    )
    if view.decidable:
        try:
            plan = merge.plan_merge(
                session, people_ids=list(cluster.people), survivor_id=None, fields={}, lock=False
            )
            view.plan = plan.preview()
        except merge.MergeError as exc:
            view.plan_error = exc.reason
    if cluster.merge_id is not None:
        view.merge = merge.find_merge(session, cluster.merge_id)
    return view


def preview(
    session: Session,
    cluster_id: int,
    *,
    survivor: str | None,
    fields: dict[str, str],
    same: SameCheck | None = None,
) -> dict[str, Any]:
    """A merge's dry run on this cluster (nothing written), as the API's preview; with
    ``same``, ``different`` says which members the matcher now scores as another person
    than the survivor (``merge.different_people``: the merge made unforced refuses them).

    Raises ``merge.MergeError`` with the reason when the merge could not be made.
    """
    cluster = service.find_cluster(session, cluster_id)
    if cluster is None:
        raise merge.MergeError(NOT_FOUND, f"no cluster with id {cluster_id}")
    planned = service.decide(
        session, cluster, decision="merge", survivor=survivor, fields=fields, dry_run=True
    )
    # Each member as the preview read it: the merge confirmed from it is refused if one
    # changed since (``changed_since``), rather than overwrite a value nobody saw.
    members = _people(session, {planned["survivor"], *planned["merged"]})
    planned["seen"] = {pid: person.updated_at.isoformat() for pid, person in members.items()}
    planned["different"] = (
        merge.different_people(
            session, members[planned["survivor"]], [members[pid] for pid in planned["merged"]], same
        )
        if same is not None
        else []
    )
    return planned


def changed_since(session: Session, merge_id: int, seen: dict[str, str]) -> list[str]:
    """The members of a merge just made (in this transaction) that were not as a preview
    read them (``seen``: each member's ``updated_at``), or that it did not name."""
    record = merge.find_merge(session, merge_id)
    assert record is not None
    members = [record.survivor_id, *record.merged_ids]
    held = {pid: record.before[pid]["updated_at"] for pid in members}
    return sorted(pid for pid in held.keys() | seen.keys() if held.get(pid) != seen.get(pid))


def courses_unseen(session: Session, merge_id: int, listed: list[str]) -> list[str]:
    """What a merge just made (in this transaction) moved otherwise than a preview listed
    (``listed``: the ids of the courses it said move), in words: a course booked for a
    member since the preview leaves the member's ``updated_at`` as it was, so
    ``changed_since`` cannot tell."""
    record = merge.find_merge(session, merge_id)
    assert record is not None
    moved, shown = set(record.moved_assets), set(listed)
    found = [f"course {asset_id} (not listed by the preview)" for asset_id in sorted(moved - shown)]
    found += [f"course {asset_id} (no longer moves)" for asset_id in sorted(shown - moved)]
    return found


def course_counts(session: Session, person_ids: list[str]) -> dict[str, int]:
    """How many courses each person has (0 for none)."""
    rows = session.execute(
        select(Asset.person_id, func.count())
        .where(Asset.person_id.in_(person_ids))
        .group_by(Asset.person_id)
    ).all()
    counted = {person_id: count for person_id, count in rows}
    return {person_id: counted.get(person_id, 0) for person_id in person_ids}


def merge_view(session: Session, merge_id: int) -> MergeView | None:
    """One merge with its survivor and merged records, or None."""
    record = merge.find_merge(session, merge_id)
    if record is None:
        return None
    people = _people(session, {record.survivor_id, *record.merged_ids})
    return MergeView(
        record=record,
        survivor=people.get(record.survivor_id),
        merged=[people[pid] for pid in record.merged_ids if pid in people],
    )


def merges_of(session: Session, person_id: str | None) -> list[MergeView]:
    """The merges a person took part in (as survivor or as a merged record), newest
    first; without a person, the latest ``PAGE`` merges."""
    statement = select(PersonMerge).order_by(PersonMerge.id.desc())
    if person_id is None:
        found = list(session.scalars(statement.limit(PAGE)).all())
    else:
        person = session.get(Person, person_id)
        if person is None:
            return []
        survivors = {person.id, *([person.merged_into] if person.merged_into else [])}
        found = [
            r
            for r in session.scalars(statement.where(PersonMerge.survivor_id.in_(survivors)))
            if r.survivor_id == person.id or person.id in r.merged_ids
        ]
    people = _people(session, {pid for r in found for pid in (r.survivor_id, *r.merged_ids)})
    return [
        MergeView(
            record=r,
            survivor=people.get(r.survivor_id),
            merged=[people[pid] for pid in r.merged_ids if pid in people],
        )
        for r in found
    ]


def shown(value: Any) -> str:
    """A field's value as a page shows it ("" for none)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _people(session: Session, ids: set[str]) -> dict[str, Person]:
    if not ids:
        return {}
    return {p.id: p for p in session.scalars(select(Person).where(Person.id.in_(sorted(ids))))}
