"""Stored responses of POSTs sent with an Idempotency-Key (docs/decisions.md, "Retries (Idempotency-Key)")."""

from __future__ import annotations

import datetime as dt

from sqlalchemy import Index, Integer, LargeBinary, String, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, JSONType, UTCDateTime, utcnow


class IdempotencyRecord(Base):
    __tablename__ = "idempotency_records"

    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    # Keys are per API key: two clients may pick the same key without colliding.
    api_key_id: Mapped[int] = mapped_column(Integer)
    key: Mapped[str] = mapped_column(String(255))
    request_hash: Mapped[str] = mapped_column(String(64))
    audit_id: Mapped[str] = mapped_column(String(18))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    # Until this time an unfinished request holds the key; after it, a retry may take it.
    locked_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    response_status: Mapped[int | None] = mapped_column(Integer)
    response_headers: Mapped[dict[str, str] | None] = mapped_column(JSONType)
    response_body: Mapped[bytes | None] = mapped_column(LargeBinary)

    __table_args__ = (
        UniqueConstraint(api_key_id, key, name="uq_idempotency_records_api_key_id_key"),
        Index("ix_idempotency_records_expires_at", expires_at),
    )
