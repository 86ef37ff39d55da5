"""Prometheus metrics of messages (served at /metrics), read from the database at scrape
time like the webhook metrics: every server worker answers alike, whichever process sends.

Messages are never deleted, so the count of sent (failed, unsent) rows only goes up: a
Prometheus counter. The queue gauges are the messages due now and not yet sent, and how
long the oldest of them has been due.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope, utcnow
from ridercrm.notifications.models import CHANNELS, FAILED, SENT, UNSENT, Message, is_open

log = logging.getLogger("ridercrm.notifications")


def counts(session: Session) -> dict[tuple[str, str], int]:
    """Messages by (status, channel)."""
    rows = session.execute(
        select(Message.status, Message.channel, func.count()).group_by(
            Message.status, Message.channel
        )
    )
    return {(status, channel): int(count) for status, channel, count in rows}


def queue_state(session: Session) -> tuple[int, float]:
    """How many messages are due and not sent yet, and how long the oldest has been due."""
    now = utcnow()
    count, first = session.execute(
        select(func.count(), func.min(Message.due_at)).where(
            is_open(Message.status), Message.due_at <= now
        )
    ).one()
    if first is None:
        return int(count), 0.0
    if isinstance(first, str):  # SQLite's min() returns the stored text
        first = dt.datetime.fromisoformat(first)
    if first.tzinfo is None:
        first = first.replace(tzinfo=dt.UTC)
    return int(count), max((now - first).total_seconds(), 0.0)


class MessageMetrics(Collector):
    """The message counters and queue gauges of one app's or deliverer's database."""

    def __init__(self, sessions: sessionmaker[Session] | None) -> None:
        self.sessions = sessions

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not query the database

    def collect(self) -> Iterable[Metric]:
        if self.sessions is None:
            return []
        try:
            with session_scope(self.sessions) as session:
                stored = counts(session)
                depth, oldest = queue_state(session)
        except Exception:
            log.exception("message metrics not read")
            return []
        families: list[Metric] = []
        for status, name, text in (
            (SENT, "ridercrm_messages_sent", "Messages accepted by the SMTP server or SMS gateway"),
            (FAILED, "ridercrm_messages_failed", "Messages refused or given up after retries"),
            (UNSENT, "ridercrm_messages_unsent", "Messages kept unsent (no server, no address)"),
        ):
            family = CounterMetricFamily(name, text + ", by channel", labels=["channel"])
            for channel in CHANNELS:
                family.add_metric([channel], stored.get((status, channel), 0))
            families.append(family)
        families.append(
            GaugeMetricFamily(
                "ridercrm_messages_queue_depth", "Messages due and not sent yet", value=depth
            )
        )
        families.append(
            GaugeMetricFamily(
                "ridercrm_messages_queue_age_seconds",
                "How long the oldest message due and not sent yet has been due (0: none)",
                value=oldest,
            )
        )
        return families
