"""The database's contents, so a test can show a request changed nothing (checked, not assumed).

:class:`Ledger` snapshots every business table and the set of audit record ids, then
after each request checks that the tables are exactly as before and that exactly one
audit record was added per response, naming that response and its status.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpx
from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.models import AuditRecord
from ridercrm.db import session_scope

BUSINESS_TABLES = (
    "people",
    "person_keys",
    "products",
    "assets",
    "asset_status_history",
    "idempotency_records",
    "api_keys",
    "events",
    "webhook_endpoints",
    "webhook_deliveries",
)

Rows = list[tuple[Any, ...]]


def snapshot(sessions: sessionmaker[Session]) -> dict[str, Rows]:
    """Every row of every business table, in a stable order."""
    with session_scope(sessions) as session:
        return {
            table: sorted(
                (tuple(row) for row in session.execute(text(f"SELECT * FROM {table}"))),  # noqa: S608 (fixed names)
                key=repr,
            )
            for table in BUSINESS_TABLES
        }


def audit_statuses(sessions: sessionmaker[Session]) -> dict[str, int]:
    """Audit record id -> the response status it records."""
    with session_scope(sessions) as session:
        rows = session.execute(select(AuditRecord.id, AuditRecord.response_status))
        return {audit_id: status for audit_id, status in rows}


def _difference(before: dict[str, Rows], after: dict[str, Rows]) -> str:
    lines = []
    for table in BUSINESS_TABLES:
        gone = [row for row in before[table] if row not in after[table]]
        new = [row for row in after[table] if row not in before[table]]
        if gone or new:
            lines.append(f"{table}: {len(gone)} rows gone or changed, {len(new)} new or changed")
            lines += [f"  - {row!r:.300}" for row in gone[:3]]
            lines += [f"  + {row!r:.300}" for row in new[:3]]
    return "\n".join(lines)


class Ledger:
    """The database as it was; :meth:`unchanged` checks it still is."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self.tables = snapshot(sessions)
        self.audit = audit_statuses(sessions)

    def unchanged(self, *responses: httpx.Response) -> None:
        """No business row changed, and each response added exactly its own audit record."""
        tables = snapshot(self.sessions)
        assert tables == self.tables, "the request changed the database:\n" + _difference(
            self.tables, tables
        )
        self._audited(responses)

    def changed(self, *responses: httpx.Response) -> dict[str, Rows]:
        """The request was meant to write: take the new state as the baseline.
        Returns the rows that are new or changed, per table."""
        tables = snapshot(self.sessions)
        added = {
            table: [row for row in tables[table] if row not in self.tables[table]]
            for table in BUSINESS_TABLES
        }
        self.tables = tables
        self._audited(responses)
        return added

    def _audited(self, responses: Iterable[httpx.Response]) -> None:
        audit = audit_statuses(self.sessions)
        added = {key: status for key, status in audit.items() if key not in self.audit}
        expected = {r.headers["x-audit-id"]: r.status_code for r in responses}
        assert added == expected, f"audit records added {added}, expected {expected}"
        self.audit = audit
