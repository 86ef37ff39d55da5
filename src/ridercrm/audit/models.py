"""Audit records: one per request, whatever its outcome (docs/decisions.md, "Audit")."""

from __future__ import annotations

import base64
import datetime as dt
import functools
import zlib
from typing import Any, cast

from sqlalchemy import (
    ColumnElement,
    Float,
    Index,
    Integer,
    String,
    Text,
    and_,
    func,
    literal_column,
    or_,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

from ridercrm.db import Base, JSONType, UTCDateTime, utcnow

# The audit page's outcome filters, as the partial indexes' conditions: written out with
# their constants, so that SQLite (which matches the condition's terms) and PostgreSQL's
# generic plans (which cannot see a parameter's value) use the indexes.
FAILED_SQL = "response_status >= 400 OR failure_reason IS NOT NULL"
SUCCEEDED_SQL = "response_status < 400 AND failure_reason IS NULL"

PACKED = "\x01z:"
"""How a packed body starts: a control character no stored body begins with unpacked."""
PACK_FROM = 1024
"""Bodies of this many characters or more are stored packed."""


REPEATED_UP_TO = 16_384
"""Bodies up to this length are packed through a small cache: a polled read (the product
list) answers the same body again and again."""


def _packed(value: str) -> str:
    packed = zlib.compress(value.encode("utf-8", errors="surrogatepass"), 6)
    return PACKED + base64.b64encode(packed).decode("ascii")


_packed_repeat = functools.lru_cache(maxsize=16)(_packed)


class PackedText(TypeDecorator[str]):
    """Text stored compactly: a long body as zlib-compressed, base64-encoded text.

    A 200-item booking's bodies are about 200 kB of JSON that repeats its field names
    200 times; packed they take about a tenth. Short bodies are stored as they are, so
    most records stay readable in the database itself. The column stays a text column
    (no migration, and raw SQL still finds what it wrote), and every read through the
    models (admin API, CLI, console) gets the text back unchanged. Packing is
    deterministic, so comparing the column with a text in SQL still works. A text that
    itself begins with ``PACKED``'s control character is always packed, so that what is
    read back is never mistaken for a packed body.
    """

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        if value is None or (len(value) < PACK_FROM and not value.startswith(PACKED[0])):
            return value
        if len(value) <= REPEATED_UP_TO:
            return _packed_repeat(value)
        return _packed(value)

    def process_result_value(self, value: str | None, dialect: Any) -> str | None:
        if value is None or not value.startswith(PACKED):
            return value
        return zlib.decompress(base64.b64decode(value[len(PACKED) :])).decode(
            "utf-8", errors="surrogatepass"
        )


class AuditRecord(Base):
    __tablename__ = "audit_records"

    id: Mapped[str] = mapped_column(String(18), primary_key=True)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    operation: Mapped[str] = mapped_column(String(40))
    method: Mapped[str] = mapped_column(String(10))
    path: Mapped[str] = mapped_column(String(500))
    api_key_id: Mapped[int | None] = mapped_column(Integer)
    api_key_name: Mapped[str | None] = mapped_column(String(120))
    content_type: Mapped[str | None] = mapped_column(String(200))
    request_body: Mapped[str | None] = mapped_column(PackedText)
    response_status: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(PackedText)
    duration_ms: Mapped[float] = mapped_column(Float)
    failure_reason: Mapped[str | None] = mapped_column(Text)
    outcomes: Mapped[Any | None] = mapped_column(JSONType)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    replay_of: Mapped[str | None] = mapped_column(String(18))
    # The console's staff user who made the change (api_key_* are then empty).
    staff_user: Mapped[str | None] = mapped_column(String(80))

    __table_args__ = (
        Index("ix_audit_records_created_at", created_at),
        Index("ix_audit_records_operation_created_at", operation, created_at, id),
        # The console's "who" filter: a record names a staff user (console, CLI) or a
        # key, never both, so who it was is one expression (who).
        Index("ix_audit_records_who", func.coalesce(staff_user, api_key_name), created_at, id),
        # The console's outcome filters, alone and with an operation: each record is in
        # one of the two pairs (docs/decisions.md, "The front desk in the console (issue 26, 2026-11-27)").
        Index(
            "ix_audit_records_failed",
            created_at,
            id,
            sqlite_where=text(FAILED_SQL),
            postgresql_where=text(FAILED_SQL),
        ),
        Index(
            "ix_audit_records_succeeded",
            created_at,
            id,
            sqlite_where=text(SUCCEEDED_SQL),
            postgresql_where=text(SUCCEEDED_SQL),
        ),
        Index(
            "ix_audit_records_operation_failed",
            operation,
            created_at,
            id,
            sqlite_where=text(FAILED_SQL),
            postgresql_where=text(FAILED_SQL),
        ),
        Index(
            "ix_audit_records_operation_succeeded",
            operation,
            created_at,
            id,
            sqlite_where=text(SUCCEEDED_SQL),
            postgresql_where=text(SUCCEEDED_SQL),
        ),
    )


def who(record: Any) -> ColumnElement[str]:
    """Who made a record: its staff user (console, CLI) or else its key's name, written
    as the index ix_audit_records_who is, so that filtering on it reads that index."""
    return cast(ColumnElement[str], func.coalesce(record.staff_user, record.api_key_name))


def failed(record: Any) -> ColumnElement[bool]:
    """A failed record (a status of 400 or more, or a failure reason), as the index says."""
    return or_(record.response_status >= literal_column("400"), record.failure_reason.is_not(None))


def succeeded(record: Any) -> ColumnElement[bool]:
    """A record that succeeded, as the index says."""
    return and_(record.response_status < literal_column("400"), record.failure_reason.is_(None))


class AuditSubject(Base):
    """A person, course or booking number an audit record names (audit.subjects), so the
    console finds a person's or a booking's records by index instead of reading bodies."""

    __tablename__ = "audit_subjects"

    subject: Mapped[str] = mapped_column(String(100), primary_key=True)  # e.g. person:003...
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, primary_key=True)
    audit_id: Mapped[str] = mapped_column(String(18), primary_key=True)

    # A subject's records, newest first, are one range of the primary key.
    __table_args__ = {"sqlite_with_rowid": False}
