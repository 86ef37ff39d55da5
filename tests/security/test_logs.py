"""No personal data in logs: requests carrying distinctive personal values go through
every operation, succeeding and failing (whole-request failures, refused items,
unauthenticated, unhandled database errors, an audit trail that cannot be written),
and none of the values appears in anything the service logs."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session
from testkit.factories import create_product
from typer.testing import CliRunner

from ridercrm.audit.service import RECORD_COLUMNS, record_rows
from ridercrm.cli import app as cli
from ridercrm.people import service as people_service
from ridercrm.web import audit_batch, middleware, runtime
from tests.courses.helpers import new_booking
from tests.security.personal import PERSON, SECRETS


@pytest.fixture(params=[True, False], ids=["json-lines", "plain-lines"])
def logged(
    request: pytest.FixtureRequest, make_client: Callable[..., TestClient]
) -> Iterator[tuple[TestClient, io.StringIO]]:
    """A client whose service logs at DEBUG into a buffer, formatted as in production."""
    client = make_client(log_json=request.param, log_level="DEBUG")
    (handler,) = logging.getLogger("ridercrm").handlers
    assert isinstance(handler, logging.StreamHandler)
    buffer = io.StringIO()
    previous = handler.setStream(buffer)
    yield client, buffer
    handler.setStream(previous)


def _fail_with_the_values(session: Session, *_args: Any, **kwargs: Any) -> Any:
    """A real database error whose statement carries personal values as parameters."""
    data = kwargs.get("data")
    values = {"email": getattr(data, "email", None) or PERSON["email"], "street": PERSON["street"]}
    session.execute(text("INSERT INTO no_such_table (a, b) VALUES (:email, :street)"), values)


def _run_everything(
    client: TestClient, admin: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> list[httpx.Response]:
    def post(path: str, body: Any, headers: dict[str, str] | None = None) -> httpx.Response:
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        merged = {"Content-Type": "application/json", **(admin if headers is None else headers)}
        return client.post(path, content=raw, headers=merged)

    responses = []
    created = post("/admin/contacts", PERSON)
    contact = created.json()["id"]
    lead = post("/admin/leads", {**PERSON, "first_name": "Quillona"}).json()["id"]
    product = create_product(client, admin)
    booking = new_booking(contact, product, **{k: v for k, v in PERSON.items() if k in (
        "mobile_phone", "home_phone", "postcode", "street", "city", "state", "country",
        "drivers_license", "license_type", "date_of_birth")})  # fmt: skip
    responses += [
        created,
        post("/crm/people/rider_courses", {"people_product": [booking]}),
        post("/crm/people/rider_courses", {"people_product": [{**booking, "postcode": "3x"}]}),
        post("/crm/people/rider_courses", b'{"people_product": [{"street": "77 Xylophone Crescent"'),
        post("/crm/people/rider_courses", {"people_product": {"email": PERSON["email"]}}),
        post("/crm/modify", {"people_data": [{"ID": contact, **PERSON}]}),
        post("/crm/modify", {"people_data": [{"ID": lead, "email": "Quillon at Wombatville"}]}),
        post("/crm/modify", b"people_data[0][ID]=" + contact.encode() + b"&people_data[0][city]=Wombatville",
             {**admin, "Content-Type": "application/x-www-form-urlencoded"}),
        post("/crm/modify", b"first_name=Quillon&first_name=Zbyszewski",
             {**admin, "Content-Type": "application/x-www-form-urlencoded"}),
        post("/crm/people/match", {"person_data": PERSON, "explain": True}),
        post("/crm/people/match", {"person_data": {**PERSON, "postcode": "Wombatville"}}),
        post("/crm/leads/match", {"person_data": {**PERSON, "lead_source": "Web"}}),
        post("/crm/leads/match", {"person_data": {**PERSON, "email": "Zbyszewski"}}),
        post("/admin/contacts", {**PERSON, "email": "not an email Zbyszewski"}),
        post("/admin/contacts", {**PERSON, "favourite": "Xylophone"}),
        post("/admin/contacts", PERSON, headers={}),
        post("/admin/contacts", PERSON, headers={"X-API-Key": "rcrm_Zbyszewski"}),
        post("/admin/contacts", b"<name>Quillon Zbyszewski</name>",
             {**admin, "Content-Type": "application/xml"}),
        client.get(f"/admin/people/{contact}", headers=admin),
        client.get("/admin/people", params={"q": "Quillon Zbyszewski"}, headers=admin),
        client.get("/admin/people", params={"q": PERSON["email"]}, headers=admin),
        client.get("/admin/people", params={"q": PERSON["mobile_phone"]}, headers=admin),
        client.get(f"/admin/people/{PERSON['email']}", headers=admin),
        client.get(f"/crm/{PERSON['last_name']}", headers=admin),
    ]  # fmt: skip
    for key in ("same-key", "same-key"):
        responses.append(
            client.post("/admin/contacts", json=PERSON, headers={**admin, "Idempotency-Key": key})
        )
    responses.append(
        client.get(f"/admin/audit/{responses[0].headers['x-audit-id']}", headers=admin)
    )

    # An unhandled database error whose message quotes the values: a 500, logged.
    with monkeypatch.context() as patch:
        patch.setattr(people_service, "create_person", _fail_with_the_values)
        responses.append(post("/admin/contacts", PERSON))
        assert responses[-1].status_code == 500

    # The audit record cannot be written, by an error quoting the request body: a 503, logged.
    def unwritable(session: Session, *, call: Any, **_kwargs: Any) -> None:
        session.execute(
            text("INSERT INTO no_such_table (a) VALUES (:body)"), {"body": call.request_body}
        )

    def unwritable_batch(session: Session, finished: list[Any], **_kwargs: Any) -> None:
        for item in finished:
            unwritable(session, call=item.call)

    def unstorable_rows(finished: list[Any], **options: Any) -> Any:
        # The records' rows with the request body where the status goes: PostgreSQL
        # refuses them quoting it (the group commit on the event loop, web.loop_db).
        rows, subject_rows = record_rows(finished, **options)
        at = RECORD_COLUMNS.index("response_status")
        bodies = [(item.call.request_body or b"").decode() for item in finished]
        refused = [
            (*row[:at], body, *row[at + 1 :]) for row, body in zip(rows, bodies, strict=True)
        ]
        return refused, subject_rows

    with monkeypatch.context() as patch:
        # A writing request's record is written with its work, others' by the middleware's
        # group commit (web.audit_batch: a thread, or on PostgreSQL the event loop) or alone.
        patch.setattr(runtime, "record_calls", unwritable_batch)
        patch.setattr(middleware, "record_calls", unwritable_batch)
        patch.setattr(audit_batch, "record_calls", unwritable_batch)
        patch.setattr(audit_batch, "record_rows", unstorable_rows)
        responses.append(post("/crm/modify", {"people_data": [{"ID": contact, **PERSON}]}))
        assert responses[-1].status_code == 503
    return responses


def test_no_personal_data_in_logs(
    logged: tuple[TestClient, io.StringIO],
    admin_headers: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, buffer = logged
    responses = _run_everything(client, admin_headers, monkeypatch)
    statuses = {response.status_code for response in responses}
    assert {200, 201, 400, 401, 404, 415, 500, 503} <= statuses, statuses

    written = buffer.getvalue()
    # The lines are there: one per request, and the two tracebacks.
    assert written.count("request") >= len(responses)
    assert "unhandled error" in written
    assert "audit record not stored" in written
    assert "Traceback" in written
    # What other loggers (libraries) wrote, at the levels the service runs with, as
    # Python's default formatter would print it. (pytest also hands the service's own
    # records to caplog, formatted its own way; those are checked above as written.)
    plain = logging.Formatter()
    others = "\n".join(
        plain.format(record) for record in caplog.records if not record.name.startswith("ridercrm")
    )
    for secret in SECRETS:
        assert secret not in written, f"{secret!r} was logged:\n{_around(written, secret)}"
        assert secret not in others, f"{secret!r} was logged:\n{_around(others, secret)}"


def _around(text_: str, secret: str) -> str:
    at = text_.find(secret)
    return text_[max(0, at - 300) : at + 300]


def test_serve_writes_no_access_log(
    db_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """uvicorn's access log would print every request line, query strings included
    (``GET /admin/people?q=Quillon%20Zbyszewski``); ``serve`` turns it off."""
    from ridercrm.web import server

    seen: dict[str, Any] = {}
    monkeypatch.setattr(
        server, "run", lambda config, sock: (seen.update(config=config), sock.close())
    )
    result = CliRunner().invoke(
        cli,
        ["serve", "--port", "0"],
        env={
            "RIDERCRM_DATABASE_URL": db_url,
            "RIDERCRM_ADMIN_KEY_FILE": str(tmp_path / "admin-key"),
            "RIDERCRM_CONSOLE_ADMIN_FILE": str(tmp_path / "console-admin"),
        },
    )
    assert result.exit_code == 0, result.output
    assert seen["config"].access_log is False
    assert seen["config"].log_level == "warning"
