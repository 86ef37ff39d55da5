"""Merges of duplicate people, kept so that each can be undone (DESIGN §14)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, JSONType, UTCDateTime, utcnow


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
    audit_id: Mapped[str | None] = mapped_column(String(18))
    undone_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
