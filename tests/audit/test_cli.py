"""The `ridercrm audit` commands, on the real database: show a record, purge old ones."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from click.testing import Result
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from ridercrm.audit.models import AuditRecord
from ridercrm.cli import app
from ridercrm.db import session_scope, utcnow

runner = CliRunner()


def ridercrm(db_url: str, *args: str) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url})


def test_audit_show_prints_the_record_as_json(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    response = client.post("/admin/contacts", json={"first_name": "A"}, headers=admin_headers)
    audit_id = response.headers["x-audit-id"]
    over_http = client.get(f"/admin/audit/{audit_id}", headers=admin_headers).json()
    for form in (audit_id, audit_id[:15], audit_id.lower()):
        result = ridercrm(db_url, "audit", "show", form)
        assert result.exit_code == 0, result.output
        record = json.loads(result.stdout)
        assert record == over_http
        assert record["response_status"] == 400
        assert record["failure_reason"] == "last_name: is required"


@pytest.mark.parametrize("audit_id", ["a0A000000000000AAA", "nonsense"])
def test_audit_show_of_an_unknown_record_fails(db_url: str, audit_id: str) -> None:
    result = ridercrm(db_url, "audit", "show", audit_id)
    assert result.exit_code == 1
    assert "no audit record" in result.stderr
    assert result.stdout == ""


def test_audit_purge_deletes_only_older_records(
    db_url: str, client: TestClient, sessions: sessionmaker[Session]
) -> None:
    ids = [client.get(f"/nowhere/{n}").headers["x-audit-id"] for n in range(5)]
    ages = {ids[0]: 400, ids[1]: 31, ids[2]: 29, ids[3]: 1}
    with session_scope(sessions, write=True) as session:
        for audit_id, days in ages.items():
            record = session.get(AuditRecord, audit_id)
            assert record is not None
            record.created_at = utcnow() - dt.timedelta(days=days)

    result = ridercrm(db_url, "audit", "purge", "--older-than", "30")
    assert result.exit_code == 0, result.output
    assert "purged 2 audit record(s)" in result.stdout
    with session_scope(sessions) as session:
        left = set(session.scalars(select(AuditRecord.id)))
    assert left == set(ids[2:])

    assert "purged 0" in ridercrm(db_url, "audit", "purge", "--older-than", "30").stdout
    assert "purged 2" in ridercrm(db_url, "audit", "purge", "--older-than", "0.5").stdout
    with session_scope(sessions) as session:
        assert set(session.scalars(select(AuditRecord.id))) == {ids[4]}


@pytest.mark.parametrize("days", ["1000000", "1e300", "inf"])
def test_audit_purge_with_an_enormous_age_purges_nothing(
    db_url: str, client: TestClient, sessions: sessionmaker[Session], days: str
) -> None:
    audit_id = client.get("/nowhere").headers["x-audit-id"]
    result = ridercrm(db_url, "audit", "purge", "--older-than", days)
    assert result.exit_code == 0, result.output
    assert "purged 0" in result.stdout
    with session_scope(sessions) as session:
        assert session.get(AuditRecord, audit_id) is not None


def test_audit_purge_refuses_a_negative_age(db_url: str, sessions: sessionmaker[Session]) -> None:
    result = ridercrm(db_url, "audit", "purge", "--older-than", "-1")
    assert result.exit_code == 2
