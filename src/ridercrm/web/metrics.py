"""Prometheus metrics: requests and latency per operation and status."""

from __future__ import annotations

import os

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)

from ridercrm.events import metrics as events_metrics

REQUESTS = Counter(
    "ridercrm_requests_total", "Requests answered, by operation and status", ["operation", "status"]
)
LATENCY = Histogram(
    "ridercrm_request_duration_seconds",
    "Time to answer a request, by operation",
    ["operation"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0),
)


def observe(operation: str, status: int, seconds: float) -> None:
    REQUESTS.labels(operation, str(status)).inc()
    LATENCY.labels(operation).observe(seconds)


def exposition() -> tuple[bytes, str]:
    """The metrics text; across all workers when PROMETHEUS_MULTIPROC_DIR is set."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        # Read from the database at scrape time: the same in every worker.
        registry.register(events_metrics.WEBHOOKS)
        return generate_latest(registry), CONTENT_TYPE_LATEST
    return generate_latest(), CONTENT_TYPE_LATEST
