"""The console's notification pages: a person's messages and reminders setting, the
messages page with filters, one message as sent, the templates (admin, previewed,
validated on save), and the public stop-reminders page a reminder links to."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.models import AuditRecord
from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.notifications import compose
from ridercrm.notifications.models import FAILED, PENDING, SKIPPED, Message, MessageTemplate
from ridercrm.notifications.sender import MessageSender
from ridercrm.notifications.service import queue_digest
from ridercrm.people.models import Person
from tests.console.conftest import csrf
from tests.notifications.helpers import book, messages

DAYS = dt.timedelta(days=1)


def _send_all(settings: Settings, sessions: sessionmaker[Session]) -> None:
    MessageSender(settings.model_copy(update={"sms_quiet_hours": "off"}), sessions).run_until_idle()


def test_person_page_lists_messages_and_shows_what_was_sent(
    settings: Settings, sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    person_id, _asset = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _send_all(settings, sessions)  # no SMTP server: kept as unsent, rendered
    client = console_as("viewer")
    page = client.get(f"/console/people/{person_id}")
    assert page.status_code == 200
    assert "Booking confirmation" in page.text
    assert "no SMTP server: RIDERCRM_SMTP_URL is not set" in page.text
    assert "Reminders: <strong>on</strong>" in page.text
    [confirmation] = messages(sessions, kind="confirmation")
    shown = client.get(f"/console/messages/{confirmation.id}")
    assert shown.status_code == 200
    assert "Hi Ann," in shown.text
    assert 'class="preview"' in shown.text
    assert ' style="' not in shown.text  # the CSP allows no inline style: the preview was cramped
    assert "You&#39;re booked" in shown.text or "You're booked" in shown.text
    assert client.get("/console/messages/999999").status_code == 404
    assert client.get("/console/messages/abc").status_code == 404


def test_messages_page_filters(
    settings: Settings, sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _send_all(settings, sessions)
    client = console_as("viewer")
    unsent = client.get("/console/messages?status=unsent&period=today")
    assert unsent.status_code == 200
    assert "Booking confirmation" in unsent.text
    failed = client.get("/console/messages?status=failed&period=today")
    assert "No message matches." in failed.text
    pending = client.get("/console/messages?status=pending&kind=reminder")
    assert pending.text.count('<span class="badge">pending</span>') == 2
    # A reminder written days ago that failed today is among today's failures (the
    # period read the time it was written).
    with session_scope(sessions, write=True) as session:
        [reminder] = [m for m in session.scalars(select(Message)) if m.detail == "2h"]
        reminder.created_at = dt.datetime.now(dt.UTC) - 3 * DAYS
        reminder.status, reminder.reason = FAILED, "550 no such user"
    failed = client.get("/console/messages?status=failed&period=today")
    assert "550 no such user" in failed.text
    assert "today and the 6 days before" in failed.text
    bad = client.get("/console/messages?status=lost")
    assert bad.status_code == 400
    assert "status: no such value &#39;lost&#39;" in bad.text


def test_staff_stop_and_resume_reminders(
    sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    person_id, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    client = console_as("staff")
    stopped = client.post(
        f"/console/people/{person_id}/reminders", data={"csrf": csrf(client), "reminders": "off"}
    )
    assert stopped.status_code == 200
    assert "Reminders: <strong>stopped</strong>" in stopped.text
    reminders = messages(sessions, asset_id=asset_id, kind="reminder")
    assert {m.status for m in reminders} == {SKIPPED}
    assert {m.reason for m in reminders} == {"the person stopped reminders"}
    # Never touches the marketing consent.
    with session_scope(sessions) as session:
        person = session.get(Person, person_id)
        assert person is not None
        assert person.opt_in is True
        operations = [r.operation for r in session.scalars(select(AuditRecord))]
    assert "console.stop_reminders" in operations
    resumed = client.post(
        f"/console/people/{person_id}/reminders", data={"csrf": csrf(client), "reminders": "on"}
    )
    assert "Reminders: <strong>on</strong>" in resumed.text
    # A course booked from now on gets reminders again.
    _p, later = book(sessions, starts_in=9 * DAYS, person={"mobile_phone": None})
    assert {m.status for m in messages(sessions, asset_id=later, kind="reminder")} == {PENDING}


def test_the_signed_link_stops_reminders_without_sign_in(
    settings: Settings,
    sessions: sessionmaker[Session],
    make_client: Callable[..., TestClient],
) -> None:
    person_id, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    with session_scope(sessions, write=True) as session:
        token = compose.stop_token(compose.link_secret(session, settings), person_id)
    client = make_client()
    page = client.get(f"/console/stop-reminders/{token}")
    assert page.status_code == 200
    assert "Stop course reminders?" in page.text
    # Looking is not stopping (mail scanners follow links).
    assert {m.status for m in messages(sessions, asset_id=asset_id, kind="reminder")} == {PENDING}
    done = client.post(f"/console/stop-reminders/{token}")
    assert done.status_code == 200
    assert "Reminders stopped" in done.text
    assert {m.status for m in messages(sessions, asset_id=asset_id, kind="reminder")} == {SKIPPED}
    with session_scope(sessions) as session:
        records = [
            r
            for r in session.scalars(select(AuditRecord))
            if r.operation == "notify.stop_reminders"
        ]
    assert len(records) == 1
    assert records[0].staff_user == "rider (stop-reminders link)"
    assert person_id in (records[0].request_body or "")
    # A link this service did not sign names nobody.
    forged = compose.stop_token("another secret", person_id)
    assert client.get(f"/console/stop-reminders/{forged}").status_code == 404
    assert client.post(f"/console/stop-reminders/{forged}").status_code == 404
    assert client.get("/console/stop-reminders/garbage").status_code == 404


@pytest.mark.parametrize("form", ["multipart", "urlencoded"])
def test_one_click_stops_reminders_as_mail_providers_post_it(
    settings: Settings,
    sessions: sessionmaker[Session],
    make_client: Callable[..., TestClient],
    form: str,
) -> None:
    """RFC 8058: the one-click POST carries List-Unsubscribe=One-Click, which SHOULD be
    multipart/form-data (it was refused, 415) and MAY be urlencoded."""
    person_id, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    with session_scope(sessions, write=True) as session:
        token = compose.stop_token(compose.link_secret(session, settings), person_id)
    client = make_client()
    url = f"/console/stop-reminders/{token}"
    if form == "multipart":
        done = client.post(url, files={"List-Unsubscribe": (None, "One-Click")})
    else:
        done = client.post(url, data={"List-Unsubscribe": "One-Click"})
    assert done.status_code == 200, done.text
    assert {m.status for m in messages(sessions, asset_id=asset_id, kind="reminder")} == {SKIPPED}
    broken = client.post(
        url, content=b"not multipart", headers={"Content-Type": "multipart/form-data; boundary=x"}
    )
    assert broken.status_code == 400


def test_a_viewer_sees_no_stop_link_token_in_the_audit(
    settings: Settings,
    sessions: sessionmaker[Session],
    make_client: Callable[..., TestClient],
    console_as: Callable[..., TestClient],
) -> None:
    """Whoever holds a stop link may stop that rider's reminders: the audit page shows its
    token to staff (who may stop reminders anyway), never to a viewer."""
    person_id, _asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    with session_scope(sessions, write=True) as session:
        token = compose.stop_token(compose.link_secret(session, settings), person_id)
    assert make_client().post(f"/console/stop-reminders/{token}").status_code == 200
    with session_scope(sessions) as session:
        [record] = [
            r
            for r in session.scalars(select(AuditRecord))
            if r.operation == "notify.stop_reminders"
        ]
    assert token in record.path
    viewer, staff = console_as("viewer"), console_as("staff")
    seen = viewer.get(f"/console/audit/{record.id}")
    assert seen.status_code == 200
    assert token not in seen.text
    assert "stop-reminders/[redacted]" in seen.text
    assert token not in viewer.get("/console/audit").text
    assert token in staff.get(f"/console/audit/{record.id}").text


def test_templates_are_previewed_with_real_data_and_validated(
    sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    book(sessions, starts_in=5 * DAYS, person={"first_name": "Priya", "mobile_phone": None})
    client = console_as("admin")
    listing = client.get("/console/admin/templates")
    assert listing.status_code == 200
    page = client.get("/console/admin/templates/confirmation/email")
    assert page.status_code == 200
    assert "Hi Priya," in page.text  # the preview uses a real person
    assert ' style="' not in page.text
    token = csrf(client)
    broken = client.post(
        "/console/admin/templates/confirmation/email",
        data={"csrf": token, "action": "save", "subject": "Hi", "text": "{{ person.nickname }}"},
    )
    assert broken.status_code == 400
    assert "cannot render" in broken.text
    assert "{{ person.nickname }}" in broken.text  # what was typed is kept
    unclosed = client.post(
        "/console/admin/templates/confirmation/email",
        data={"csrf": token, "action": "save", "subject": "Hi", "text": "{% if x %}"},
    )
    assert unclosed.status_code == 400
    # Too long is refused whole, never saved cut (its end would be lost).
    long_text = "Hi {{ person.first_name }} " + "a" * 25_000 + " END"
    too_long = client.post(
        "/console/admin/templates/confirmation/email",
        data={"csrf": token, "action": "save", "subject": "S" * 804, "text": long_text},
    )
    assert too_long.status_code == 400
    assert "subject: at most 500 characters (received 804)" in too_long.text
    assert "text: at most 20,000 characters (received 25,031)" in too_long.text
    assert 'maxlength="20000"' in page.text
    with session_scope(sessions) as session:
        assert session.scalars(select(MessageTemplate)).all() == []
    saved = client.post(
        "/console/admin/templates/confirmation/email",
        data={
            "csrf": token,
            "action": "save",
            "subject": "See you soon, {{ person.first_name }}",
            "text": "G'day {{ person.first_name }}, {{ course.name }} at {{ course.site }}.",
            "html": "<p>G'day {{ person.first_name }}</p>",
        },
    )
    assert saved.status_code == 200
    assert "G&#39;day Priya, Learner Approved at Somerton." in saved.text
    with session_scope(sessions) as session:
        [stored] = session.scalars(select(MessageTemplate)).all()
        assert stored.subject == "See you soon, {{ person.first_name }}"
    # A viewer or staff user cannot edit templates.
    assert console_as("staff").get("/console/admin/templates").status_code == 403
    reset = client.post(
        "/console/admin/templates/confirmation/email", data={"csrf": token, "action": "reset"}
    )
    assert reset.status_code == 200
    with session_scope(sessions) as session:
        assert session.scalars(select(MessageTemplate)).all() == []
    assert client.get("/console/admin/templates/nothing/email").status_code == 404


def test_an_edited_template_is_what_is_sent(
    settings: Settings, sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    client = console_as("admin")
    client.post(
        "/console/admin/templates/confirmation/email",
        data={
            "csrf": csrf(client),
            "action": "save",
            "subject": "Booked: {{ course.name }}",
            "text": "Hello {{ person.first_name }} <b>",
            "html": "<p>Hello {{ person.first_name }}</p>",
        },
    )
    book(sessions, starts_in=5 * DAYS, person={"first_name": "<Zoe>", "mobile_phone": None})
    _send_all(settings, sessions)
    [row] = messages(sessions, kind="confirmation")
    assert row.subject == "Booked: Learner Approved"
    assert row.body_text == "Hello <Zoe> <b>"  # text is not escaped
    assert row.body_html == "<p>Hello &lt;Zoe&gt;</p>"  # HTML is


def test_metrics_count_messages_by_outcome(
    settings: Settings, sessions: sessionmaker[Session], client: TestClient
) -> None:
    book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _send_all(settings, sessions)
    text = client.get("/metrics").text
    assert 'ridercrm_messages_unsent_total{channel="email"} 1.0' in text
    assert 'ridercrm_messages_sent_total{channel="email"} 0.0' in text
    assert "ridercrm_messages_queue_depth 0.0" in text


def test_the_digest_template_is_previewed_with_a_real_digest(
    sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    listing = {
        "site": "Kilsyth",
        "date": "2027-03-02",
        "day": "Tuesday 2 March 2027",
        "sessions": [],
        "courses": [{"time": "9 am", "name": "Learner Approved", "riders": 1, "names": ["Ann"]}],
    }
    with session_scope(sessions, write=True) as session:
        queue_digest(
            session,
            site="kilsyth",
            day=dt.date(2027, 3, 2),
            recipient="kilsyth-desk@example.com",
            listing=listing,
        )
    client = console_as("admin")
    page = client.get("/console/admin/templates/digest/email")
    assert page.status_code == 200
    assert "Tomorrow at Kilsyth: Tuesday 2 March 2027" in page.text
    saved = client.post(
        "/console/admin/templates/digest/email",
        data={
            "csrf": csrf(client),
            "action": "save",
            "subject": "{{ digest.site }} tomorrow",
            "text": "{% for c in digest.courses %}{{ c.time }} {{ c.names|join(', ') }}{% endfor %}",
        },
    )
    assert saved.status_code == 200
    assert "9 am Ann" in saved.text


def test_a_viewer_reads_a_reminder_without_its_stop_link(
    settings: Settings, sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    """Whoever holds a stop link may stop the rider's reminders, and a viewer may not:
    the message page hides its token from a viewer, and shows it to staff."""
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    with session_scope(sessions, write=True) as session:  # the 2h reminder due now
        for row in session.scalars(
            select(Message).where(Message.asset_id == asset_id, Message.detail == "2h")
        ):
            row.due_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    public = {"sms_quiet_hours": "off", "public_url": "https://crm.rideright.example"}
    MessageSender(settings.model_copy(update=public), sessions).run_until_idle()
    [reminder] = [m for m in messages(sessions, kind="reminder") if m.body_text]
    assert "stop-reminders/" in reminder.body_text
    token = reminder.body_text.split("stop-reminders/")[1].split()[0]
    viewer = console_as("viewer").get(f"/console/messages/{reminder.id}")
    assert viewer.status_code == 200
    assert "stop-reminders/[redacted]" in viewer.text
    assert token not in viewer.text
    staff = console_as("staff").get(f"/console/messages/{reminder.id}")
    assert token in staff.text
