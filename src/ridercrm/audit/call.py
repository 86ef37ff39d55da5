"""What the service knows about the request in hand, for the audit record and metrics."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from ridercrm.errors import ErrorShape, default_shape
from ridercrm.ids import RecordKind, new_id


@dataclass(frozen=True)
class Caller:
    """The API key a request was made with."""

    key_id: int
    name: str
    scopes: frozenset[str]


@dataclass
class Call:
    """One request's story; the audit middleware writes it down when the response is ready."""

    method: str
    path: str
    audit_id: str = field(default_factory=lambda: new_id(RecordKind.AUDIT))
    started: float = field(default_factory=time.perf_counter)
    operation: str = "unrouted"
    shape: ErrorShape = default_shape
    caller: Caller | None = None
    content_type: str | None = None
    request_body: bytes | None = None
    request_note: str | None = None  # stored instead of a body that was never read
    failure_reason: str | None = None
    outcomes: Any = None
    idempotency_key: str | None = None
    replay_of: str | None = None
    # The audit record was committed with the work; the middleware writes no other.
    recorded: bool = False
    # The work and its record were flushed and their commit begun: if the commit
    # failed, the work may still have been applied (a connection lost mid-commit).
    committing: bool = False
