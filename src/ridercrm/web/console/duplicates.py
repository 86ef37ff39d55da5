"""Console pages: the duplicates review queue, a cluster side by side, merge with a
preview, "not duplicates", skip, and undoing a merge (docs/console.md, "Duplicates").

Reading is for every role (it is reading people); deciding, merging and undoing change
people and are for staff and admins (docs/decisions.md, "Staff console: duplicates (issue 15)").
Every decision goes through the same service as the admin API (``duplicates.service``,
``duplicates.merge``) and is audited with the staff user's name; a preview is a dry
run in a read, like a page view, and is not audited.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.duplicates import merge, review, service
from ridercrm.duplicates.scoring import SameCheck
from ridercrm.ids import canonical_id
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit

router = ConsoleRouter(prefix="/duplicates")

FIELD_PREFIX = "field."
SEEN_PREFIX = "seen."  # the confirming form: each member's updated_at as previewed
SEEN_COURSES = "seen_courses"  # ... and the courses it listed as moving, space-separated
LABELS = {
    "first_name": "First name",
    "last_name": "Last name",
    "date_of_birth": "Date of birth",
    "email": "E-mail",
    "postcode": "Postcode",
    "mobile_phone": "Mobile phone",
    "home_phone": "Home phone",
    "drivers_license": "Licence number",
    "license_type": "Licence type",
    "street": "Street",
    "city": "City",
    "state": "State",
    "country": "Country",
    "lead_source": "Lead source",
    "opt_in": "Opted in",
}
STATUS_LABELS = {
    "open": "To review",
    "skipped": "Skipped",
    "merged": "Merged",
    "dismissed": "Not duplicates",
}


def _cluster_id(raw: str) -> int:
    found = frame.database_id(raw)
    if found is None:
        raise frame.ConsoleRefusal(404, f"There is no duplicates cluster {raw[:40]}.")
    return found


# --- the queue --------------------------------------------------------------------


async def _queue_page(visit: Visit, *, done: Done | None = None) -> Response:
    problems: list[str] = []
    raw_status = visit.request.query_params.get("status", "open")
    if raw_status not in review.STATUSES:
        problems.append(f"status: one of {', '.join(review.STATUSES)}")
        raw_status = "open"
    raw_before = visit.request.query_params.get("before", "") if done is None else ""
    before = frame.database_id(raw_before)
    if raw_before and before is None:
        problems.append(f"before: {raw_before[:40]} is not a cluster id")

    def work(session: Session) -> review.QueuePage | str:
        try:
            return review.queue(session, status=raw_status, before=before)
        except ValueError as exc:
            return str(exc)

    page = await visit.read(work)
    if isinstance(page, str):
        problems.append(page)
        page = review.QueuePage([], None)
    return visit.render(
        "duplicates.html",
        {
            "page": page,
            "status": raw_status,
            "statuses": STATUS_LABELS,
            "problems": problems,
            "done": done,
        },
        status=400 if problems else (done.status if done else 200),
    )


@router.page("", role="viewer", name="duplicates")
async def queue(visit: Visit) -> Response:
    """The review queue: clusters of likely duplicates, best score first, 50 a page."""
    return await _queue_page(visit)


# --- merges (before /{cluster_id}: "merges" is not a cluster) ----------------------


async def _merge_page(visit: Visit, merge_id: int, *, done: Done | None = None) -> Response:
    view = await visit.read(lambda session: review.merge_view(session, merge_id))
    if view is None:
        raise frame.ConsoleRefusal(404, f"There is no merge {merge_id}.")
    return visit.render(
        "duplicates_merge.html",
        {"view": view, "done": done},
        status=done.status if done else 200,
    )


@router.page("/merges", role="viewer", name="duplicates_merges")
async def merges(visit: Visit) -> Response:
    """The merges a person took part in (``?person=ID``), or the latest merges."""
    raw = visit.query("person", 40).strip()
    person = canonical_id(raw) if raw else None
    if raw and person is None:
        raise frame.ConsoleRefusal(400, f"person: {raw} is not a record id.")
    views = await visit.read(lambda session: review.merges_of(session, person))
    return visit.render("duplicates_merges.html", {"views": views, "person": person})


@router.page("/merges/{merge_id}", role="viewer", name="duplicates_merge")
async def merge_page(visit: Visit, merge_id: str) -> Response:
    """One merge: the survivor, the merged records, the moved courses; undo for staff."""
    found = frame.database_id(merge_id)
    if found is None:
        raise frame.ConsoleRefusal(404, f"There is no merge {merge_id[:40]}.")
    return await _merge_page(visit, found)


@router.form("/merges/{merge_id}/undo", role="staff", audit="console.undo_merge")
async def undo(posted: Posted, merge_id: str) -> Response:
    """Undo a merge through the same service as the admin API's undo."""
    found = frame.database_id(merge_id)
    if found is None:
        raise frame.ConsoleRefusal(404, f"There is no merge {merge_id[:40]}.")

    def work(session: Session) -> dict[str, Any]:
        record = merge.undo_merge(session, found, audit_id=frame.change_audit_id())
        return {
            "merge_id": record.id,
            "survivor": record.survivor_id,
            "restored": list(record.merged_ids),
            "moved_back": {"courses": sorted(record.moved_assets)},
        }

    done = await posted.change(asked={"merge_id": found}, work=work)
    return await _merge_page(posted, found, done=done)


# --- one cluster ------------------------------------------------------------------


def _choices(form: dict[str, str]) -> tuple[str | None, dict[str, str]]:
    """The survivor and the per-field members a merge form chose."""
    survivor = form.get("survivor", "").strip()[:40] or None
    fields = {
        name.removeprefix(FIELD_PREFIX): value.strip()[:40]
        for name, value in form.items()
        if name.startswith(FIELD_PREFIX) and value.strip()
    }
    return survivor, fields


async def _cluster_page(
    visit: Visit,
    cluster_id: int,
    *,
    done: Done | None = None,
    preview: dict[str, Any] | None = None,
    preview_error: str | None = None,
    chosen: tuple[str | None, dict[str, str]] | None = None,
    status: int | None = None,
) -> Response:
    view = await visit.read(lambda session: review.cluster_view(session, cluster_id))
    if view is None:
        raise frame.ConsoleRefusal(404, f"There is no duplicates cluster {cluster_id}.")
    default = view.plan or {}
    survivor, fields = chosen or (None, {})
    # What the form shows checked: the choice sent, else the default merge's.
    checked_survivor = survivor or default.get("survivor")
    checked = {**default.get("sources", {}), **fields}
    names = {p.id: f"{p.first_name or ''} {p.last_name}".strip() for p in view.people}
    return visit.render(
        "duplicates_cluster.html",
        {
            "view": view,
            "labels": LABELS,
            "statuses": STATUS_LABELS,
            "names": names,
            "kinds": {p.id: p.kind for p in view.people},
            "checked_survivor": checked_survivor,
            "checked": checked,
            "preview": preview,
            "preview_error": preview_error,
            "chosen_survivor": survivor,
            "chosen_fields": fields,
            "shown": review.shown,
            "done": done,
        },
        status=status or (done.status if done else 200),
    )


@router.page("/{cluster_id}", role="viewer", name="duplicates_cluster")
async def cluster_page(visit: Visit, cluster_id: str) -> Response:
    """A cluster side by side: differing fields marked, the explanation, courses per person."""
    return await _cluster_page(visit, _cluster_id(cluster_id))


# A preview is a read (the merge's dry run) and writes no audit record: a POST only so
# the form's choices need not go in the address; the operation names it in the logs.
@router.form("/{cluster_id}/preview", role="staff", audit="console.preview_merge")
async def preview(posted: Posted, cluster_id: str) -> Response:
    """A merge's dry run with the chosen survivor and fields: nothing is written."""
    found = _cluster_id(cluster_id)
    survivor, fields = _choices(posted.form)
    # What *Merge* would check unforced: the preview warns of what it would refuse.
    same = SameCheck.of(frame.services_of(posted.request).settings)

    def work(session: Session) -> dict[str, Any] | str:
        try:
            return review.preview(session, found, survivor=survivor, fields=fields, same=same)
        except merge.MergeError as exc:
            return exc.reason

    planned = await posted.read(work)
    if isinstance(planned, str):
        return await _cluster_page(
            posted, found, preview_error=planned, chosen=(survivor, fields), status=400
        )
    return await _cluster_page(posted, found, preview=planned, chosen=(survivor, fields))


async def _decide(
    posted: Posted,
    cluster_id: str,
    decision: str,
    *,
    chosen: tuple[str | None, dict[str, str]] = (None, {}),
) -> Done:
    found = _cluster_id(cluster_id)
    survivor, fields = chosen
    forced = posted.form.get("force", "") == "yes"
    seen = {
        name.removeprefix(SEEN_PREFIX)[:40]: value[:40]
        for name, value in posted.form.items()
        if name.startswith(SEEN_PREFIX)
    }
    # A form from a preview (it has seen.*) without the courses it listed listed none.
    courses = [c[:40] for c in posted.form.get(SEEN_COURSES, "").split()] if seen else []
    context = frame.services_of(posted.request)
    same = None if forced else SameCheck.of(context.settings)

    def work(session: Session) -> dict[str, Any]:
        cluster = service.find_cluster(session, found)
        if cluster is None:
            raise frame.ConsoleProblem(f"no cluster with id {found}")
        result = service.decide(
            session,
            cluster,
            decision=decision,
            survivor=survivor,
            fields=fields,
            audit_id=frame.change_audit_id(),
            same=same if decision == "merge" else None,
        )
        if not seen:
            return result
        stale = []
        if changed := review.changed_since(session, result["merge_id"], seen):
            stale.append(f"{', '.join(changed)} changed since the preview")
        if moved := review.courses_unseen(session, result["merge_id"], courses):
            stale.append(f"the courses that move changed since the preview: {', '.join(moved)}")
        if stale:  # raised: the merge rolls back
            raise frame.ConsoleProblem(
                f"{'; '.join(stale)}; nothing was changed (preview the merge again to see"
                " the values it would replace and the courses it would move)"
            )
        return result

    asked: dict[str, Any] = {"cluster": found, "decision": decision}
    if decision == "merge":
        asked |= {"survivor": survivor, "fields": fields, "force": forced, "seen": seen}
        asked |= {"seen_courses": courses} if seen else {}
    return await posted.change(asked=asked, work=work)


@router.form("/{cluster_id}/merge", role="staff", audit="console.merge_duplicates")
async def merge_cluster(posted: Posted, cluster_id: str) -> Response:
    """Merge the cluster with the previewed survivor and fields (one transaction)."""
    chosen = _choices(posted.form)
    done = await _decide(posted, cluster_id, "merge", chosen=chosen)
    if done.ok:
        return await _merge_page(posted, int(done.body["merge_id"]), done=done)
    return await _cluster_page(posted, _cluster_id(cluster_id), done=done, chosen=chosen)


@router.form("/{cluster_id}/dismiss", role="staff", audit="console.dismiss_duplicates")
async def dismiss(posted: Posted, cluster_id: str) -> Response:
    """Not duplicates: remembered, never proposed again; back to the queue."""
    return await _decide_back_to_queue(posted, cluster_id, "dismiss")


@router.form("/{cluster_id}/skip", role="staff", audit="console.skip_duplicates")
async def skip(posted: Posted, cluster_id: str) -> Response:
    """Skip for now (listed under Skipped, decidable later); back to the queue."""
    return await _decide_back_to_queue(posted, cluster_id, "skip")


async def _decide_back_to_queue(posted: Posted, cluster_id: str, decision: str) -> Response:
    """Decide; the queue when done, the cluster's page with the refusal when not."""
    done = await _decide(posted, cluster_id, decision)
    if done.ok:
        return await _queue_page(posted, done=done)
    return await _cluster_page(posted, _cluster_id(cluster_id), done=done)
