"""Audit records as the admin API and the CLI return them."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ridercrm import fields


class AuditEntry(BaseModel):
    """One request as the audit trail keeps it."""

    model_config = ConfigDict(from_attributes=True)

    id: str
    created_at: fields.Timestamp
    operation: str = Field(description="e.g. crm.rider_courses, admin.read_person, unrouted.")
    method: str
    path: str
    api_key_id: int | None
    api_key_name: str | None
    content_type: str | None
    request_body: str | None = Field(description="As received; invalid bytes as \\x.. escapes.")
    response_status: int
    response_body: str | None
    duration_ms: float
    failure_reason: str | None
    outcomes: Any = Field(description="Per-item outcomes, or the match explanation.")
    idempotency_key: str | None
    replay_of: str | None = Field(description="The audit record whose answer was replayed.")


class AuditEntries(BaseModel):
    """A page of audit records, newest first."""

    records: list[AuditEntry]
    next_before: str | None = Field(
        description="Pass as before= for the next page; null when there are no more."
    )
