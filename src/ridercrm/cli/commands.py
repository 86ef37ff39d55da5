"""The `ridercrm` command's own short commands (db, keys, audit, reports, match, demo);
`serve` and `deliver` are in ``cli/serving.py``, the features' groups in their
``commands.py``. They call the same services as the HTTP API. ``ridercrm.cli`` loads this
module only to run one of them."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any

import typer
from rich.console import Console

from ridercrm.audit import service as audit
from ridercrm.audit.schemas import AuditEntry
from ridercrm.config import Settings
from ridercrm.db import session_factory, session_scope
from ridercrm.ids import RecordKind, canonical_id
from ridercrm.keys import service as keys
from ridercrm.startup import open_database
from ridercrm.tables import print_json, print_table

db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
keys_app = typer.Typer(help="API keys.", no_args_is_help=True)
audit_app = typer.Typer(help="The audit trail.", no_args_is_help=True)
reports_app = typer.Typer(help="The dashboard's figures.", no_args_is_help=True)
match_app = typer.Typer(help="The matcher's model.", no_args_is_help=True)

# No Rich markup: names, ids and messages are printed as written ("[staging]" stays).
console = Console(markup=False)
errors = Console(stderr=True, markup=False)


def _sessions(settings: Settings | None = None, *, may_create: bool = False):  # type: ignore[no-untyped-def]
    """Sessions on the configured database (see ``startup.open_database``)."""
    engine = open_database(settings or Settings(), may_create=may_create)
    return session_factory(engine)


@db_app.command("upgrade")
def db_upgrade(revision: Annotated[str, typer.Argument(help="Target revision.")] = "head") -> None:
    """Bring the database schema up to date."""
    from ridercrm.migrate import current_revision

    engine = open_database(Settings(), may_create=True, revision=revision)
    console.print(f"database at revision {current_revision(engine)}")


@keys_app.command("create")
def keys_create(
    name: Annotated[str, typer.Option(help="Who or what the key is for.")],
    scope: Annotated[
        list[str],
        typer.Option(help=f"Scope to grant; repeat for several: {', '.join(keys.SCOPES)}."),
    ],
) -> None:
    """Create an API key. The key is printed once, alone on the last line."""
    try:
        with session_scope(_sessions(), write=True) as session:
            key, plaintext = keys.create_key(session, name=name, scopes=scope)
            console.print(f"created key {key.id} ({key.name}) with scopes {', '.join(key.scopes)}")
    except keys.KeyProblem as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None
    print(plaintext, flush=True)


@keys_app.command("list")
def keys_list(
    as_json: Annotated[bool, typer.Option("--json", help="JSON for programs.")] = False,
) -> None:
    """List API keys (never their secrets)."""
    with session_scope(_sessions()) as session:
        found: list[dict[str, Any]] = [
            {
                "id": key.id,
                "name": key.name,
                "prefix": key.prefix,
                "scopes": list(key.scopes),
                "created": key.created_at.strftime("%Y-%m-%d %H:%M"),
                "revoked": key.revoked_at.strftime("%Y-%m-%d %H:%M") if key.revoked_at else "",
            }
            for key in keys.list_keys(session)
        ]
    if as_json:
        print_json(console, found)
        return
    columns = ("id", "name", "prefix", "scopes", "created", "revoked")
    rows = [
        [key["id"], key["name"], key["prefix"] + "…", ",".join(key["scopes"]), key["created"],
         key["revoked"]]
        for key in found
    ]  # fmt: skip
    print_table(console, columns, rows)


@keys_app.command("revoke")
def keys_revoke(
    ident: Annotated[str, typer.Argument(help="The key's id, name or prefix.")],
) -> None:
    """Revoke an API key; requests made with it are refused from now on."""
    try:
        with session_scope(_sessions(), write=True) as session:
            key = keys.revoke_key(session, ident=ident)
            console.print(f"revoked key {key.id} ({key.name})")
    except keys.KeyProblem as exc:
        errors.print(f"error: {exc}")
        raise typer.Exit(2) from None


@reports_app.command("rebuild")
def reports_rebuild() -> None:
    """Count the dashboard's weekly course counts again from the courses and store them.

    The database keeps them in step with every write; this repairs counts changed by
    hand (or checks them: the output says how many rows differed).
    """
    from ridercrm.reports.counts import rebuild

    with session_scope(_sessions(), write=True) as session:
        done = rebuild(session)  # the deltas too: what is stored after is the count
    console.print(
        f"course_week_counts: {done.rows} rows; {done.differed} differed from the courses"
    )


@audit_app.command("show")
def audit_show(
    audit_id: Annotated[str, typer.Argument(help="Audit record id (15 or 18 characters).")],
) -> None:
    """Print one audit record as JSON."""
    canonical = canonical_id(audit_id, RecordKind.AUDIT)
    with session_scope(_sessions()) as session:
        record = audit.get_record(session, canonical) if canonical else None
        if record is None:
            errors.print(f"error: no audit record {audit_id}")
            raise typer.Exit(1)
        entry = AuditEntry.model_validate(record).model_dump(mode="json")
        print(json.dumps(entry, indent=2, ensure_ascii=False))


@audit_app.command("purge")
def audit_purge(
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            min=0,
            help="Delete records older than this many days (default RIDERCRM_AUDIT_RETENTION_DAYS).",
        ),
    ] = None,
) -> None:
    """Delete audit records older than the given number of days."""
    settings = Settings()
    if older_than is None:
        older_than = float(settings.audit_retention_days)
    if math.isnan(older_than):
        errors.print("error: --older-than must be a number of days")
        raise typer.Exit(2)
    with session_scope(_sessions(settings), write=True) as session:
        count = audit.purge_records(session, older_than_days=older_than)
    console.print(f"purged {count} audit record(s) older than {older_than:g} day(s)")


@match_app.command("train")
def match_train(
    seed: Annotated[
        int, typer.Option(help="Seed of the random pairs (same data, same model).")
    ] = 0,
) -> None:
    """Train the matching model on the stored people; every worker uses it within seconds."""
    from ridercrm.matching.training import train_store

    with session_scope(_sessions(), write=True) as session:
        model = train_store(session, seed=seed)
        console.print(
            f"trained model version {model.version} on {model.people} people ({model.trained_at})"
        )


def demo_command(
    force: Annotated[
        bool,
        typer.Option("--force", help="Load even when the database has people (another copy)."),
    ] = False,
) -> None:
    """Load the demo data: the products of every course location and a few hundred people."""
    from ridercrm.demo import load_demo

    sessions = _sessions(may_create=True)
    try:
        from ridercrm.rosters.demo import load_demo_sessions

        shown = Console(highlight=False, soft_wrap=True)
        shown.print(load_demo(sessions, only_if_empty=not force), markup=False)
        more = load_demo_sessions(sessions)
        if more:
            shown.print(more, markup=False)
    finally:
        engine = sessions.kw["bind"]
        engine.dispose()
