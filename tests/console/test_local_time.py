"""Console times are the business's (RIDERCRM_TIMEZONE, default Australia/Melbourne),
stored in UTC; course times stay the site's local wall time."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import update
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.models import AuditRecord
from ridercrm.db import session_scope
from tests.console.conftest import csrf
from tests.courses import builders

# 13:30 UTC on 30 November is 00:30 on 1 December in Melbourne (AEDT, +11), 23:30 on
# 30 November in Brisbane (AEST, +10).
STORED = dt.datetime(2026, 11, 30, 13, 30, 5, tzinfo=dt.UTC)


def _one_record_at(client: TestClient, sessions: sessionmaker[Session], person: str) -> str:
    answer = client.post(
        f"/console/people/{person}",
        data={"csrf": csrf(client), "city": "Geelong", "last_name": "Ng"},
    )
    assert answer.status_code in (200, 303), answer.text
    with session_scope(sessions, write=True) as session:
        session.execute(
            update(AuditRecord)
            .where(AuditRecord.operation.like("console.%"))
            .values(created_at=STORED)
        )
    return person


def test_audit_and_person_times_are_the_business_zones(
    console_as: Callable[..., TestClient], sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        person = builders.person(session)
    client = console_as("staff")
    _one_record_at(client, sessions, person)
    page = client.get("/console/audit", params={"operation": "console.modify_person"}).text
    assert "2026-12-01 00:30:05 AEDT" in page, page
    assert "2026-11-30 13:30:05" not in page.replace("13:30:05 UTC", "")
    # The day filters are the business's days: 1 December in Melbourne holds the record,
    # 30 November does not (it was 30 November only in UTC).
    first = client.get("/console/audit", params={"since": "2026-12-01", "until": "2026-12-01"})
    assert "2026-12-01 00:30:05 AEDT" in first.text
    before = client.get("/console/audit", params={"since": "2026-11-30", "until": "2026-11-30"})
    assert "00:30:05 AEDT" not in before.text
    record_id = re.search(r'href="/console/audit/([0-9A-Za-z]{18})"', page)
    assert record_id is not None
    record = client.get(f"/console/audit/{record_id.group(1)}").text
    assert "2026-12-01 00:30:05 AEDT" in record
    # The stored time beside it, with its own date: a UTC time alone read as 1 December.
    assert "(2026-11-30 13:30:05 UTC)" in record


def test_another_business_zone_is_a_setting(
    console_as: Callable[..., TestClient], sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        person = builders.person(session)
    client = console_as("staff", timezone="Australia/Brisbane")
    _one_record_at(client, sessions, person)
    page = client.get("/console/audit").text
    assert "2026-11-30 23:30:05 AEST" in page
