"""Merges of duplicate people, kept so that each can be undone (docs/decisions.md, "Duplicates (issue 15)")."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Float, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, JSONType, UTCDateTime, utcnow

OPEN = "open"
DISMISSED = "dismissed"
SKIPPED = "skipped"
MERGED = "merged"


class PersonMerge(Base):
    """One merge: who survived, what the members held before and which rows moved."""

    __tablename__ = "person_merges"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    survivor_id: Mapped[str] = mapped_column(String(18), index=True)
    # The other members, now merged_into the survivor.
    merged_ids: Mapped[Any] = mapped_column(JSONType)
    # {person id: {"updated_at": ..., field: value, ...}}: every member's updated_at,
    # and the survivor's fields, as they were before the merge.
    before: Mapped[Any] = mapped_column(JSONType)
    # The survivor's fields just after the merge; an undo is refused once they changed.
    after: Mapped[Any] = mapped_column(JSONType)
    # {asset id: the person it belonged to}: the courses re-pointed to the survivor.
    moved_assets: Mapped[Any] = mapped_column(JSONType)
    # {message id: the person it belonged to}: the messages re-pointed to the survivor
    # (null for merges made before messages moved with them).
    moved_messages: Mapped[Any] = mapped_column(JSONType, nullable=True)
    audit_id: Mapped[str | None] = mapped_column(String(18))
    undone_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)


class DuplicatePair(Base):
    """Two stored people the scan found alike (``person_id`` < ``other_id``)."""

    __tablename__ = "duplicate_pairs"

    person_id: Mapped[str] = mapped_column(String(18), primary_key=True)
    other_id: Mapped[str] = mapped_column(String(18), primary_key=True)
    score: Mapped[float] = mapped_column(Float)
    # {"levels": {field: level}, "weights": {field: bits}}: why the pair was proposed.
    explanation: Mapped[Any] = mapped_column(JSONType)
    # open: proposed; dismissed: "not duplicates", remembered and never proposed again.
    status: Mapped[str] = mapped_column(String(10), default=OPEN)

    # A re-check finds the pairs of a person by either id.
    __table_args__ = (Index("ix_duplicate_pairs_other_id", other_id),)


class DuplicateCluster(Base):
    """People linked by open pairs: one review item, scored by its weakest pair."""

    __tablename__ = "duplicate_clusters"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    people: Mapped[Any] = mapped_column(JSONType)
    score: Mapped[float] = mapped_column(Float)
    # open, skipped, merged or dismissed.
    status: Mapped[str] = mapped_column(String(10), default=OPEN)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    decided_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    merge_id: Mapped[int | None] = mapped_column(Integer)

    __table_args__ = (Index("ix_duplicate_clusters_status_score", status, score),)


class DuplicateScan(Base):
    """One run of `ridercrm duplicates scan`; an unfinished one resumes after ``cursor``."""

    __tablename__ = "duplicate_scans"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    started_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    # People written since this time are checked (None: everyone, a first or full scan).
    since: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    cursor: Mapped[str | None] = mapped_column(String(18))
    checked: Mapped[int] = mapped_column(Integer, default=0)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
