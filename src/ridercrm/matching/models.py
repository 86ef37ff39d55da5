"""The blocking keys of each person, kept in step on every write path."""

from __future__ import annotations

from sqlalchemy import BigInteger, ForeignKey, Index, String
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base


class PersonKey(Base):
    __tablename__ = "person_keys"

    key: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=False)
    person_id: Mapped[str] = mapped_column(
        String(18), ForeignKey("people.id", ondelete="CASCADE"), primary_key=True
    )

    __table_args__ = (Index("ix_person_keys_person_id", person_id),)
