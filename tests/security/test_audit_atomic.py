"""A request's work and its audit record are one fact (issue 10, finding 4).

When the audit record cannot be stored (a full disk; here a trigger refusing every
insert into audit_records, the same failure on both databases), the work is not stored
either, and the 503 says the request was not applied.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, func, select
from testkit.factories import create_person, create_product, new_booking

from ridercrm.audit.models import AuditRecord
from ridercrm.courses.models import Asset, AssetStatusChange


@pytest.fixture
def audit_unwritable(engine: Engine) -> Iterator[None]:
    """Every insert into audit_records fails until the test ends."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.begin() as connection:
        if sqlite:
            connection.exec_driver_sql(
                "CREATE TRIGGER audit_full BEFORE INSERT ON audit_records"
                " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
            )
        else:
            connection.exec_driver_sql(
                "CREATE FUNCTION audit_full() RETURNS trigger AS"
                " $$ BEGIN RAISE EXCEPTION 'could not extend file: No space left on device';"
                " END $$ LANGUAGE plpgsql"
            )
            connection.exec_driver_sql(
                "CREATE TRIGGER audit_full BEFORE INSERT ON audit_records"
                " FOR EACH ROW EXECUTE FUNCTION audit_full()"
            )
    try:
        yield
    finally:
        with engine.begin() as connection:
            connection.exec_driver_sql(
                "DROP TRIGGER audit_full" + ("" if sqlite else " ON audit_records")
            )
            if not sqlite:
                connection.exec_driver_sql("DROP FUNCTION audit_full()")


def test_work_is_not_stored_when_its_audit_record_cannot_be(
    client: TestClient,
    admin_headers: dict[str, str],
    engine: Engine,
    request: pytest.FixtureRequest,
) -> None:
    product = create_product(client, admin_headers)
    people = [create_person(client, admin_headers, email=f"p{n}@example.com") for n in range(20)]
    items = [
        new_booking(person, product, booking_number=f"FULL-{n}") for n, person in enumerate(people)
    ]
    request.getfixturevalue("audit_unwritable")
    response = client.post(
        "/crm/people/rider_courses", json={"people_product": items}, headers=admin_headers
    )
    with engine.connect() as connection:
        assert connection.scalar(select(func.count()).select_from(Asset)) == 0
        assert connection.scalar(select(func.count()).select_from(AssetStatusChange)) == 0
    assert response.status_code == 503
    assert response.json() == {
        "detail": "the audit trail is unavailable; the request was not applied"
    }
    assert "x-audit-id" not in response.headers


def test_every_status_change_names_a_stored_audit_record(
    client: TestClient, admin_headers: dict[str, str], engine: Engine
) -> None:
    product = create_product(client, admin_headers)
    person = create_person(client, admin_headers)
    response = client.post(
        "/crm/people/rider_courses",
        json={"people_product": [new_booking(person, product)]},
        headers=admin_headers,
    )
    assert response.status_code == 200
    with engine.connect() as connection:
        rows = connection.execute(
            select(AssetStatusChange.audit_id, AuditRecord.response_body).join(
                AuditRecord, AuditRecord.id == AssetStatusChange.audit_id, isouter=True
            )
        ).all()
    assert rows == [(response.headers["x-audit-id"], response.text)], (
        "the record holds what was sent"
    )
