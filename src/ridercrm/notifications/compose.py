"""What a message says: its template's context from the person and course, the e-mail
(text and HTML with an iCalendar invitation) and the SMS text."""

from __future__ import annotations

import datetime as dt
import email.policy
import email.utils
import secrets
from email.headerregistry import Address
from email.message import EmailMessage
from typing import Any

import icalendar
from email_validator import EmailNotValidError, validate_email
from itsdangerous import BadSignature, URLSafeSerializer
from sqlalchemy.orm import Session

from ridercrm import fields
from ridercrm.config import Settings
from ridercrm.notifications import timing
from ridercrm.notifications.models import (
    CANCELLED,
    CONFIRMATION,
    DIGEST,
    MOVED,
    REMINDER,
    RESULT,
    WAITLIST_OFFER,
    Message,
    NotificationSecret,
)
from ridercrm.notifications.templates import Template
from ridercrm.people.models import Person
from ridercrm.products.models import Product

INVITATION_KINDS = (CONFIRMATION, MOVED, CANCELLED)
STOP_SALT = "ridercrm.stop-reminders"
_SECRET_NAME = "stop-reminders"  # noqa: S105 - the row's name, not a secret


def _when(local: dt.datetime) -> str:
    hour = local.strftime("%I:%M %p").lstrip("0").lower()
    return hour.replace(":00 ", " ")


def _starts(local: dt.datetime) -> str:
    return f"{day_text(local.date())}, {_when(local)}"


def course_context(
    *,
    product_name: str,
    location: str | None,
    course_datetime: str | None,
    course_date_end: str | None,
    booking_number: str | None,
    status: str | None,
) -> dict[str, Any]:
    """The ``course`` of a template: its name, site and times in the site's wall time."""
    start = timing.course_start(course_datetime, location)
    end = timing.course_start(course_date_end, location)
    if start is not None and end is not None and end <= start:
        end = None  # an end before the start (operation 1 takes it as sent) is not shown
    same_day = start is not None and end is not None and end.date() == start.date()
    # A course written as a day alone: its day is known, its time is not.
    day = start.date() if start is not None else timing.course_day(course_datetime)
    if start is not None:
        starts, time = _starts(start), _when(start)
    elif day is not None:
        starts = f"{day_text(day)}, time to be confirmed"
        time = "(time to be confirmed)"
    else:
        starts, time = "to be confirmed", ""
    return {
        "name": product_name,
        # The site as people read it: Ipswich, not the interface's "ipswitch".
        "site": fields.display_name(location) if location else "Our Training Ground",
        "starts": starts,
        "ends": (_when(end) if same_day else _starts(end)) if end else "",
        "day": f"{day.strftime('%a')} {day.day} {day.strftime('%b')}" if day else "",
        "time": time,
        "booking_number": booking_number or "",
        "passed": status == "completed - pass",
    }


def context_for(
    session: Session, message: Message, settings: Settings, *, stop_url: str = ""
) -> dict[str, Any]:
    """A message's template context, from its person and the course as written in it."""
    person = session.get(Person, message.person_id) if message.person_id else None
    product = session.get(Product, message.product_id) if message.product_id else None
    offered_until = ""
    if message.kind == WAITLIST_OFFER and message.detail:
        until = dt.datetime.fromisoformat(message.detail).astimezone(
            timing.site_zone(message.location)
        )
        offered_until = _starts(until)
    return {
        "business": settings.notify_business,
        "person": {
            "first_name": (person.first_name if person else None) or "there",
            "last_name": person.last_name if person else "",
        },
        "course": course_context(
            product_name=product.name if product else "your course",
            location=message.location,
            course_datetime=message.course_datetime,
            course_date_end=message.course_date_end,
            booking_number=message.booking_number,
            status=message.detail if message.kind == RESULT else None,
        ),
        "stop_url": stop_url,
        "offered_until": offered_until,
        # A staff digest lists its day; other messages (and previews) get the sample's.
        "digest": message.data if message.kind == DIGEST and message.data else SAMPLE_DIGEST,
    }


def sample_context(settings: Settings) -> dict[str, Any]:
    """A context with every name a template may use (for checks without real data)."""
    return {
        "business": settings.notify_business,
        "person": {"first_name": "Ann", "last_name": "Nguyen"},
        "course": course_context(
            product_name="Learner Approved",
            location="somerton",
            course_datetime="2026-12-05 08:30:00",
            course_date_end="2026-12-05 16:30:00",
            booking_number="HB-102938",
            status="completed - pass",
        ),
        "stop_url": stop_url(settings, "sample"),
        "offered_until": "Friday 4 December 2026, 5 pm",
        "digest": SAMPLE_DIGEST,
    }


def day_text(day: dt.date) -> str:
    """A day as the messages write it: "Saturday 5 December 2026"."""
    return f"{day.strftime('%A')} {day.day} {day.strftime('%B %Y')}"


def digest_session(
    *,
    product_name: str,
    location: str,
    course_datetime: str,
    course_date_end: str | None,
    seats: int | None,
    booked: int,
    held: int,
    waiting: int,
    status: str,
) -> dict[str, Any]:
    """One session of a staff digest, with its times in the site's wall time."""
    course = course_context(
        product_name=product_name,
        location=location,
        course_datetime=course_datetime,
        course_date_end=course_date_end,
        booking_number=None,
        status=None,
    )
    return {
        "time": course["time"],
        "ends": course["ends"],
        "name": product_name,
        "seats": seats,
        "booked": booked,
        "held": held,
        "waiting": waiting,
        "status": status,
    }


def digest_course(
    *, product_name: str, location: str, course_datetime: str, names: list[str]
) -> dict[str, Any]:
    """One course start of a staff digest (a site without sessions): who is booked."""
    start = timing.course_start(course_datetime, location)
    return {
        "time": _when(start) if start else "time to be confirmed",
        "name": product_name,
        "riders": len(names),
        "names": names,
    }


# What a template can use as ``digest`` (a staff digest of tomorrow at a site).
SAMPLE_DIGEST: dict[str, Any] = {
    "site": "Somerton",
    "date": "2026-12-05",
    "day": "Saturday 5 December 2026",
    "sessions": [
        {
            "time": "8:30 am",
            "ends": "4:30 pm",
            "name": "Learner Approved",
            "seats": 12,
            "booked": 11,
            "held": 1,
            "waiting": 2,
            "status": "confirmed",
        }
    ],
    "courses": [],
}


# --- The signed stop-reminders link ------------------------------------------------------


def link_secret(session: Session, settings: Settings) -> str:
    """RIDERCRM_NOTIFY_SECRET, else the database's own (made once, kept)."""
    if settings.notify_secret:
        return settings.notify_secret
    stored = session.get(NotificationSecret, _SECRET_NAME)
    if stored is None:
        stored = NotificationSecret(name=_SECRET_NAME, value=secrets.token_urlsafe(32))
        session.add(stored)
        session.flush()
    return stored.value


def stop_token(secret: str, person_id: str) -> str:
    return str(URLSafeSerializer(secret, salt=STOP_SALT).dumps(person_id))


def read_stop_token(secret: str, token: str) -> str | None:
    """The person a stop link is for, or None if it was not signed by this service."""
    try:
        value = URLSafeSerializer(secret, salt=STOP_SALT).loads(token)
    except BadSignature:
        return None
    return value if isinstance(value, str) else None


def stop_url(settings: Settings, token: str) -> str:
    """The stop-reminders page: a console page open to anyone with the signed link."""
    return f"{settings.public_url.rstrip('/')}{settings.base_path}/console/stop-reminders/{token}"


# --- E-mail ------------------------------------------------------------------------------


def sender_address(settings: Settings) -> tuple[str, str]:
    """The From's display name and address."""
    name, address = email.utils.parseaddr(settings.notify_from)
    return name, address or "bookings@localhost"


def smtp_address(address: str) -> str:
    """An address as an SMTP server without SMTPUTF8 takes it: its domain in IDNA (xn--)
    form. Addresses are stored with the domain in Unicode (``fields`` normalises
    ``ann@xn--exmple-cua.com`` to ``ann@exämple.com``), which smtplib refuses to send to
    such a server. A non-ASCII local part has no ASCII form and is left as it is
    (docs/decisions.md, "Sessions and messages under adversarial use")."""
    if address.isascii():
        return address
    try:
        checked = validate_email(address, check_deliverability=False)
    except EmailNotValidError:
        return address
    return f"{checked.local_part}@{checked.ascii_domain}"


def message_id(message: Message, settings: Settings) -> str:
    """The Message-ID, the same at every attempt of the row: a resend is recognisable."""
    domain = sender_address(settings)[1].rpartition("@")[2] or "localhost"
    return f"<{message.key}@{domain}>"


def invitation(message: Message, settings: Settings, *, summary: str, attendee: str) -> bytes:
    """The course as an iCalendar invitation: one UID per course, SEQUENCE bumped by each
    move, METHOD:CANCEL when cancelled; DTSTART in the site's zone with its VTIMEZONE."""
    domain = sender_address(settings)[1].rpartition("@")[2] or "localhost"
    cancel = message.kind == CANCELLED
    calendar = icalendar.Calendar()
    calendar.add("prodid", "-//ridercrm//notifications//EN")
    calendar.add("version", "2.0")
    calendar.add("method", "CANCEL" if cancel else "REQUEST")
    event = icalendar.Event()
    event.add("uid", f"course-{message.asset_id or message.key}@{domain}")
    event.add("sequence", message.sequence)
    event.add("dtstamp", dt.datetime.now(dt.UTC))
    start = timing.course_start(message.course_datetime, message.location)
    end = timing.course_start(message.course_date_end, message.location)
    day = timing.course_day(message.course_datetime)
    if start is not None:
        event.add("dtstart", start)
        event.add(
            "dtend", end if end is not None and end > start else start + dt.timedelta(hours=8)
        )
    elif day is not None:
        # A day alone: an all-day event (a REQUEST needs a DTSTART; it had none).
        event.add("dtstart", day)
        event.add("dtend", day + dt.timedelta(days=1))
    event.add("summary", summary)
    event.add("location", fields.display_name(message.location))
    event.add("status", "CANCELLED" if cancel else "CONFIRMED")
    name, address = sender_address(settings)
    organizer = icalendar.vCalAddress(f"mailto:{address}")
    organizer.params["cn"] = icalendar.vText(name or settings.notify_business)
    event.add("organizer", organizer)
    event.add("attendee", icalendar.vCalAddress(f"mailto:{attendee}"))
    calendar.add_component(event)
    calendar.add_missing_timezones()
    return bytes(calendar.to_ical())


# The default policy, but a header given as written (``set_raw``) is sent as written, not
# refolded when longer than 78 characters (up to SMTP's 998 still).
_POLICY = email.policy.default.clone(refold_source="none")


def build_email(
    message: Message, rendered: Template, settings: Settings, *, to: str, stop: str = ""
) -> EmailMessage:
    """The e-mail: plain text and HTML alternatives, the invitation for bookings, moves and
    cancellations, and the headers (Message-ID, Date, List-Unsubscribe on reminders)."""
    mail = EmailMessage(policy=_POLICY)
    name, address = sender_address(settings)
    mail["From"] = Address(display_name=name, addr_spec=address) if name else address
    mail["To"] = to
    mail["Subject"] = rendered.subject
    mail["Message-ID"] = message_id(message, settings)
    mail["Date"] = email.utils.format_datetime(dt.datetime.now(dt.UTC))
    if message.kind == REMINDER and stop:
        if stop.isascii() and stop.isprintable():
            # As written: folded, the long link became RFC 2047 encoded words, which
            # RFC 2369 does not allow there and mail programs do not read.
            mail.set_raw("List-Unsubscribe", f"<{stop}>")
        else:
            mail["List-Unsubscribe"] = f"<{stop}>"
        mail["List-Unsubscribe-Post"] = "List-Unsubscribe=One-Click"
    mail.set_content(rendered.text)
    if rendered.html:
        mail.add_alternative(rendered.html, subtype="html")
    if message.kind in INVITATION_KINDS and message.course_datetime:
        method = "CANCEL" if message.kind == CANCELLED else "REQUEST"
        mail.add_attachment(
            invitation(message, settings, summary=rendered.subject, attendee=to),
            maintype="text",
            subtype="calendar",
            filename="course.ics",
            params={"method": method},
        )
    return mail
