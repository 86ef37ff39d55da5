"""Where an imported person came from: the import run and the file's line.

The runs are the import feature's (``ridercrm.transfer.models.ImportRun``, above this
one); only the columns an origin shows are named here, through a lightweight table.
"""

from __future__ import annotations

from sqlalchemy import Integer, String, column, select, table
from sqlalchemy.orm import Session

from ridercrm.db import UTCDateTime
from ridercrm.people.models import Person
from ridercrm.people.schemas import ImportOrigin

IMPORT_RUNS = table(
    "import_runs",
    column("id", Integer),
    column("target", String),
    column("file_name", String),
    column("operator", String),
    column("created_at", UTCDateTime),
)


def import_origin(session: Session, person: Person) -> ImportOrigin | None:
    """The import ``person`` came from, or None (created another way)."""
    if person.import_run_id is None:
        return None
    run = session.execute(
        select(IMPORT_RUNS).where(IMPORT_RUNS.c.id == person.import_run_id)
    ).first()
    if run is None:
        return None
    return ImportOrigin(
        run_id=run.id,
        target=run.target,
        file_name=run.file_name,
        operator=run.operator,
        imported_at=run.created_at,
        line=person.import_line,
    )
