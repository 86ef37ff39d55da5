"""`ridercrm duplicates scan|list|show|merge|unmerge|dismiss`.

Each action that writes is recorded in the audit trail like an admin API request
(method CLI, the command as its path); ``--dry-run`` shows what it would do and writes
nothing, not even the audit record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import partial
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import MAX_INTEGER_ID, session_factory, session_scope
from ridercrm.duplicates import merge, recheck, scan, service
from ridercrm.duplicates.scoring import SameCheck
from ridercrm.errors import NOT_FOUND
from ridercrm.ids import RecordKind, new_id
from ridercrm.matching.service import thresholds_of
from ridercrm.people.models import PERSON_FIELDS
from ridercrm.sessions import seats, timer
from ridercrm.startup import open_database
from ridercrm.tables import print_json, print_table

duplicates_app = typer.Typer(help="Duplicate people: scan, review, merge.", no_args_is_help=True)
console = Console(markup=False)
errors = Console(stderr=True, markup=False, soft_wrap=True)


def _sessions(settings: Settings) -> sessionmaker[Session]:
    """Sessions on the configured database; a missing one is refused, never created."""
    engine = open_database(settings, may_create=False)
    sessions = session_factory(engine)
    seats.use_policy_by_default(sessions, timer.policy_of(settings))  # merges free seats
    return sessions


def _print(value: Any) -> None:
    console.print(json.dumps(value, indent=2, default=str))


def _audited(
    settings: Settings,
    *,
    operation: str,
    command: str,
    arguments: dict[str, Any],
    action: Callable[[Session, str], Any],
    dry_run: bool,
) -> Any:
    """Run ``action(session, audit_id)`` in one transaction with its audit record, as the
    admin API does (the same audit id in the merge record and events, redaction as
    RIDERCRM_AUDIT_REDACT says); exit 1 if refused."""
    sessions = _sessions(settings)
    started = time.perf_counter()
    audit_id = new_id(RecordKind.AUDIT)
    record = partial(
        service.audit_cli, operation=operation, command=command, arguments=arguments,
        started=started, audit_id=audit_id, redact=settings.audit_redact,
    )  # fmt: skip
    try:
        # A dry run too is a write transaction, rolled back: an undo's dry run makes the
        # undo to check it, and a deferred transaction that then writes fails at once
        # with "database is locked" on a busy SQLite database instead of taking its turn.
        with session_scope(sessions, write=True) as session:
            result = action(session, audit_id)
            if dry_run:
                session.rollback()
            else:
                result = {**result, "audit_id": audit_id}
                record(session, status=200, result=result)
    except merge.MergeError as exc:
        if not dry_run:
            with session_scope(sessions, write=True) as session:
                record(session, status=exc.status, result=exc.reason)
        errors.print(exc.reason)
        raise typer.Exit(1) from None
    _print(result)
    return result


@duplicates_app.command("scan")
def scan_command(
    full: Annotated[
        bool, typer.Option(help="Check every person, not only those written since the last scan.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count the people a scan would check; write nothing.")
    ] = False,
) -> None:
    """Find likely duplicates among the stored people and queue them for review (resumable)."""
    settings = Settings()
    sessions = _sessions(settings)
    thresholds = thresholds_of(settings)
    if dry_run:
        with session_scope(sessions) as session:
            _print({"dry_run": True, "would_check": scan.pending(session, full=full)})
        return
    started = time.perf_counter()
    with Progress(
        "checking people", BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
        console=errors, transient=True,
    ) as bar:  # fmt: skip
        task = bar.add_task("scan", total=None)

        def progress(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        result = scan.scan(
            sessions,
            thresholds=thresholds,
            review_threshold=settings.duplicates_review_threshold,
            full=full,
            progress=progress,
        )
    summary: dict[str, Any] = {
        "scan_id": result.scan_id,
        "resumed": result.resumed,
        "checked": result.checked,
        "open_pairs": result.pairs,
        "clusters": result.clusters,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if settings.duplicates_auto_merge_threshold is not None:
        summary["auto_merged"] = service.auto_merge(
            sessions, threshold=settings.duplicates_auto_merge_threshold
        )
    with session_scope(sessions, write=True) as session:
        summary["audit_id"] = service.audit_cli(
            session, operation="cli.duplicates_scan", command="ridercrm duplicates scan",
            arguments={"full": full}, status=200, result=summary, started=started,
            redact=settings.audit_redact,
        )  # fmt: skip
    _print(summary)


@duplicates_app.command("recheck")
def recheck_command(
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Count the people waiting; write nothing.")
    ] = False,
) -> None:
    """Re-check now the people written since the first scan (`serve` does it continually)."""
    settings = Settings()
    sessions = _sessions(settings)
    if dry_run:
        with session_scope(sessions) as session:
            _print({"dry_run": True, "would_check": recheck.pending(session)})
        return
    checked = recheck.recheck(
        sessions,
        thresholds=thresholds_of(settings),
        review_threshold=settings.duplicates_review_threshold,
    )
    _print({"rechecked": checked})


JsonOption = Annotated[bool, typer.Option("--json", help="JSON for programs.")]
# The largest id the store holds (an INTEGER column: 32 bits on PostgreSQL): a larger
# number is refused by the command line, with its range, not by the database driver.
ID_MAX = MAX_INTEGER_ID
ClusterId = Annotated[int, typer.Argument(min=1, max=ID_MAX)]


@duplicates_app.command("list")
def list_command(
    limit: Annotated[int, typer.Option(min=1, max=500)] = 50,
    before: Annotated[
        int | None, typer.Option(help="The next_before of a page.", min=1, max=ID_MAX)
    ] = None,
    status: Annotated[str, typer.Option(help="open, skipped, merged or dismissed.")] = "open",
    as_json: JsonOption = False,
) -> None:
    """List clusters, best score first: a table of who is in each (--json for programs)."""
    with session_scope(_sessions(Settings())) as session:
        after = service.find_cluster(session, before) if before is not None else None
        page = service.list_clusters(session, limit=limit, before=after, status=status)
        found: dict[str, Any] = {
            "clusters": [service.summary(c) for c in page.clusters],
            "next_before": page.next_before,
        }
        names = service.names_of(session, [pid for c in page.clusters for pid in c.people])
    if as_json:
        print_json(console, found)
        return
    rows = [
        [
            cluster["id"],
            f"{cluster['score']:.1f}",
            cluster["status"],
            "; ".join(f"{names.get(pid, '?')} {pid}" for pid in cluster["people"]),
        ]
        for cluster in found["clusters"]
    ]
    print_table(console, ("cluster", "score", "status", "people"), rows)
    if not rows:
        console.out(f"no {status} clusters", highlight=False)
    if page.next_before is not None:
        console.out(f"more: --before {page.next_before}", highlight=False)


@duplicates_app.command("show")
def show_command(cluster_id: ClusterId, as_json: JsonOption = False) -> None:
    """Show a cluster's records side by side with the matcher's explanation."""
    with session_scope(_sessions(Settings())) as session:
        cluster = service.find_cluster(session, cluster_id)
        if cluster is None:
            errors.print(f"no cluster with id {cluster_id}")
            raise typer.Exit(1)
        found = service.detail(session, cluster)
    if as_json:
        print_json(console, found)
        return
    records = found["records"]
    differing = set(found["differing"])
    console.out(
        f"cluster {found['id']}: {found['status']}, score {found['score']:.1f}"
        + (f", merge {found['merge_id']}" if found["merge_id"] else ""),
        highlight=False,
    )
    rows = [["kind", "", *(r["kind"] for r in records)]]
    rows += [
        [name, "differs" if name in differing else "", *(_shown(r[name]) for r in records)]
        for name in PERSON_FIELDS
        if any(r[name] not in (None, "") for r in records)
    ]
    print_table(console, ("field", "", *(r["id"] for r in records)), rows)
    for pair in found["pairs"]:
        first, second = pair["people"]
        weights = pair.get("weights") or {}
        levels = pair.get("levels") or {}
        console.out(
            f"\n{first} and {second}: total {pair['score']:.1f} bits ({pair.get('rule', '')})",
            highlight=False,
        )
        print_table(
            console,
            ("field", "level", "weight"),
            [[name, levels.get(name, ""), f"{weight:+.1f}"] for name, weight in weights.items()],
        )


def _shown(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


@duplicates_app.command("merge")
def merge_command(
    people: Annotated[
        list[str] | None, typer.Argument(help="Person ids to merge (2 to 20).")
    ] = None,
    cluster: Annotated[
        int | None, typer.Option(help="Merge this cluster's people.", min=1, max=ID_MAX)
    ] = None,
    survivor: Annotated[str | None, typer.Option(help="The record that remains.")] = None,
    field: Annotated[
        list[str] | None, typer.Option(help="name=person id: take the field from that member.")
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only show the preview.")] = False,
    force: Annotated[
        bool,
        typer.Option("--force", help="Merge even people the matcher scores as different."),
    ] = False,
) -> None:
    """Merge people (or a cluster) into one survivor; people the matcher scores as
    different are refused unless --force."""
    if people and cluster is not None:
        raise typer.BadParameter("give person ids or --cluster, not both", param_hint="people")
    fields = _field_choices(field or [])
    settings = Settings()
    same = None if force else SameCheck.of(settings)
    arguments = {
        "people": people, "cluster": cluster, "survivor": survivor, "fields": fields, "force": force,
    }  # fmt: skip

    def action(session: Session, audit_id: str) -> Any:
        if cluster is not None:
            found = service.find_cluster(session, cluster)
            if found is None:
                raise merge.MergeError(NOT_FOUND, f"no cluster with id {cluster}")
            return service.decide(
                session, found, decision="merge", survivor=survivor, fields=fields,
                dry_run=dry_run, audit_id=audit_id, same=same,
            )  # fmt: skip
        plan, record = merge.merge_people(
            session, people_ids=people or [], survivor_id=survivor, fields=fields,
            dry_run=dry_run, audit_id=audit_id, same=same,
        )  # fmt: skip
        return {"merge_id": record.id if record else None, "dry_run": dry_run, **plan.preview()}

    _audited(
        settings, operation="cli.duplicates_merge",
        command="ridercrm duplicates merge", arguments=arguments, action=action, dry_run=dry_run,
    )  # fmt: skip


def _field_choices(items: list[str]) -> dict[str, str]:
    """``--field name=person id`` options as a mapping; one that is not of that form, or
    names a field twice, is a usage error (never dropped, nor the last one kept)."""
    fields: dict[str, str] = {}
    for item in items:
        name, equals, person = item.partition("=")
        if not equals:
            raise typer.BadParameter(
                f"{item[:80]}: give it as name=person id", param_hint="'--field'"
            )
        if name in fields:
            raise typer.BadParameter(f"{name[:80]} is given twice", param_hint="'--field'")
        fields[name] = person
    return fields


@duplicates_app.command("unmerge")
def unmerge_command(
    merge_id: Annotated[int, typer.Argument(help="The merge's id (merge_id).", min=1, max=ID_MAX)],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Check that it can be undone; change nothing.")
    ] = False,
) -> None:
    """Undo a merge: each member gets its own values and courses back."""

    def action(session: Session, audit_id: str) -> Any:
        record = merge.undo_merge(session, merge_id, audit_id=audit_id)
        return {
            "merge_id": record.id,
            "survivor": record.survivor_id,
            "restored": list(record.merged_ids),
            "moved_back": {"courses": sorted(record.moved_assets)},
            "dry_run": dry_run,
        }

    _audited(
        Settings(), operation="cli.duplicates_unmerge",
        command="ridercrm duplicates unmerge", arguments={"merge_id": merge_id}, action=action,
        dry_run=dry_run,
    )  # fmt: skip


@duplicates_app.command("dismiss")
def dismiss_command(
    cluster_id: ClusterId,
    skip: Annotated[
        bool, typer.Option(help="Only skip it for now, instead of 'not duplicates'.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Change nothing.")] = False,
) -> None:
    """Mark a cluster as not duplicates (never proposed again), or skip it."""

    def action(session: Session, audit_id: str) -> Any:
        found = service.find_cluster(session, cluster_id)
        if found is None:
            raise merge.MergeError(NOT_FOUND, f"no cluster with id {cluster_id}")
        decision = "skip" if skip else "dismiss"
        return service.decide(session, found, decision=decision, dry_run=dry_run, audit_id=audit_id)

    _audited(
        Settings(), operation="cli.duplicates_dismiss",
        command="ridercrm duplicates dismiss", arguments={"cluster": cluster_id, "skip": skip},
        action=action, dry_run=dry_run,
    )  # fmt: skip


def scan_demo(settings: Settings, sessions: sessionmaker[Session]) -> int:
    """The first scan of demo data just loaded (`serve --demo`), audited as the scan
    command is, so the console's review queue shows the demo's duplicates; return the
    number of clusters to review."""
    started = time.perf_counter()
    result = scan.scan(
        sessions,
        thresholds=thresholds_of(settings),
        review_threshold=settings.duplicates_review_threshold,
    )
    summary = {"scan_id": result.scan_id, "checked": result.checked, "clusters": result.clusters}
    with session_scope(sessions, write=True) as session:
        service.audit_cli(
            session, operation="cli.duplicates_scan", command="ridercrm serve --demo",
            arguments={"full": False}, status=200, result=summary, started=started,
            redact=settings.audit_redact,
        )  # fmt: skip
    return result.clusters
