"""Console pages of notifications: the messages list, one message as sent, the message
templates (admin), and the public stop-reminders page. What the person page shows of
notifications is read here (``person_messages``); its reminders form is in people.py."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm.audit.redact import without_stop_tokens
from ridercrm.notifications import compose, templates
from ridercrm.notifications import service as notifications
from ridercrm.notifications.models import CHANNELS, KINDS, STATUSES, Message
from ridercrm.people import service as people_service
from ridercrm.people.models import Person
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit
from ridercrm.web.runtime import app_context

router = ConsoleRouter()

KIND_LABELS = {
    "confirmation": "Booking confirmation",
    "moved": "Course moved",
    "cancelled": "Cancellation",
    "reminder": "Reminder",
    "result": "Result",
    "waitlist_offer": "Waiting-list seat offer",
    "digest": "Staff digest",
}


@router.page("/messages", role="viewer", name="messages")
async def messages_page(visit: Visit) -> Response:
    """Messages, newest first, filtered by status, channel, kind and day (e.g. failed today)."""
    status = visit.query("status", 20)
    channel = visit.query("channel", 20)
    kind = visit.query("kind", 20)
    period = visit.query("period", 20)
    problems = [
        f"{name}: no such value {value!r}"
        for name, value, allowed in (
            ("status", status, STATUSES),
            ("channel", channel, CHANNELS),
            ("kind", kind, KINDS),
            ("period", period, ("today", "week")),
        )
        if value and value not in allowed
    ]
    since = None
    if period in ("today", "week") and not problems:
        # Today and the week are the business's days (RIDERCRM_TIMEZONE), as staff live them.
        zone = frame.services_of(visit.request).settings.zone
        today = dt.datetime.now(zone).replace(hour=0, minute=0, second=0, microsecond=0)
        since = (today if period == "today" else today - dt.timedelta(days=6)).astimezone(dt.UTC)
    rows = (
        []
        if problems
        else await visit.read(
            lambda session: notifications.find_messages(
                session, status=status, channel=channel, kind=kind, since=since
            )
        )
    )
    return visit.render(
        "messages.html",
        {
            "rows": rows,
            "filters": {"status": status, "channel": channel, "kind": kind, "period": period},
            "statuses": STATUSES,
            "channels": CHANNELS,
            "kinds": KINDS,
            "labels": KIND_LABELS,
            "problems": problems,
        },
        status=400 if problems else 200,
    )


@router.page("/messages/{message_id}", role="viewer", name="message")
async def message_page(visit: Visit, message_id: str) -> Response:
    """One message as it was sent (or would have been): subject, text, HTML, status."""
    found = frame.database_id(message_id)
    if found is None:
        raise frame.ConsoleRefusal(404, f"There is no message {message_id[:40]}.")
    row = await visit.read(lambda session: session.get(Message, found))
    if row is None:
        raise frame.ConsoleRefusal(404, f"There is no message {message_id}.")
    # Whoever holds a stop link may stop the rider's reminders and a viewer may not, so a
    # viewer reads the message with its token hidden, as on the audit record page.
    shown = (lambda text: text) if visit.user.may("staff") else without_stop_tokens
    return visit.render(
        "message.html",
        {
            "m": row,
            "body_text": shown(row.body_text or ""),
            "body_html": shown(row.body_html or ""),
            "labels": KIND_LABELS,
        },
    )


def person_messages(session: Session, person_id: str) -> dict[str, Any]:
    """What the person page shows of notifications: their messages and reminders setting."""
    return {
        "messages": notifications.messages_of(session, person_id, limit=100),
        "reminders_stopped": notifications.reminders_stopped(session, person_id),
        "kind_labels": KIND_LABELS,
    }


# --- The public stop-reminders page (the link in every reminder) ---------------------


async def _secret(visit: Visit) -> str:
    settings = app_context(visit.request).settings
    if settings.notify_secret:
        return settings.notify_secret
    from ridercrm.db import session_scope

    def read_or_make() -> str:
        with session_scope(app_context(visit.request).sessions, write=True) as session:
            return compose.link_secret(session, settings)

    from starlette.concurrency import run_in_threadpool

    return await run_in_threadpool(read_or_make)


async def _stop_target(visit: Visit, token: str) -> Person:
    person_id = compose.read_stop_token(await _secret(visit), token[:200])
    person = await visit.read(lambda session: session.get(Person, person_id)) if person_id else None
    if person is None:
        raise frame.ConsoleRefusal(
            404, "This link is not valid. Copy the whole link from the reminder, or call us."
        )
    return person


def _stop_ids(session: Session, person_id: str) -> list[str]:
    """The record a link names and the live record it stands for now (a lead converted or a
    record merged since the reminder was sent): reminders go to either."""
    try:
        live = people_service.resolve(session, person_id)
    except people_service.UnresolvableId:
        live = None
    return list(dict.fromkeys([person_id, *([live.id] if live else [])]))


@router.page("/stop-reminders/{token}", role=None, name="stop_reminders")
async def stop_page(visit: Visit, token: str) -> Response:
    """The page a reminder links to: one button stops reminders (no sign-in)."""
    person = await _stop_target(visit, token)
    stopped = await visit.read(
        lambda session: all(
            notifications.reminders_stopped(session, i) for i in _stop_ids(session, person.id)
        )
    )
    return visit.render(
        "stop_reminders.html",
        {"first_name": person.first_name, "token": token, "stopped": stopped},
    )


@router.form("/stop-reminders/{token}", role=None, csrf=False, audit="notify.stop_reminders")
async def stop(posted: Posted, token: str) -> Response:
    """Stop reminders for the person the signed link names (also RFC 8058 one-click)."""
    person = await _stop_target(posted, token)

    def work(session: Session) -> Any:
        ids = _stop_ids(session, person.id)
        changed = [
            notifications.stop_reminders(
                session, person_id=i, stopped_by="the rider (link in a reminder)"
            )
            for i in ids
        ]
        return {
            "person_id": person.id,
            "stopped_for": ids,
            "reminders": "off",
            "changed": any(changed),
        }

    done = await posted.change(
        asked={"ID": person.id}, work=work, actor="rider (stop-reminders link)"
    )
    if not done.ok:
        raise frame.ConsoleRefusal(400, "Reminders could not be stopped; please call us.")
    return posted.render(
        "stop_reminders.html", {"first_name": person.first_name, "token": token, "stopped": True}
    )


# --- Templates (admin) ---------------------------------------------------------------


def _preview_source(session: Session, kind: str, channel: str) -> Message:
    """A real message to preview with: the newest of this kind (any channel), else the newest
    message with a course; else a made-up one (a store with no message yet)."""
    for query in (
        select(Message).where(Message.kind == kind).order_by(Message.id.desc()).limit(1),
        select(Message).where(Message.asset_id.is_not(None)).order_by(Message.id.desc()).limit(1),
    ):
        found = session.scalars(query).first()
        if found is not None:
            preview = Message(**{c: getattr(found, c) for c in _COPIED})
            preview.kind, preview.channel = kind, channel
            if kind == "result" and preview.detail not in ("completed - pass", "completed - fail"):
                preview.detail = "completed - pass"
            if kind == "waitlist_offer":
                until = dt.datetime.now(dt.UTC) + dt.timedelta(hours=24)
                preview.detail = until.isoformat(timespec="minutes")
            return preview
    raise LookupError


_COPIED = (
    "key",
    "person_id",
    "asset_id",
    "product_id",
    "location",
    "course_datetime",
    "course_date_end",
    "booking_number",
    "sequence",
    "detail",
    "data",
)


def _context(session: Session, visit: Visit, kind: str, channel: str) -> dict[str, Any]:
    settings = app_context(visit.request).settings
    try:
        source = _preview_source(session, kind, channel)
    except LookupError:
        return compose.sample_context(settings)
    stop = compose.stop_url(settings, "preview")
    return compose.context_for(session, source, settings, stop_url=stop)


def _check(kind: str, channel: str) -> None:
    if kind not in KINDS or channel not in CHANNELS:
        raise frame.ConsoleRefusal(404, f"There is no template for {kind[:40]} by {channel[:10]}.")


@router.page("/admin/templates", role="admin", name="templates")
async def templates_page(visit: Visit) -> Response:
    """Every message template: kind and channel, edited or the default."""
    edited = await visit.read(
        lambda session: {
            (kind, channel): templates.current(session, kind, channel)[1]
            for kind in KINDS
            for channel in CHANNELS
        }
    )
    return visit.render(
        "templates.html",
        {"kinds": KINDS, "channels": CHANNELS, "edited": edited, "labels": KIND_LABELS},
    )


TEMPLATE_LIMITS = {"subject": 500, "text": 20_000, "html": 50_000}
"""The most characters a template's subject, text and HTML may hold (the form says so)."""


async def _template_page(
    visit: Visit,
    kind: str,
    channel: str,
    *,
    entered: templates.Template | None = None,
    problem: str | None = None,
    done: Done | None = None,
) -> Response:
    def gather(session: Session) -> dict[str, Any]:
        template, edited = templates.current(session, kind, channel)
        shown = entered or template
        context = _context(session, visit, kind, channel)
        try:
            preview: templates.Template | None = templates.render(shown, context)
            trouble = problem
        except templates.TemplateProblem as exc:
            preview, trouble = None, problem or str(exc)
        return {"template": shown, "edited": edited, "preview": preview, "problem": trouble}

    context = await visit.read(gather)
    return visit.render(
        "template.html",
        {
            **context,
            "kind": kind,
            "channel": channel,
            "labels": KIND_LABELS,
            "limits": TEMPLATE_LIMITS,
            "done": done,
        },
        status=400 if (problem or (done and not done.ok)) else 200,
    )


@router.page("/admin/templates/{kind}/{channel}", role="admin", name="template")
async def template_page(visit: Visit, kind: str, channel: str) -> Response:
    """Edit one template, with a preview rendered from a real person and course."""
    _check(kind, channel)
    return await _template_page(visit, kind, channel)


@router.form(
    "/admin/templates/{kind}/{channel}",
    role="admin",
    audit=lambda form: (
        "console.reset_template" if form.get("action") == "reset" else "console.save_template"
    ),
)
async def save_template(posted: Posted, kind: str, channel: str) -> Response:
    """Save a template if it renders (else say why and keep what was typed), or reset it."""
    _check(kind, channel)
    form = posted.form
    entered = templates.Template(
        subject=form.get("subject", ""),
        text=form.get("text", ""),
        html=form.get("html", "") if channel == "email" else "",
    )
    # Refused whole, never cut: a template saved without its end would send riders half
    # a message (it was cut silently before 2026-11-28).
    too_long = [
        f"{name}: at most {limit:,} characters (received {len(value):,})"
        for name, value, limit in (
            ("subject", entered.subject, TEMPLATE_LIMITS["subject"]),
            ("text", entered.text, TEMPLATE_LIMITS["text"]),
            ("html", entered.html, TEMPLATE_LIMITS["html"]),
        )
        if len(value) > limit
    ]
    staff = posted.user.name
    reset = form.get("action") == "reset"

    def check(session: Session) -> str | None:
        try:
            sample = _context(session, posted, kind, channel)
            templates.check(kind=kind, channel=channel, template=entered, sample=sample)
        except templates.TemplateProblem as exc:
            return str(exc)
        return None

    # Rendered in a read, before the write transaction: a slow template never holds the
    # database's write turn (SQLite has one).
    problem: str | None = None
    if too_long:
        problem = "; ".join(too_long)
    elif not reset:
        problem = await posted.read(check)

    def work(session: Session) -> Any:
        if reset:
            templates.reset(session, kind=kind, channel=channel)
            return {"kind": kind, "channel": channel, "reset": True}
        if too_long:
            raise frame.ConsoleProblem(f"the template is not saved: {problem}")
        if problem is not None:
            raise frame.ConsoleProblem(f"the template cannot render: {problem}")
        templates.save(session, kind=kind, channel=channel, template=entered, staff_user=staff)
        return {"kind": kind, "channel": channel, "saved": True}

    done = await posted.change(
        asked={"kind": kind, "channel": channel, **entered.__dict__}, work=work
    )
    if done.ok:
        return await _template_page(posted, kind, channel, done=done)
    return await _template_page(posted, kind, channel, entered=entered, done=done)
