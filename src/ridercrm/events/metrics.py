"""Prometheus metrics of webhook delivery (served at /metrics with the request metrics)."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

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
QUEUE_DEPTH = Gauge(
    "ridercrm_webhook_queue_depth",
    "Webhook deliveries not yet delivered nor given up",
    multiprocess_mode="max",
)
OLDEST_AGE = Gauge(
    "ridercrm_webhook_oldest_undelivered_seconds",
    "Age of the oldest webhook delivery not yet delivered nor given up (0: none)",
    multiprocess_mode="max",
)
