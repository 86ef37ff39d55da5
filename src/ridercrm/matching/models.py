"""The blocking keys of each person, kept in step on every write path."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base


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
