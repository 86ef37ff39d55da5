"""The audit page's filters read an index, never the whole audit trail: by operation, by
outcome (success or failure) and both, by who (a staff user or a key), each a range of an
index in the page's order (docs/decisions.md, "The front desk in the console (issue 26, 2026-11-27)")."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from ridercrm.staff import audit_search
from ridercrm.staff.audit_search import Filters
from tests.events.test_claim_plan import plan_of


def query_of(engine: Engine, filters: Filters) -> str:
    with Session(engine) as session:
        statement = audit_search.statement(session, filters)
    return plan_of(engine, statement)


# A filter and the index it walks: only the records it lists, newest first. (Walking the
# created_at index instead and testing each record reads every record of the other kind:
# the whole trail, for a rare kind such as failures.)
CASES = {
    "operation": (Filters(operation="console.daysheet"), "ix_audit_records_operation_created_at"),
    "success": (Filters(outcome="success"), "ix_audit_records_succeeded"),
    "failure": (Filters(outcome="failure"), "ix_audit_records_failed"),
    "operation and failure": (
        Filters(operation="crm.rider_courses", outcome="failure"),
        "ix_audit_records_operation_failed",
    ),
    "operation and success": (
        Filters(operation="crm.rider_courses", outcome="success"),
        "ix_audit_records_operation_succeeded",
    ),
    # A staff user's or a key's name: one expression, one index (ridercrm.audit.models.who).
    "who": (Filters(who="frontdesk"), "ix_audit_records_who"),
    "who since a day": (
        Filters(who="booking-website", since=dt.date(2026, 11, 1)),
        "ix_audit_records_who",
    ),
    "failure since a day": (
        Filters(outcome="failure", since=dt.date(2026, 11, 1)),
        "ix_audit_records_failed",
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_the_audit_filters_read_an_index_in_the_pages_order(engine: Engine, case: str) -> None:
    filters, index = CASES[case]
    if engine.dialect.name == "postgresql":
        # The tests empty tables with DELETE: the indexes keep the pages earlier tests
        # filled, in proportions that depend on the order the tests ran in, and the
        # planner weighs an index by its pages. Rebuilt, every index starts alike.
        with engine.connect().execution_options(isolation_level="AUTOCOMMIT") as connection:
            connection.exec_driver_sql("VACUUM FULL audit_records")
    plan = query_of(engine, filters)
    assert index in plan, plan
    if engine.dialect.name == "sqlite":
        assert "TEMP B-TREE" not in plan, plan  # no sort of every matching record
    else:
        assert "Seq Scan" not in plan, plan
