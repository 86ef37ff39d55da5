"""Prometheus metrics of webhook delivery (served at /metrics with the request metrics).

The queue gauges are read from the database when /metrics is scraped, not kept by a
deliverer: every server worker answers them alike (`serve --workers 2`), whichever
process delivers, and a stopped deliverer cannot leave a stale value behind.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from prometheus_client import REGISTRY, Counter
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope, utcnow
from ridercrm.events.models import OPEN_STATUSES, Delivery

log = logging.getLogger("ridercrm.webhooks")

DELIVERIES = Counter(
    "ridercrm_webhook_deliveries_total",
    "Webhook delivery attempts, by outcome: delivered, retry (failed, will be retried),"
    " failed (given up: 410 or the whole retry schedule)",
    ["outcome"],
)
ENDPOINTS_DISABLED = Counter(
    "ridercrm_webhook_endpoints_disabled_total",
    "Webhook endpoints the deliverer disabled, by reason: gone (410), exhausted (schedule)",
    ["reason"],
)


def queue_state(sessions: sessionmaker[Session]) -> tuple[int, float]:
    """How many deliveries are open, and the age in seconds of the oldest (0: none)."""
    with session_scope(sessions) as session:
        count, first = session.execute(
            select(func.count(), func.min(Delivery.created_at)).where(
                Delivery.status.in_(OPEN_STATUSES)
            )
        ).one()
    if first is None:
        return int(count), 0.0
    if isinstance(first, str):  # SQLite's min() returns the stored text
        first = dt.datetime.fromisoformat(first)
    if first.tzinfo is None:
        first = first.replace(tzinfo=dt.UTC)
    return int(count), max((utcnow() - first).total_seconds(), 0.0)


class QueueGauges(Collector):
    """ridercrm_webhook_queue_depth and _oldest_undelivered_seconds, read at scrape time."""

    def __init__(self) -> None:
        self.sessions: sessionmaker[Session] | None = None

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not query the database

    def collect(self) -> Iterable[Metric]:
        if self.sessions is None:
            return []
        try:
            depth, oldest = queue_state(self.sessions)
        except Exception:
            log.exception("webhook queue gauges not read")
            return []
        return [
            GaugeMetricFamily(
                "ridercrm_webhook_queue_depth",
                "Webhook deliveries not yet delivered nor given up",
                value=depth,
            ),
            GaugeMetricFamily(
                "ridercrm_webhook_oldest_undelivered_seconds",
                "Age of the oldest webhook delivery not yet delivered nor given up (0: none)",
                value=oldest,
            ),
        ]


QUEUE = QueueGauges()
REGISTRY.register(QUEUE)


def watch_queue(sessions: sessionmaker[Session]) -> None:
    """Read the queue gauges from this database (the app's or the deliverer's)."""
    QUEUE.sessions = sessions
