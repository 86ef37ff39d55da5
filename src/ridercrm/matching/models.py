"""The trained matching models (the blocking keys are the people's own: people/models.py)."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Integer, Text
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, UTCDateTime


class MatchModel(Base):
    """A trained matching model (``ridercrm match train``); the newest version is used."""

    __tablename__ = "match_models"

    version: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=False)
    trained_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    people: Mapped[int] = mapped_column(Integer)
    model: Mapped[str] = mapped_column(Text)
