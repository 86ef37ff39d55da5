"""The blocking keys of each person, kept in step on every write path."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import BigInteger, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, UTCDateTime


class PersonKey(Base):
    __tablename__ = "person_keys"

    key: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    person_id: Mapped[str] = mapped_column(
        String(18), ForeignKey("people.id", ondelete="CASCADE"), primary_key=True
    )

    # One clustered B-tree on SQLite (no rowid table, no second index): imports write
    # about eight of these rows per person. Keys change by difference (old minus new),
    # so no index on person_id is needed.
    __table_args__ = {"sqlite_with_rowid": False}


class MatchModel(Base):
    """A trained matching model (``ridercrm match train``); the newest version is used."""

    __tablename__ = "match_models"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    trained_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    people: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(Text)
