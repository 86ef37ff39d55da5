"""The `ridercrm import` and `ridercrm export` commands."""

from __future__ import annotations

import enum
import os
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import session_factory
from ridercrm.matching.service import thresholds_of
from ridercrm.startup import open_database, operator
from ridercrm.transfer.columns import CONTACTS, LEADS, PRODUCTS, TARGETS, Target
from ridercrm.transfer.exporter import export_csv
from ridercrm.transfer.importer import (
    BadRow,
    ImportFailed,
    MatchedRow,
    OnMatch,
    count_lines,
    import_csv,
)

import_app = typer.Typer(
    help="Import contacts, leads or products from CSV.",
    epilog="Columns: our field names or a Salesforce export's, in any case; any other column"
    " refuses the file unless --ignore-columns names it. Safe to re-run: "
    "a row that matches a stored person is skipped (--on-match), and a file already imported "
    "is refused (--force). Exit code 0: every row imported or matched; 1: some rows were bad "
    "(the good ones are imported); 2: the file could not be imported at all (nothing is).",
    no_args_is_help=True,
)
# Reports are plain text: no markup, highlighting or wrapping of the messages.
out = Console(highlight=False, soft_wrap=True)
errors = Console(stderr=True, highlight=False, soft_wrap=True)

FileArgument = Annotated[Path, typer.Argument(help="The CSV file (UTF-8; header row first).")]
DryRun = Annotated[
    bool, typer.Option("--dry-run", help="Check every row and report, but write nothing.")
]
Force = Annotated[
    bool,
    typer.Option(
        "--force", help="Import even a file with the same content as one imported before."
    ),
]
IgnoreColumns = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore-columns",
        help="Columns to leave out, comma-separated or repeated (any case). Any other column"
        " that is not a field refuses the file, so a misspelled one never loses its data.",
    ),
]
OnMatchOption = Annotated[
    OnMatch,
    typer.Option(
        "--on-match",
        help="A row that matches a stored person (by the matcher): skip it and report it,"
        " update that person with the row's non-empty values, or add it as another person.",
        case_sensitive=False,
    ),
]


class Kind(enum.StrEnum):
    contacts = "contacts"
    leads = "leads"
    products = "products"


class Form(enum.StrEnum):
    ours = "ours"
    salesforce = "salesforce"


@contextmanager
def _database(
    *, may_create: bool, settings: Settings | None = None
) -> Iterator[sessionmaker[Session]]:
    """Sessions on the configured database, brought up to date, closed afterwards."""
    engine = open_database(settings or Settings(), may_create=may_create)
    try:
        yield session_factory(engine)
    finally:
        engine.dispose()


def _run_import(
    target: Target,
    path: Path,
    dry_run: bool,
    *,
    force: bool,
    ignore_columns: list[str] | None,
    on_match: OnMatch = OnMatch.skip,
) -> None:
    """Import one file with a progress bar, print bad rows and a summary, exit with its code."""
    try:
        # Only a regular file: a device or a pipe could be read without end, or only once.
        total = count_lines(path) if path.is_file() else None
    except OSError:
        total = None  # the importer says what is wrong with the file

    def ignored(names: Sequence[str]) -> None:
        if names:
            out.print(f"ignored columns: {', '.join(names)}", markup=False)

    def bad_row(row: BadRow | MatchedRow) -> None:
        progress.console.print(str(row), markup=False)

    def resuming(line: int) -> None:
        out.print(
            f"resuming an unfinished import of this file at line {line}"
            " (the lines before it were imported)",
            markup=False,
        )

    def advance(lines: int) -> None:
        progress.update(task, completed=lines, total=max(lines, total or 0))

    columns = (
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("lines"),
        TimeElapsedColumn(),
    )
    verb = "checking" if dry_run else "importing"
    settings = Settings()
    try:
        with (
            _database(may_create=True, settings=settings) as sessions,
            Progress(
                *columns, console=out, transient=True, disable=not out.is_terminal
            ) as progress,
        ):
            task = progress.add_task(f"{verb} {target.name}", total=total)
            result = import_csv(
                sessions,
                target,
                path,
                dry_run=dry_run,
                on_match=on_match,
                force=force,
                ignore_columns=[
                    name for given in ignore_columns or () for name in given.split(",") if name
                ],
                on_columns=ignored,
                on_bad_row=bad_row,
                on_matched=bad_row,
                on_progress=advance,
                on_resume=resuming,
                thresholds=thresholds_of(settings),
                operator=operator(),  # --as NAME or the OS user, as its audit record
            )
    except ImportFailed as exc:
        errors.print(f"error: {path}: {exc}", markup=False)
        raise typer.Exit(2) from None
    out.print(result.summary(), markup=False)
    raise typer.Exit(result.exit_code)


@import_app.command("contacts")
def import_contacts(
    file: FileArgument,
    dry_run: DryRun = False,
    on_match: OnMatchOption = OnMatch.skip,
    force: Force = False,
    ignore_columns: IgnoreColumns = None,
) -> None:
    """Import contacts from a CSV file; rows matching a stored contact are skipped by default."""
    _run_import(
        CONTACTS, file, dry_run, force=force, ignore_columns=ignore_columns, on_match=on_match
    )


@import_app.command("leads")
def import_leads(
    file: FileArgument,
    dry_run: DryRun = False,
    on_match: OnMatchOption = OnMatch.skip,
    force: Force = False,
    ignore_columns: IgnoreColumns = None,
) -> None:
    """Import leads from a CSV file (after the contacts that converted leads point to);
    rows matching a stored unconverted lead are skipped by default."""
    _run_import(LEADS, file, dry_run, force=force, ignore_columns=ignore_columns, on_match=on_match)


@import_app.command("products")
def import_products(
    file: FileArgument,
    dry_run: DryRun = False,
    force: Force = False,
    ignore_columns: IgnoreColumns = None,
) -> None:
    """Import products from a CSV file."""
    _run_import(PRODUCTS, file, dry_run, force=force, ignore_columns=ignore_columns)


def export_command(
    kind: Annotated[Kind, typer.Argument(help="What to export.")],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="File to write (default: standard output)."),
    ] = None,
    form: Annotated[
        Form,
        typer.Option("--format", help="Column names: ours, or a Salesforce export's."),
    ] = Form.ours,
) -> None:
    """Write contacts, leads or products as CSV, id first; `ridercrm import` reads it back."""
    target = TARGETS[kind.value]
    with _database(may_create=False) as sessions:
        if output is None:
            count = export_csv(sessions, target, sys.stdout, form=form.value)
            sys.stdout.flush()
        else:
            try:
                count = _export_to_file(sessions, target, output, form.value)
            except OSError as exc:
                errors.print(f"error: {output}: {exc.strerror or exc}", markup=False)
                raise typer.Exit(2) from None
    where = f" to {output}" if output is not None else ""
    errors.print(f"exported {target.count(count)}{where}", markup=False)


def _export_to_file(
    sessions: sessionmaker[Session], target: Target, output: Path, form: str
) -> int:
    """Write the export next to ``output`` and move it into place only when complete.

    Through a symbolic link its target is written (the link stays); a named pipe or a
    device (``/dev/stdout``) is written as a stream, never replaced by a file."""
    final = output.resolve()
    if final.exists() and not final.is_file() and not final.is_dir():
        with final.open("w", encoding="utf-8", newline="") as stream:
            return export_csv(sessions, target, stream, form=form)
    handle = tempfile.NamedTemporaryFile(  # noqa: SIM115 - closed before the rename below
        "w", encoding="utf-8", newline="", dir=final.parent, suffix=".part", delete=False
    )
    try:
        with handle:
            count = export_csv(sessions, target, handle, form=form)
        os.replace(handle.name, final)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return count
