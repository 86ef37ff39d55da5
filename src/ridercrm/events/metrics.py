"""Prometheus metrics of webhook delivery (served at /metrics with the request metrics).

Everything here is read from the database when /metrics is scraped, not kept in a
deliverer's memory: every server worker answers alike (`serve --workers 2`), whichever
process or host delivers, and a stopped deliverer cannot leave a stale value behind.

- The counters (deliveries by outcome, endpoints disabled by reason) are running totals
  in ``webhook_totals``, which each deliverer adds to in the transaction that stores the
  outcomes (so a total counts exactly the stored outcomes). The purge never touches
  them: they only go up, as Prometheus counters must (docs/decisions.md).
- The queue gauges are one indexed count of the open deliveries.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections import Counter
from collections.abc import Iterable

from prometheus_client import REGISTRY, CollectorRegistry
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from sqlalchemy import Table, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope, utcnow
from ridercrm.events.models import Delivery, WebhookTotal, is_open

log = logging.getLogger("ridercrm.webhooks")

DELIVERIES = "deliveries"  # labels: OUTCOMES
ENDPOINTS_DISABLED = "endpoints_disabled"  # labels: REASONS
OUTCOMES = ("delivered", "retry", "failed")
REASONS = ("gone", "exhausted")
TOTALS_TABLE: Table = WebhookTotal.__table__  # type: ignore[assignment]

Tally = Counter[tuple[str, str]]


def add_totals(session: Session, tally: Tally) -> None:
    """Add a round's outcomes to the running totals, in the round's transaction.

    One upsert; rows in key order, so deliverers adding at once on PostgreSQL lock
    them in the same order (no deadlock). Call it last in the transaction: the rows
    stay locked until the commit.
    """
    rows = [
        {"metric": metric, "label": label, "total": count}
        for (metric, label), count in sorted(tally.items())
        if count
    ]
    if not rows:
        return
    dialect = session.get_bind().dialect.name
    insert = postgresql.insert if dialect == "postgresql" else sqlite.insert
    statement = insert(TOTALS_TABLE).values(rows)
    session.execute(
        statement.on_conflict_do_update(
            index_elements=[TOTALS_TABLE.c.metric, TOTALS_TABLE.c.label],
            set_={"total": TOTALS_TABLE.c.total + statement.excluded.total},
        )
    )


def totals(session: Session) -> dict[tuple[str, str], int]:
    """The running totals: (metric, label) -> count."""
    rows = session.execute(select(WebhookTotal.metric, WebhookTotal.label, WebhookTotal.total))
    return {(metric, label): int(total) for metric, label, total in rows}


def queue_state(session: Session) -> tuple[int, float]:
    """How many deliveries are open, and the age in seconds of the oldest (0: none)."""
    count, first = session.execute(
        select(func.count(), func.min(Delivery.created_at)).where(is_open(Delivery.status))
    ).one()
    if first is None:
        return int(count), 0.0
    if isinstance(first, str):  # SQLite's min() returns the stored text
        first = dt.datetime.fromisoformat(first)
    if first.tzinfo is None:
        first = first.replace(tzinfo=dt.UTC)
    return int(count), max((utcnow() - first).total_seconds(), 0.0)


def _counter(name: str, documentation: str, label: str, values: dict[str, int]) -> Metric:
    family = CounterMetricFamily(name, documentation, labels=[label])
    for value, count in values.items():
        family.add_metric([value], count)
    return family


class WebhookMetrics(Collector):
    """The webhook counters and queue gauges, read from the database at scrape time.

    One per app (create_app) or deliverer command, reading that one's database: nothing
    is registered at import, so two apps in one process each answer for their own.
    """

    def __init__(self, sessions: sessionmaker[Session] | None) -> None:
        self.sessions = sessions

    def describe(self) -> Iterable[Metric]:
        return []  # registering must not query the database

    def collect(self) -> Iterable[Metric]:
        if self.sessions is None:
            return []
        try:
            with session_scope(self.sessions) as session:
                stored = totals(session)
                depth, oldest = queue_state(session)
        except Exception:
            log.exception("webhook metrics not read")
            return []
        return [
            _counter(
                "ridercrm_webhook_deliveries",
                "Webhook delivery attempts, by outcome: delivered, retry (failed, will be"
                " retried), failed (given up: 410 or the whole retry schedule); all deliverers",
                "outcome",
                {outcome: stored.get((DELIVERIES, outcome), 0) for outcome in OUTCOMES},
            ),
            _counter(
                "ridercrm_webhook_endpoints_disabled",
                "Webhook endpoints a deliverer disabled, by reason: gone (410), exhausted"
                " (schedule); all deliverers",
                "reason",
                {reason: stored.get((ENDPOINTS_DISABLED, reason), 0) for reason in REASONS},
            ),
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


def registry_with(*collectors: Collector) -> CollectorRegistry:
    """This process's own metrics (prometheus_client's REGISTRY: the process, the
    requests it answered) and ``collectors``, an app's or a deliverer's database-read
    metrics; a new registry, so the global one never holds a database."""
    registry = CollectorRegistry()
    registry.register(REGISTRY)
    for collector in collectors:
        registry.register(collector)
    return registry
