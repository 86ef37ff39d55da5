"""The message sender: claims due messages, renders and sends them, records the outcome.

It runs in the deliverer process beside the webhook deliverer (``ridercrm deliver``, and
the deliverer thread of ``ridercrm serve``); several may run at once. A claim marks a
message ``sending`` with a lease, in a short write transaction (PostgreSQL: ``FOR UPDATE
SKIP LOCKED``; SQLite: the write lock), and stores what it will send (recipient,
subject, bodies). The SMTP or HTTP exchange happens outside any transaction; its outcome
is stored only if the claim is still this sender's. A sender killed mid-send leaves its
claim to expire: the message is sent once more, with the same Message-ID (e-mail) or
the same idempotency key (SMS), so a receiver can tell the two apart.
"""

from __future__ import annotations

import datetime as dt
import logging
import random
import smtplib
import ssl
import threading
import time
from dataclasses import dataclass
from email.message import EmailMessage
from urllib.parse import parse_qs, unquote, urlsplit

import httpx
import phonenumbers
from sqlalchemy import and_, or_, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm import __version__
from ridercrm.config import Settings, parse_schedule
from ridercrm.db import build_engine, session_factory, session_scope, utcnow
from ridercrm.events import service as events
from ridercrm.notifications import compose, timing
from ridercrm.notifications.models import (
    CANCELLED,
    CONFIRMATION,
    EMAIL,
    FAILED,
    MOVED,
    PENDING,
    REMINDER,
    SENDING,
    SENT,
    SKIPPED,
    SMS,
    UNSENT,
    Message,
    ReminderStop,
    is_open,
)
from ridercrm.notifications.templates import Template, TemplateProblem, current, render
from ridercrm.people.models import Person

log = logging.getLogger("ridercrm.notifications")

MESSAGE_SENT = events.MESSAGE_SENT
MESSAGE_FAILED = events.MESSAGE_FAILED
# One message a claim: a claim's lease covers the one exchange it was sized for (a batch
# sent in turn would outlive the leases of its last messages, which another sender would
# then send too). Messages are few next to webhooks; a claim is one short transaction.
BATCH = 1
POLL_SECONDS = 1.0
# Messages worth sending only before their course begins (not results, not digests).
BEFORE_THE_COURSE = (REMINDER, CONFIRMATION, MOVED, CANCELLED)


@dataclass(frozen=True)
class Job:
    """A claimed message: what to send to whom, under which claim (attempt number)."""

    message_id: int
    attempt: int
    channel: str
    recipient: str
    rendered: Template
    mail: EmailMessage | None = None
    idempotency_key: str = ""


@dataclass(frozen=True)
class Outcome:
    """What an attempt got: sent (with the provider's id), or why not, and whether a later
    attempt may do better."""

    sent: bool
    provider_id: str | None = None
    reason: str | None = None
    retry: bool = False


def e164(mobile: str | None, region: str = "AU") -> str | None:
    """A stored mobile number in E.164 (+61412345678), or None if it is not a valid one."""
    if not mobile:
        return None
    try:
        number = phonenumbers.parse(mobile, region)
    except phonenumbers.NumberParseException:
        return None
    if not phonenumbers.is_valid_number(number):
        return None
    return phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)


def landline(number: str) -> bool:
    """Whether a valid number in E.164 is a fixed line, which takes no SMS (a rider's
    landline typed as their mobile). A mobile, a number that may be either (North
    America's) or one of no known type is texted."""
    kind = phonenumbers.number_type(phonenumbers.parse(number))
    return bool(kind == phonenumbers.PhoneNumberType.FIXED_LINE)


class MessageSender:
    """Sends due messages until stopped."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session] | None = None) -> None:
        self.settings = settings
        self.sessions = sessions or session_factory(build_engine(settings))
        self.schedule = parse_schedule(settings.notify_retry_schedule)
        self.lease = dt.timedelta(seconds=settings.notify_lease_seconds)
        self.quiet = timing.QuietHours.parse(settings.sms_quiet_hours)
        self.poll_seconds = min(POLL_SECONDS, settings.webhook_poll_seconds * 4)

    # --- The loop ---------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Send until ``stop`` is set."""
        log.info("message sender started")
        while not stop.is_set():
            try:
                done = self.run_once()
            except Exception:
                # Outcomes not stored: their leases run out and they are sent again.
                log.exception("message sender round failed")
                done = 0
            if not done:
                stop.wait(self.poll_seconds)
        log.info("message sender stopped")

    def run_once(self) -> int:
        """Claim what is due now, send it, store the outcomes; return how many messages were
        handled (sent, or settled without sending: unsent, skipped, deferred)."""
        jobs, handled = self._claim(BATCH)
        for job in jobs:
            outcome = self.send_safely(job)
            self.settle(job, outcome)
        return handled

    def run_until_idle(self, timeout: float = 30.0) -> None:
        """Send until nothing is due (tests and one-shot runs)."""
        deadline = time.monotonic() + timeout
        while self.run_once():
            if time.monotonic() > deadline:
                raise TimeoutError("messages still due after the timeout")

    # --- Claims -----------------------------------------------------------------------

    def _due(self, now: dt.datetime, limit: int):  # type: ignore[no-untyped-def]
        due = or_(
            and_(Message.status == PENDING, Message.due_at <= now),
            and_(Message.status == SENDING, Message.lease_until <= now),
        )
        # Only the open rows, by due time: (status, due_at) on SQLite, the partial index on
        # PostgreSQL.
        return (
            select(Message)
            .where(is_open(Message.status), Message.due_at <= now, due)
            .order_by(Message.due_at, Message.id)
            .limit(limit)
        )

    def _anything_due(self) -> bool:
        # A look without the write lock: an idle SQLite sender never queues behind writers.
        with session_scope(self.sessions) as session:
            return session.execute(self._due(utcnow(), 1)).first() is not None

    def claim(self, limit: int) -> list[Job]:
        """Claim up to ``limit`` due messages; settle at once those that cannot be sent."""
        return self._claim(limit)[0]

    def _claim(self, limit: int) -> tuple[list[Job], int]:
        if not self._anything_due():
            return [], 0
        with session_scope(self.sessions, write=True) as session:
            now = utcnow()
            query = self._due(now, limit)
            if session.get_bind().dialect.name == "postgresql":
                query = query.with_for_update(skip_locked=True)
            jobs = []
            rows = session.scalars(query).all()
            for message in rows:
                job = self._claim_one(session, message, now)
                if job is not None:
                    jobs.append(job)
            return jobs, len(rows)

    def _claim_one(self, session: Session, message: Message, now: dt.datetime) -> Job | None:
        start = timing.course_start(message.course_datetime, message.location)
        if message.kind == REMINDER and session.get(ReminderStop, message.person_id) is not None:
            self._close(session, message, SKIPPED, "the person stopped reminders")
            return None
        if message.kind in BEFORE_THE_COURSE and start is not None and timing.to_utc(start) <= now:
            # A reminder, a confirmation, a move or a cancellation of a course that has
            # begun (a booking recorded after the fact) is moot, as the quiet hours' rule
            # below already says.
            self._close(session, message, SKIPPED, "the course had begun")
            return None
        if message.channel == SMS and self.quiet is not None:
            allowed = self.quiet.next_allowed(now, timing.site_zone(message.location))
            if allowed > now:
                # A message about the course that would arrive after it began is moot: a
                # reminder, and a confirmation, move or cancellation (its e-mail went).
                if (
                    message.kind in BEFORE_THE_COURSE
                    and start is not None
                    and timing.to_utc(start) <= allowed
                ):
                    self._close(
                        session, message, SKIPPED, "quiet hours last until the course begins"
                    )
                    return None
                message.status, message.due_at, message.lease_until = PENDING, allowed, None
                message.reason = "waiting for the end of the SMS quiet hours"
                return None
        person = session.get(Person, message.person_id) if message.person_id else None
        stop = ""
        if message.kind == REMINDER and message.person_id:
            secret = compose.link_secret(session, self.settings)
            stop = compose.stop_url(self.settings, compose.stop_token(secret, message.person_id))
        try:
            template, _edited = current(session, message.kind, message.channel)
            rendered = render(
                template, compose.context_for(session, message, self.settings, stop_url=stop)
            )
        except TemplateProblem as exc:
            self._close(session, message, FAILED, f"the template cannot render: {exc}")
            return None
        message.subject = rendered.subject or None
        message.body_text = rendered.text
        message.body_html = rendered.html or None
        if message.channel == EMAIL:
            # A staff digest has no person: its address was written with it.
            recipient = message.recipient if message.person_id is None else None
            recipient = recipient or (person.email if person is not None else None)
            if not recipient:
                self._close(session, message, UNSENT, "no e-mail address on record")
                return None
            # The domain as SMTP carries it (xn--): what is sent is what is kept.
            recipient = compose.smtp_address(recipient)
            message.recipient = recipient
            if not self.settings.smtp_url:
                self._close(
                    session, message, UNSENT, "no SMTP server: RIDERCRM_SMTP_URL is not set"
                )
                return None
            mail = compose.build_email(message, rendered, self.settings, to=recipient, stop=stop)
            job = Job(message.id, message.attempts + 1, EMAIL, recipient, rendered, mail=mail)
        else:
            mobile = person.mobile_phone if person is not None else None
            message.segments = timing.sms_length(rendered.text).segments
            if not mobile:
                # Cleared since the row was written: no address, as an e-mail without one.
                self._close(session, message, UNSENT, "no mobile number on record")
                return None
            number = e164(mobile)
            if number is None:
                shown = person.mobile_phone if person is not None else None
                self._close(
                    session, message, FAILED, f"mobile {shown!r} is not a valid phone number"
                )
                return None
            if landline(number):
                # Kept as stored (a landline is a phone number); no SMS goes to it.
                self._close(
                    session,
                    message,
                    UNSENT,
                    f"no mobile number on record: {mobile!r} is a landline",
                )
                return None
            message.recipient = number
            if not self.settings.sms_url:
                self._close(session, message, UNSENT, "no SMS gateway: RIDERCRM_SMS_URL is not set")
                return None
            job = Job(
                message.id,
                message.attempts + 1,
                SMS,
                number,
                rendered,
                idempotency_key=f"ridercrm-message-{message.key}",
            )
        message.status = SENDING
        message.attempts += 1
        message.lease_until = now + self.lease
        return job

    def _close(self, session: Session, message: Message, status: str, reason: str) -> None:
        message.status, message.reason, message.lease_until = status, reason, None
        if status == FAILED:
            _record(session, message, MESSAGE_FAILED)

    # --- Sending ----------------------------------------------------------------------

    def send_safely(self, job: Job) -> Outcome:
        """Send one claimed message; a bug in sending is a retryable outcome, not a lost claim."""
        try:
            return self.send_email(job) if job.channel == EMAIL else self.send_sms(job)
        except Exception as exc:
            log.exception("message send failed unexpectedly", extra={"message": job.message_id})
            return Outcome(sent=False, reason=f"internal error: {type(exc).__name__}", retry=True)

    def send_email(self, job: Job) -> Outcome:
        """Hand the e-mail to the SMTP server (:func:`send_email`)."""
        return send_email(self.settings, job)

    def send_sms(self, job: Job) -> Outcome:
        """POST the SMS to the gateway (Twilio's form: To, From, Body; basic auth).
        408, 429, 5xx and connection trouble: retry; another 4xx: refused."""
        settings = self.settings
        auth = (settings.sms_username, settings.sms_password) if settings.sms_username else None
        data = {"To": job.recipient, "Body": job.rendered.text}
        if settings.sms_from:
            data["From"] = settings.sms_from
        headers = {
            "user-agent": f"ridercrm-notifications/{__version__}",
            # Twilio's and most gateways' request idempotency: the same per message.
            "I-Twilio-Idempotency-Token": job.idempotency_key,
            "Idempotency-Key": job.idempotency_key,
        }
        try:
            response = httpx.post(
                settings.sms_url,
                data=data,
                auth=auth,
                headers=headers,
                timeout=settings.notify_timeout_seconds,
                follow_redirects=False,
            )
        except httpx.HTTPError as exc:
            return Outcome(sent=False, reason=f"SMS gateway: {type(exc).__name__}", retry=True)
        if 200 <= response.status_code < 300:
            sid = None
            try:
                body = response.json()
                sid = body.get("sid") if isinstance(body, dict) else None
            except ValueError:
                pass
            return Outcome(sent=True, provider_id=str(sid) if sid else job.idempotency_key)
        excerpt = " ".join(response.text[:200].split())
        reason = f"SMS gateway answered HTTP {response.status_code}: {excerpt}"[:500]
        retry = response.status_code in (408, 429) or response.status_code >= 500
        return Outcome(sent=False, reason=reason, retry=retry)

    # --- Outcomes ---------------------------------------------------------------------

    def retry_delay(self, attempt: int) -> dt.timedelta | None:
        """The wait after failed attempt ``attempt`` (1 is the first), with jitter; None: give up."""
        if attempt > len(self.schedule):
            return None
        return dt.timedelta(seconds=self.schedule[attempt - 1] * random.uniform(0.8, 1.2))

    def settle(self, job: Job, outcome: Outcome) -> None:
        """Store an attempt's outcome, if the claim is still ours."""
        with session_scope(self.sessions, write=True) as session:
            message = session.get(Message, job.message_id, with_for_update=True)
            if message is None or message.status != SENDING or message.attempts != job.attempt:
                return  # the lease ran out and another sender took it over
            now = utcnow()
            message.lease_until = None
            if outcome.sent:
                message.status, message.sent_at = SENT, now
                message.provider_id = outcome.provider_id
                message.reason = None
                _record(session, message, MESSAGE_SENT)
                return
            delay = self.retry_delay(job.attempt) if outcome.retry else None
            message.reason = outcome.reason
            if delay is None:
                message.status = FAILED
                _record(session, message, MESSAGE_FAILED)
                return
            message.status, message.due_at = PENDING, now + delay


def send_email(settings: Settings, job: Job) -> Outcome:
    """Hand the e-mail to the SMTP server. 4xx and connection trouble: retry; 5xx: refused.

    Connecting, greeting and signing in each have ``RIDERCRM_NOTIFY_TIMEOUT_SECONDS``.
    The message itself may wait longer for its reply: what is left of the claim's lease,
    less a second. A server slow to acknowledge the end of a message (content scanning;
    RFC 5321 allows it ten minutes) has already kept it, and a timeout there would send
    the rider a second copy at the retry.
    """
    assert job.mail is not None
    started = time.monotonic()
    url = urlsplit(settings.smtp_url)
    query = {k: v[-1].lower() for k, v in parse_qs(url.query).items()}
    timeout = settings.notify_timeout_seconds
    host = url.hostname or "localhost"
    try:
        smtp: smtplib.SMTP
        if url.scheme == "smtps":
            smtp = smtplib.SMTP_SSL(
                host, url.port or 465, timeout=timeout, context=ssl.create_default_context()
            )
        else:
            smtp = smtplib.SMTP(host, url.port or 25, timeout=timeout)
        with smtp:
            if query.get("starttls") in ("true", "1", "yes"):
                smtp.starttls(context=ssl.create_default_context())
            if url.username:
                smtp.login(unquote(url.username), unquote(url.password or ""))
            left = settings.notify_lease_seconds - (time.monotonic() - started) - 1.0
            if smtp.sock is not None and left > timeout:
                smtp.sock.settimeout(left)
            smtp.send_message(job.mail, to_addrs=[job.recipient])
    except smtplib.SMTPRecipientsRefused as exc:
        code, text = next(iter(exc.recipients.values()))
        return _smtp_refusal(code, text)
    except smtplib.SMTPResponseException as exc:
        return _smtp_refusal(exc.smtp_code, exc.smtp_error)
    except (smtplib.SMTPException, OSError) as exc:
        # An address whose local part is not ASCII (ännä@example.com) needs SMTPUTF8; a
        # server that does not offer it will not take it at a retry either.
        retry = not (isinstance(exc, smtplib.SMTPNotSupportedError) and "SMTPUTF8" in str(exc))
        return Outcome(sent=False, reason=f"SMTP: {type(exc).__name__}: {exc}"[:500], retry=retry)
    return Outcome(sent=True, provider_id=str(job.mail["Message-ID"]))


def _smtp_refusal(code: int, text: bytes | str) -> Outcome:
    shown = text.decode(errors="replace") if isinstance(text, bytes) else str(text)
    reason = f"SMTP server answered {code}: {' '.join(shown.split())}"[:500]
    return Outcome(sent=False, reason=reason, retry=not 500 <= code < 600)


def _record(session: Session, message: Message, event_type: str) -> None:
    """message.sent or message.failed, in the transaction that stores the outcome. A staff
    digest (no person) publishes none: the events are a person's (docs/events.md)."""
    if message.person_id is None:
        return
    session.flush()
    events.record(
        session,
        event_type=event_type,
        subject=events.subject_of(message.person_id),
        data={
            "message_id": message.id,
            "person_id": message.person_id,
            "course_id": message.asset_id,
            "channel": message.channel,
            "kind": message.kind,
            "status": message.status,
            "attempts": message.attempts,
            "reason": message.reason,
            "provider_id": message.provider_id,
        },
    )
