"""Import runs: which file went into which target, when and by whom, so an identical file
is not imported twice, an imported person's page shows where it came from, and an
unfinished import resumes."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, UTCDateTime, utcnow


class ImportRun(Base):
    __tablename__ = "import_runs"
    __table_args__ = (Index("ix_import_runs_target_sha256", "target", "sha256"),)

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    target: Mapped[str] = mapped_column(String(20))  # contacts, leads or products
    sha256: Mapped[str] = mapped_column(String(64))  # of the file's bytes
    file_name: Mapped[str] = mapped_column(String(500))  # as given, for the operator
    # Who ran it (`ridercrm --as NAME` or the OS user); empty for runs before 2026-11-27.
    operator: Mapped[str | None] = mapped_column(String(80))
    imported: Mapped[int] = mapped_column(Integer)
    updated: Mapped[int] = mapped_column(Integer)
    skipped: Mapped[int] = mapped_column(Integer)
    bad_rows: Mapped[int] = mapped_column(Integer)
    # While the import is unfinished (it commits batch by batch): the first line of the
    # file not imported yet, where a re-run of the same file resumes; NULL once finished.
    next_line: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
