"""The outbox (events), the endpoints that receive them and the delivery log."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    String,
    literal_column,
    text,
)
from sqlalchemy.orm import Mapped, mapped_column

from ridercrm.db import Base, JSONType, UTCDateTime, utcnow

PENDING = "pending"  # waiting for its next attempt (or for the endpoint to be enabled)
SENDING = "sending"  # claimed by a deliverer until lease_until; then pending again
DELIVERED = "delivered"
FAILED = "failed"  # gave up: 410, or the whole retry schedule failed
OPEN_STATUSES = (PENDING, SENDING)
# The open deliveries' index holds only these rows. A query can use it only where the
# database sees that its own condition implies the index's: SQLite needs the very same
# term, and PostgreSQL cannot see through a bound parameter in a prepared statement's
# generic plan, so the constants are written out (is_open).
_OPEN_SQL = "status IN ({})".format(", ".join(f"'{value}'" for value in OPEN_STATUSES))


def is_open(status: Any) -> ColumnElement[bool]:
    """``status IN ('pending', 'sending')`` with its constants written out, so that the
    open deliveries' partial index can serve it (of Delivery.status or an alias's)."""
    return cast(
        ColumnElement[bool],
        status.in_([literal_column(f"'{value}'") for value in OPEN_STATUSES]),
    )


class Event(Base):
    """One change, written in the transaction that made it (the outbox)."""

    __tablename__ = "events"

    # The Standard Webhooks message id ("msg_..."), sent as webhook-id.
    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    type: Mapped[str] = mapped_column(String(40))
    # "person:<id>" (a course's events carry its person's): delivered in order per subject.
    # Deliveries stored before 2026-11-23 may name "course:<id>".
    subject: Mapped[str] = mapped_column(String(40))
    payload: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow, index=True)


class WebhookEndpoint(Base):
    """A receiver of events: its URL, the event types it wants and its signing secrets."""

    __tablename__ = "webhook_endpoints"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    url: Mapped[str] = mapped_column(String(2000))
    description: Mapped[str] = mapped_column(String(500), default="")
    event_types: Mapped[list[str]] = mapped_column(JSON)
    # Needed in plaintext to sign; shown once, never listed (docs/decisions.md).
    secret: Mapped[str] = mapped_column(String(100))
    previous_secret: Mapped[str | None] = mapped_column(String(100))
    previous_secret_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    # The entries of RIDERCRM_WEBHOOK_ALLOWED_HOSTS the URL needed when it was registered
    # (its host name, or the ranges its addresses are in): every deliverer honours them,
    # with or without that setting (docs/decisions.md, "A webhook's allowance is stored").
    allowed_hosts: Mapped[str] = mapped_column(String(2000), default="", server_default="")
    enabled: Mapped[bool] = mapped_column(Boolean, default=True)
    disabled_reason: Mapped[str | None] = mapped_column(String(200))
    disabled_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)


class Delivery(Base):
    """One event to one endpoint: its state, attempts and last result (the delivery log).

    Holds ids, codes and timings only: no payload, no response body (personal data).
    """

    __tablename__ = "webhook_deliveries"

    # Insert order; within one endpoint and subject it is commit order (docs/events.md).
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    event_id: Mapped[str] = mapped_column(String(40), ForeignKey("events.id"), index=True)
    endpoint_id: Mapped[str] = mapped_column(String(40), ForeignKey("webhook_endpoints.id"))
    subject: Mapped[str] = mapped_column(String(40))
    status: Mapped[str] = mapped_column(String(10), default=PENDING)
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    next_attempt_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    lease_until: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)
    response_code: Mapped[int | None] = mapped_column(Integer)
    latency_ms: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[dt.datetime] = mapped_column(UTCDateTime, default=utcnow)
    finished_at: Mapped[dt.datetime | None] = mapped_column(UTCDateTime)

    __table_args__ = (
        # The open deliveries in id order, and nothing else (a partial index): the
        # deliverer's claim walks them oldest first and stops at its limit, and the queue
        # metrics count them, without reading the delivery log's delivered rows.
        Index(
            "ix_webhook_deliveries_open",
            id,
            sqlite_where=text(_OPEN_SQL),
            postgresql_where=text(_OPEN_SQL),
        ),
        # One subject's earlier open deliveries to the same endpoint (the order rule), and
        # an endpoint's delivery log. Deliberately the only index led by endpoint_id: with
        # an (endpoint_id, id) index beside it, PostgreSQL on fresh statistics checked the
        # order rule through that one, reading every earlier delivery of the endpoint.
        Index("ix_webhook_deliveries_endpoint_subject", endpoint_id, subject, id),
    )


class WebhookTotal(Base):
    """A running total of the deliverers' work: deliveries by outcome, endpoints disabled
    by reason. Added to in the transaction that stores the outcomes; never purged, so it
    only goes up (served as a Prometheus counter, events/metrics.py)."""

    __tablename__ = "webhook_totals"

    metric: Mapped[str] = mapped_column(String(40), primary_key=True)  # "deliveries", ...
    label: Mapped[str] = mapped_column(String(40), primary_key=True)  # "delivered", ...
    total: Mapped[int] = mapped_column(BigInteger, default=0)
