"""The sender against a real SMTP server (aiosmtpd) and a real HTTP SMS gateway: what
arrives, parsed as a mail client and a calendar would read it."""

from __future__ import annotations

import base64
import datetime as dt
from email.message import EmailMessage
from typing import Any
from urllib.parse import parse_qs

import icalendar
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.plans import sqlite_engine, sqlite_plan
from testkit.receiver import Receiver
from testkit.smtp import Mailbox, smtp_server

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.events.models import Event
from ridercrm.ids import RecordKind, new_id
from ridercrm.notifications.models import FAILED, PENDING, SENT, SKIPPED, UNSENT
from ridercrm.notifications.sender import MessageSender, e164
from ridercrm.notifications.service import stop_reminders
from ridercrm.notifications.timing import site_zone
from ridercrm.people.models import Person
from ridercrm.people.modify import modify_people
from tests.notifications.helpers import book, change, listen, messages, wall_time

DAYS = dt.timedelta(days=1)


def _sender(settings: Settings, sessions: sessionmaker[Session], **changes: Any) -> MessageSender:
    values = {
        "sms_quiet_hours": "off",
        "notify_retry_schedule": "0,0",
        "notify_from": "Ride Right Training <bookings@rideright.example>",
        "public_url": "https://crm.rideright.example",
        **changes,
    }
    return MessageSender(Settings(**{**settings.model_dump(), **values}), sessions)


def _calendar(mail: EmailMessage) -> tuple[icalendar.Calendar, Any]:
    parts = [part for part in mail.walk() if part.get_content_type() == "text/calendar"]
    assert len(parts) == 1
    calendar = icalendar.Calendar.from_ical(parts[0].get_payload(decode=True))
    events = calendar.walk("VEVENT")
    assert len(events) == 1
    return calendar, events[0]


def test_confirmation_email_with_invitation(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    start = messages(sessions, asset_id=asset_id)[0].course_datetime
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [mail] = mailbox.wait_for(1)
    assert mail["To"] == "ann.nguyen@example.com"
    assert mail["From"].addresses[0].addr_spec == "bookings@rideright.example"
    assert mail["Subject"].startswith("You're booked: Learner Approved on ")
    assert mail["Date"] is not None
    assert "List-Unsubscribe" not in mail  # confirmations are not reminders
    # multipart/mixed: the alternatives (text, HTML), then the invitation.
    assert mail.get_content_type() == "multipart/mixed"
    body = mail.get_body(preferencelist=("plain",))
    html = mail.get_body(preferencelist=("html",))
    assert body is not None
    assert html is not None
    assert "Hi Ann," in body.get_content()
    assert "<p>Hi Ann,</p>" in html.get_content()
    calendar, event = _calendar(mail)
    assert str(calendar["METHOD"]) == "REQUEST"
    assert str(event["UID"]) == f"course-{asset_id}@rideright.example"
    assert int(event["SEQUENCE"]) == 0
    # DTSTART is the site's local wall time with its TZID, and a VTIMEZONE describes it.
    assert event["DTSTART"].params["TZID"] == "Australia/Melbourne"
    assert event.decoded("DTSTART").strftime("%Y-%m-%d %H:%M:%S") == start
    assert [str(tz["TZID"]) for tz in calendar.walk("VTIMEZONE")] == ["Australia/Melbourne"]
    # The stored row says what was sent and carries the Message-ID.
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert row.status == SENT
    assert row.attempts == 1
    assert row.provider_id == mail["Message-ID"]
    assert row.provider_id == f"<{row.key}@rideright.example>"
    assert row.subject == mail["Subject"]
    assert "Hi Ann," in (row.body_text or "")


def test_brisbane_invitation_keeps_brisbane_time(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    _person, asset_id = book(
        sessions, starts_in=5 * DAYS, site="slacks creek", person={"mobile_phone": None}
    )
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    _cal, event = _calendar(mailbox.wait_for(1)[0])
    assert event["DTSTART"].params["TZID"] == "Australia/Brisbane"
    local = messages(sessions, asset_id=asset_id)[0].course_datetime
    assert event.decoded("DTSTART").strftime("%Y-%m-%d %H:%M:%S") == local
    assert event.decoded("DTSTART").utcoffset() == dt.timedelta(hours=10)


def test_move_and_cancellation_update_the_same_invitation(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    sender = _sender(settings, sessions, smtp_url=mailbox.url)
    sender.run_until_idle()
    new_start = wall_time(8 * DAYS)
    change(sessions, asset_id, course_datetime=new_start)
    sender.run_until_idle()
    change(sessions, asset_id, course_status="cancelled")
    sender.run_until_idle()
    booked, moved, cancelled = mailbox.wait_for(3)
    uids = {str(_calendar(mail)[1]["UID"]) for mail in (booked, moved, cancelled)}
    assert uids == {f"course-{asset_id}@rideright.example"}
    assert moved["Subject"].startswith("Your course has moved")
    _cal, moved_event = _calendar(moved)
    assert int(moved_event["SEQUENCE"]) == 1
    assert moved_event.decoded("DTSTART").strftime("%Y-%m-%d %H:%M:%S") == new_start
    cancel_calendar, cancel_event = _calendar(cancelled)
    assert str(cancel_calendar["METHOD"]) == "CANCEL"
    assert str(cancel_event["STATUS"]) == "CANCELLED"
    assert int(cancel_event["SEQUENCE"]) == 2
    assert cancelled["Subject"].startswith("Cancelled:")


def test_ipswich_riders_read_ipswich_not_the_interfaces_spelling(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    """The interface spells the site "ipswitch"; the e-mail, its invitation's LOCATION
    and (through the same context) the SMS told riders "Ipswitch"."""
    book(sessions, starts_in=5 * DAYS, site="ipswitch", person={"mobile_phone": None})
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [mail] = mailbox.wait_for(1)
    body = mail.get_body(preferencelist=("plain",))
    assert body is not None
    assert "Ipswich" in body.get_content()
    assert "Ipswitch" not in body.get_content()
    _calendar_of, event = _calendar(mail)
    assert str(event["LOCATION"]) == "Ipswich"


def test_a_course_written_as_a_day_alone_is_told_by_its_day(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    """Operation 1 takes "2026-12-19" for a course's start. Its messages said "on" with
    nothing after, "When: to be confirmed", the invitation had no DTSTART, and the staff
    digest and the day sheet did not list it."""
    from ridercrm.courses.daysheet import day_sheet
    from ridercrm.rosters.digest import listing

    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    mailbox.wait_for(1)
    change(sessions, asset_id, course_datetime="2026-12-19", course_date_end="2026-12-19")
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    moved = mailbox.wait_for(2)[-1]
    assert moved["Subject"].endswith(" on Sat 19 Dec"), moved["Subject"]
    body = moved.get_body(preferencelist=("plain",))
    assert body is not None
    assert "Saturday 19 December 2026, time to be confirmed" in body.get_content()
    _calendar_of, event = _calendar(moved)
    assert event.decoded("DTSTART") == dt.date(2026, 12, 19)  # an all-day event
    assert event.decoded("DTEND") == dt.date(2026, 12, 20)
    with session_scope(sessions) as session:
        listed = listing(session, "somerton", dt.date(2026, 12, 19))
        assert [(c["time"], c["riders"]) for c in listed["courses"]] == [
            ("time to be confirmed", 1)
        ], listed
        assert listing(session, "somerton", dt.date(2026, 12, 18))["courses"] == []
        sheet = day_sheet(session, site="somerton", day=dt.date(2026, 12, 19))
        assert [r.asset_id for g in sheet.groups for r in g.riders] == [asset_id]


def test_a_course_that_has_begun_is_not_announced(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    """A booking recorded after the fact (a course of last June) sent the rider "You're
    booked" with an invitation, then "Cancelled" when it was tidied away."""
    _person, asset_id = book(sessions, starts_in=-150 * DAYS)
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    change(sessions, asset_id, course_status="cancelled")
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    told = {
        (m.kind, m.channel): (m.status, m.reason)
        for m in messages(sessions, asset_id=asset_id)
        if m.kind != "reminder"
    }
    begun = (SKIPPED, "the course had begun")
    assert told == {
        ("confirmation", "email"): begun,
        ("confirmation", "sms"): begun,
        ("cancelled", "email"): begun,
        ("cancelled", "sms"): begun,
    }
    assert mailbox.envelopes == []


def test_reminder_carries_a_stop_link(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    # Make the 2h reminder due now, as the clock would two hours before the course.
    with session_scope(sessions, write=True) as session:
        for row in session.scalars(select_reminders(asset_id, "2h")):
            row.due_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    mails = {mail["Subject"].split(":")[0]: mail for mail in mailbox.wait_for(2)}
    reminder = mails["Reminder"]
    link = reminder["List-Unsubscribe"].strip("<>")
    assert link.startswith("https://crm.rideright.example/console/stop-reminders/")
    # On the wire as written, one line: folded into RFC 2047 encoded words (=?utf-8?q?...)
    # the link was unreadable to mail programs, which do not decode this header.
    raw = next(content for _f, _t, content in mailbox.envelopes if b"Subject: Reminder" in content)
    assert f"\r\nList-Unsubscribe: <{link}>\r\n".encode() in raw.replace(b"\r\n", b"\n").replace(
        b"\n", b"\r\n"
    )
    assert reminder["List-Unsubscribe-Post"] == "List-Unsubscribe=One-Click"
    body = reminder.get_body(preferencelist=("plain",))
    assert body is not None
    assert link in body.get_content()
    assert not [p for p in reminder.walk() if p.get_content_type() == "text/calendar"]


def select_reminders(asset_id: str, label: str):  # type: ignore[no-untyped-def]
    from ridercrm.notifications.models import Message

    return select(Message).where(
        Message.asset_id == asset_id, Message.kind == "reminder", Message.detail == label
    )


def test_without_smtp_messages_are_kept_as_unsent(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _sender(settings, sessions, smtp_url="").run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert row.status == UNSENT
    assert row.reason == "no SMTP server: RIDERCRM_SMTP_URL is not set"
    # Still rendered, so staff see what it would have said.
    assert row.subject
    assert row.subject.startswith("You're booked")


def test_an_address_with_an_international_domain_goes_in_its_ascii_form(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    """Stored with its domain in Unicode (operation 1 normalises ann@xn--exmple-cua.com
    so), the address is sent with the domain in IDNA form, so a server that does not offer
    SMTPUTF8 takes it: smtplib refused to send it there, and the message was retried for
    hours, then failed."""
    _person, asset_id = book(
        sessions, starts_in=5 * DAYS, person={"email": "ann@exämple.com", "mobile_phone": None}
    )
    with smtp_server(smtputf8=False) as mailbox:
        _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert (row.status, row.attempts, row.reason) == (SENT, 1, None)
    assert row.recipient == "ann@xn--exmple-cua.com"
    [(_from, to, _content)] = mailbox.envelopes
    assert to == ["ann@xn--exmple-cua.com"]
    [mail] = mailbox.messages
    assert mail["To"] == "ann@xn--exmple-cua.com"
    _cal, event = _calendar(mail)
    assert str(event["ATTENDEE"]) == "mailto:ann@xn--exmple-cua.com"


def test_a_non_ascii_mailbox_name_fails_at_once_where_the_server_lacks_smtputf8(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    """ännä@example.com has no ASCII form: a server that does not offer SMTPUTF8 never
    takes it, so the message fails with the reason at the first attempt (it was retried
    for hours as a passing failure); one that offers it gets it."""
    person = {"email": "ännä@example.com", "mobile_phone": None}
    _person, refused = book(sessions, starts_in=5 * DAYS, person=person)
    with smtp_server(smtputf8=False) as mailbox:
        _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [row] = messages(sessions, asset_id=refused, kind="confirmation")
    assert (row.status, row.attempts) == (FAILED, 1)
    assert "SMTPUTF8" in (row.reason or "")
    assert mailbox.envelopes == []
    _person, taken = book(sessions, starts_in=5 * DAYS, person=person)
    with smtp_server() as mailbox:
        _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [row] = messages(sessions, asset_id=taken, kind="confirmation")
    assert (row.status, row.recipient) == (SENT, "ännä@example.com")
    assert [to for _from, to, _content in mailbox.envelopes] == [["ännä@example.com"]]


def test_a_refused_address_fails_with_the_reason_and_an_event(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    listen(sessions, "message.sent", "message.failed")
    mailbox.refuse("550 5.1.1 <ann.nguyen@example.com>: mailbox unavailable")
    person_id, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert row.status == FAILED
    assert row.attempts == 1
    assert "550" in (row.reason or "")
    assert "mailbox unavailable" in (row.reason or "")
    assert mailbox.envelopes == []
    with session_scope(sessions) as session:
        payloads = [e.payload for e in session.scalars(select(Event))]
    failed = [p for p in payloads if p["type"] == "message.failed"]
    assert [p["data"]["message_id"] for p in failed] == [row.id]
    assert failed[0]["data"]["person_id"] == person_id


def test_a_passing_refusal_is_retried(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    listen(sessions, "message.sent", "message.failed")
    mailbox.refuse("451 4.3.0 try again later")
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert row.status == SENT
    assert row.attempts == 2
    assert len(mailbox.wait_for(1)) == 1
    with session_scope(sessions) as session:
        types = [e.type for e in session.scalars(select(Event))]
    assert types.count("message.sent") == 1


def test_a_server_slow_to_acknowledge_a_message_gets_one_copy(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    """The server keeps the message, then takes longer than the timeout to say so (content
    scanning): the sender waits for the reply within its lease rather than retrying, so
    the rider gets one copy, not two."""
    mailbox.delay = 1.5
    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    sender = _sender(
        settings, sessions, smtp_url=mailbox.url, notify_timeout_seconds=0.5,
        notify_lease_seconds=10,
    )  # fmt: skip
    sender.run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    assert row.status == SENT
    assert row.attempts == 1
    assert len(mailbox.envelopes) == 1


def test_connection_failures_are_retried_then_failed(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    from testkit.serve import free_port

    _person, asset_id = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    sender = _sender(settings, sessions, smtp_url=f"smtp://127.0.0.1:{free_port()}")
    sender.run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation")
    # The schedule "0,0": two retries after the first attempt, then failed, kept.
    assert row.status == FAILED
    assert row.attempts == 3
    assert "SMTP" in (row.reason or "")


def test_sms_goes_to_the_gateway_in_twilio_form(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS)
    _sender(
        settings,
        sessions,
        sms_url=gateway.url,
        sms_username="AC123",
        sms_password="token",
        sms_from="+61400000000",
    ).run_until_idle()
    [request] = gateway.wait_for(1)
    form = {name: values[0] for name, values in parse_qs(request.body.decode()).items()}
    assert form["To"] == "+61412345678"  # E.164 from the stored "0412 345 678"
    assert form["From"] == "+61400000000"
    assert "you're booked on Learner Approved" in form["Body"]
    assert request.headers["authorization"] == "Basic " + base64.b64encode(b"AC123:token").decode()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert row.status == SENT
    assert row.recipient == "+61412345678"
    assert row.segments == 1


def test_an_sms_for_a_rider_whose_mobile_was_cleared_is_unsent_not_failed(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    """The SMS rows were written while the rider had a mobile; cleared since (operation 2),
    there is no address, as an e-mail without one: unsent with the reason, and no
    message.failed event (it was failed, "mobile None is not a valid phone number")."""
    listen(sessions, "message.sent", "message.failed")
    person_id, asset_id = book(sessions, starts_in=5 * DAYS)
    with session_scope(sessions, write=True) as session:
        answer = modify_people(
            session,
            items=[{"ID": person_id, "mobile_phone": None, "home_phone": "03 9876 5432"}],
            audit_id=new_id(RecordKind.AUDIT),
        )
        assert answer.status, answer
    _sender(settings, sessions, sms_url=gateway.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert (row.status, row.reason) == (UNSENT, "no mobile number on record")
    assert gateway.requests == []
    with session_scope(sessions) as session:
        types = [e.type for e in session.scalars(select(Event))]
    assert "message.failed" not in types


def test_an_sms_for_a_landline_in_the_mobile_field_is_unsent_and_the_number_kept(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    """A rider who typed their landline as their mobile: it is a valid number, stored as
    given, but takes no SMS. It was sent to the gateway; it is unsent with the reason, as
    an SMS with no mobile at all, and no message.failed event."""
    listen(sessions, "message.sent", "message.failed")
    person_id, asset_id = book(
        sessions, starts_in=5 * DAYS, person={"mobile_phone": "03 9876 5432"}
    )
    _sender(settings, sessions, sms_url=gateway.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert row.status == UNSENT
    assert row.reason is not None
    assert row.reason.startswith("no mobile number on record: ")
    assert row.reason.endswith(" is a landline")
    assert gateway.requests == []
    with session_scope(sessions) as session:
        person = session.get(Person, person_id)
        assert person is not None
        assert person.mobile_phone is not None
        assert e164(person.mobile_phone) == "+61398765432"
        types = [e.type for e in session.scalars(select(Event))]
    assert "message.failed" not in types


def test_sms_gateway_refusal_is_kept_with_its_reason(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    gateway.answer(400)
    _person, asset_id = book(sessions, starts_in=5 * DAYS)
    _sender(settings, sessions, sms_url=gateway.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert row.status == FAILED
    assert (row.reason or "").startswith("SMS gateway answered HTTP 400")


def test_sms_gateway_errors_are_retried(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    gateway.answer(503)
    _person, asset_id = book(sessions, starts_in=5 * DAYS)
    _sender(settings, sessions, sms_url=gateway.url).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert row.status == SENT
    assert row.attempts == 2
    # Both attempts carried the same idempotency key.
    keys = {r.headers["i-twilio-idempotency-token"] for r in gateway.requests}
    assert keys == {f"ridercrm-message-{row.key}"}


def _quiet_now(site: str) -> str:
    """Quiet hours around the present moment at the site: an hour ago to an hour ahead."""
    now = dt.datetime.now(site_zone(site))
    begin = (now - dt.timedelta(hours=1)).strftime("%H:%M")
    end = (now + dt.timedelta(hours=1)).strftime("%H:%M")
    return f"{begin}-{end}"


def test_sms_waits_for_the_end_of_quiet_hours(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    _person, asset_id = book(sessions, starts_in=5 * DAYS, site="ipswitch")
    _sender(
        settings, sessions, sms_url=gateway.url, sms_quiet_hours=_quiet_now("ipswitch")
    ).run_until_idle()
    assert gateway.requests == []
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert row.status == PENDING
    assert row.attempts == 0
    end = dt.datetime.now(site_zone("ipswitch")) + dt.timedelta(hours=1)
    local_due = row.due_at.astimezone(site_zone("ipswitch"))
    assert local_due.strftime("%H:%M") == end.strftime("%H:%M")
    # The e-mail is not held by the SMS quiet hours.
    [mail_row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="email")
    assert mail_row.status == UNSENT  # no SMTP server in this test


def test_a_reminder_in_quiet_hours_until_the_course_is_skipped(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    # A course 30 minutes away with a 20-minute reminder, due while the quiet hours last
    # an hour more: it would reach the rider after the course began, so it is skipped.
    _person, asset_id = book(
        sessions, starts_in=dt.timedelta(minutes=30), site="somerton", reminders="20m"
    )
    with session_scope(sessions, write=True) as session:
        for row in session.scalars(select_reminders(asset_id, "20m")):
            row.due_at = dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1)
    _sender(
        settings, sessions, sms_url=gateway.url, sms_quiet_hours=_quiet_now("somerton")
    ).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="reminder", channel="sms")
    assert row.status == SKIPPED
    assert row.reason == "quiet hours last until the course begins"
    assert gateway.requests == []


def test_an_sms_confirmation_held_past_the_course_start_is_skipped(
    settings: Settings, sessions: sessionmaker[Session], gateway: Receiver
) -> None:
    # Booked in the evening for a course 30 minutes away while the quiet hours last an
    # hour more: the SMS confirmation would arrive after the course began.
    _person, asset_id = book(
        sessions, starts_in=dt.timedelta(minutes=30), site="somerton", reminders=""
    )
    _sender(
        settings, sessions, sms_url=gateway.url, sms_quiet_hours=_quiet_now("somerton")
    ).run_until_idle()
    [row] = messages(sessions, asset_id=asset_id, kind="confirmation", channel="sms")
    assert row.status == SKIPPED
    assert row.reason == "quiet hours last until the course begins"
    assert gateway.requests == []
    # One for a course after the quiet hours still waits for their end.
    _person, later = book(sessions, starts_in=5 * DAYS, site="somerton", reminders="")
    _sender(
        settings, sessions, sms_url=gateway.url, sms_quiet_hours=_quiet_now("somerton")
    ).run_until_idle()
    [row] = messages(sessions, asset_id=later, kind="confirmation", channel="sms")
    assert row.status == PENDING


def test_a_waiting_list_seat_offer(
    settings: Settings, sessions: sessionmaker[Session], mailbox: Mailbox
) -> None:
    from ridercrm.notifications.service import queue_seat_offer

    person_id, _asset = book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    offered_until = dt.datetime(2026, 12, 3, 6, 0, tzinfo=dt.UTC)  # 17:00 in Melbourne
    with session_scope(sessions, write=True) as session:
        product_id = messages(sessions)[0].product_id
        assert product_id is not None
        [offer] = queue_seat_offer(
            session,
            person_id=person_id,
            product_id=product_id,
            location="kilsyth",
            course_datetime="2026-12-05 08:30:00",
            offered_until=offered_until,
        )
        assert offer.kind == "waitlist_offer"
    _sender(settings, sessions, smtp_url=mailbox.url).run_until_idle()
    mails = [m for m in mailbox.wait_for(2) if m["Subject"].startswith("A place has opened")]
    assert len(mails) == 1
    body = mails[0].get_body(preferencelist=("plain",))
    assert body is not None
    text = body.get_content()
    assert "Thursday 3 December 2026, 5 pm" in text
    assert "Kilsyth" in text
    assert not [p for p in mails[0].walk() if p.get_content_type() == "text/calendar"]


def test_the_sender_reads_only_the_open_messages_that_are_due(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    """The sender polls every second: SQLite (no statistics) read every open message,
    reminders due in months included, through the status index and sorted them. By
    (status, due_at) it reads the due ones. PostgreSQL plans by its statistics."""
    engine = sqlite_engine(sessions)
    book(sessions, starts_in=40 * DAYS)
    sender = _sender(settings, sessions)
    plan = sqlite_plan(engine, sender._anything_due, "SELECT messages.id")
    assert "ix_messages_status_due (status=? AND due_at<?)" in plan, plan


def test_stopping_reminders_reads_the_person_s_messages_not_every_pending_one(
    sessions: sessionmaker[Session],
) -> None:
    """The stop link and the staff's person page skip a person's queued reminders: by the
    person and the status, not by the status alone (every pending message of the store)."""
    engine = sqlite_engine(sessions)
    person_id, asset_id = book(sessions, starts_in=40 * DAYS)

    def stop() -> None:
        with session_scope(sessions, write=True) as session:
            assert stop_reminders(session, person_id=person_id, stopped_by="a test")

    plan = sqlite_plan(engine, stop, "UPDATE messages")
    assert "ix_messages_person_status (person_id=? AND status=?)" in plan, plan
    reminders = messages(sessions, asset_id=asset_id, kind="reminder")
    assert reminders
    assert {m.status for m in reminders} == {SKIPPED}
