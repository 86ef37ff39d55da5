"""Prometheus metrics: requests and latency per operation and status."""

from __future__ import annotations

import os
from collections.abc import Sequence

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    CollectorRegistry,
    Counter,
    Histogram,
    generate_latest,
    multiprocess,
)
from prometheus_client.registry import Collector

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


def exposition(own: Sequence[Collector]) -> tuple[bytes, str]:
    """The metrics text: the requests (across all workers when PROMETHEUS_MULTIPROC_DIR is
    set) and ``own``, the app's metrics read from its database at scrape time (the same in
    every worker)."""
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        multiprocess.MultiProcessCollector(registry)
        for collector in own:
            registry.register(collector)
    else:
        registry = events_metrics.registry_with(*own)
    return generate_latest(registry), CONTENT_TYPE_LATEST
