"""Message templates per kind and channel: the defaults, the edited ones, and rendering.

Jinja2 in a sandbox with undefined names refused, so a template that cannot render is
refused when an admin saves it, not sent broken. HTML is autoescaped; text and SMS are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jinja2 import StrictUndefined, TemplateError
from sqlalchemy.orm import Session

from ridercrm.db import utcnow
from ridercrm.errors import DomainError
from ridercrm.notifications import sandbox
from ridercrm.notifications.models import (
    CANCELLED,
    CONFIRMATION,
    DIGEST,
    EMAIL,
    KINDS,
    MOVED,
    REMINDER,
    RESULT,
    SMS,
    WAITLIST_OFFER,
    MessageTemplate,
)
from ridercrm.notifications.sandbox import Sandbox


@dataclass(frozen=True)
class Template:
    subject: str
    text: str
    html: str = ""


_SIGN_OFF_TEXT = "\n\nSee you on the range,\nThe team at {{ business }}\n"
_SIGN_OFF_HTML = "<p>See you on the range,<br>The team at {{ business }}</p>"
_COURSE_TEXT = (
    "Course:   {{ course.name }}\n"
    "When:     {{ course.starts }}{% if course.ends %} to {{ course.ends }}{% endif %}\n"
    "Where:    {{ course.site }}\n"
    "{% if course.booking_number %}Booking:  {{ course.booking_number }}\n{% endif %}"
)
_COURSE_HTML = (
    "<table><tr><th align='left'>Course</th><td>{{ course.name }}</td></tr>"
    "<tr><th align='left'>When</th><td>{{ course.starts }}"
    "{% if course.ends %} to {{ course.ends }}{% endif %}</td></tr>"
    "<tr><th align='left'>Where</th><td>{{ course.site }}</td></tr>"
    "{% if course.booking_number %}<tr><th align='left'>Booking</th>"
    "<td>{{ course.booking_number }}</td></tr>{% endif %}</table>"
)
_BRING = (
    "Please bring your learner permit or licence, sturdy boots that cover the ankle, long"
    " pants, a jacket and gloves. Helmets and bikes are provided if you need them."
)

DEFAULTS: dict[tuple[str, str], Template] = {
    (CONFIRMATION, EMAIL): Template(
        subject="You're booked: {{ course.name }} on {{ course.day }}",
        text=(
            "Hi {{ person.first_name }},\n\nThanks for booking with {{ business }}. Your place"
            " is confirmed:\n\n" + _COURSE_TEXT + "\n" + _BRING + "\n\nThe invitation attached"
            " adds the course to your calendar. If you can't make it, reply to this e-mail or"
            " call us and we'll find you another date." + _SIGN_OFF_TEXT
        ),
        html=(
            "<p>Hi {{ person.first_name }},</p><p>Thanks for booking with {{ business }}."
            " Your place is confirmed:</p>" + _COURSE_HTML + "<p>" + _BRING + "</p><p>The"
            " invitation attached adds the course to your calendar. If you can't make it,"
            " reply to this e-mail or call us and we'll find you another date.</p>" + _SIGN_OFF_HTML
        ),
    ),
    (MOVED, EMAIL): Template(
        subject="Your course has moved: {{ course.name }} on {{ course.day }}",
        text=(
            "Hi {{ person.first_name }},\n\nYour booking has been changed. The new details"
            " are:\n\n" + _COURSE_TEXT + "\nThe invitation attached updates the course in"
            " your calendar." + _SIGN_OFF_TEXT
        ),
        html=(
            "<p>Hi {{ person.first_name }},</p><p>Your booking has been changed. The new"
            " details are:</p>" + _COURSE_HTML + "<p>The invitation attached updates the"
            " course in your calendar.</p>" + _SIGN_OFF_HTML
        ),
    ),
    (CANCELLED, EMAIL): Template(
        subject="Cancelled: {{ course.name }} on {{ course.day }}",
        text=(
            "Hi {{ person.first_name }},\n\nYour booking below has been cancelled:\n\n"
            + _COURSE_TEXT
            + "\nIf this is a surprise, or you'd like another date, just reply or give us a"
            " call." + _SIGN_OFF_TEXT
        ),
        html=(
            "<p>Hi {{ person.first_name }},</p><p>Your booking below has been cancelled:</p>"
            + _COURSE_HTML
            + "<p>If this is a surprise, or you'd like another date, just reply or give us"
            " a call.</p>" + _SIGN_OFF_HTML
        ),
    ),
    (REMINDER, EMAIL): Template(
        subject="Reminder: {{ course.name }} {{ course.day }} at {{ course.time }}",
        text=(
            "Hi {{ person.first_name }},\n\nA reminder that your course is coming up:\n\n"
            + _COURSE_TEXT
            + "\n"
            + _BRING
            + " Please arrive 15 minutes early."
            + _SIGN_OFF_TEXT
            + "\nDon't want reminders? {{ stop_url }}\n"
        ),
        html=(
            "<p>Hi {{ person.first_name }},</p><p>A reminder that your course is coming"
            " up:</p>" + _COURSE_HTML + "<p>" + _BRING + " Please arrive 15 minutes"
            " early.</p>" + _SIGN_OFF_HTML + "<p><small><a href='{{ stop_url }}'>Stop"
            " reminders</a></small></p>"
        ),
    ),
    (RESULT, EMAIL): Template(
        subject="Your result: {{ course.name }}",
        text=(
            "Hi {{ person.first_name }},\n\n{% if course.passed %}Congratulations, you passed"
            " {{ course.name }} on {{ course.day }}. Your instructor will have told you the"
            " next steps for your licence.{% else %}Thanks for riding with us on"
            " {{ course.day }}. This time you didn't pass {{ course.name }}; your instructor"
            " has gone through what to work on. Reply or call us to book another go —"
            " most riders get there on the next try.{% endif %}" + _SIGN_OFF_TEXT
        ),
        html=(
            "<p>Hi {{ person.first_name }},</p>{% if course.passed %}<p>Congratulations, you"
            " passed {{ course.name }} on {{ course.day }}. Your instructor will have told"
            " you the next steps for your licence.</p>{% else %}<p>Thanks for riding with"
            " us on {{ course.day }}. This time you didn't pass {{ course.name }}; your"
            " instructor has gone through what to work on. Reply or call us to book another"
            " go — most riders get there on the next try.</p>{% endif %}" + _SIGN_OFF_HTML
        ),
    ),
    (WAITLIST_OFFER, EMAIL): Template(
        subject="A place has opened: {{ course.name }} on {{ course.day }}",
        text=(
            "Hi {{ person.first_name }},\n\nGood news: a place has opened on a course you"
            " were waiting for, and we're holding it for you until {{ offered_until }}.\n\n"
            + _COURSE_TEXT
            + "\nBook it on our website or call us before then; after that it goes to the"
            " next rider on the list." + _SIGN_OFF_TEXT
        ),
        html=(
            "<p>Hi {{ person.first_name }},</p><p>Good news: a place has opened on a course"
            " you were waiting for, and we're holding it for you until"
            " <strong>{{ offered_until }}</strong>.</p>" + _COURSE_HTML + "<p>Book it on our"
            " website or call us before then; after that it goes to the next rider on the"
            " list.</p>" + _SIGN_OFF_HTML
        ),
    ),
    (DIGEST, EMAIL): Template(
        subject="Tomorrow at {{ digest.site }}: {{ digest.day }}",
        text=(
            "Tomorrow at {{ digest.site }}, {{ digest.day }}\n\n"
            "{% if digest.sessions %}"
            "{% for s in digest.sessions %}"
            "{{ s.time }}{% if s.ends %} to {{ s.ends }}{% endif %}  {{ s.name }}"
            "{% if s.status == 'cancelled' %} (cancelled){% endif %}\n"
            "    {{ s.booked }} booked"
            "{% if s.seats is not none %} of {{ s.seats }} seats{% endif %}"
            "{% if s.held %}, {{ s.held }} held for the waiting list{% endif %}"
            ", {{ s.waiting }} waiting\n"
            "{% endfor %}"
            "{% elif digest.courses %}"
            "No sessions are scheduled; these courses are booked:\n"
            "{% for c in digest.courses %}"
            "{{ c.time }}  {{ c.name }}: {{ c.riders }} rider{{ '' if c.riders == 1 else 's' }}"
            " ({{ c.names|join(', ') }})\n"
            "{% endfor %}"
            "{% else %}Nothing is booked.\n{% endif %}"
            "\n{{ business }}\n"
        ),
        html=(
            "<p><strong>Tomorrow at {{ digest.site }}</strong>, {{ digest.day }}</p>"
            "{% if digest.sessions %}<table><tr><th align='left'>Time</th>"
            "<th align='left'>Course</th><th>Booked</th><th>Seats</th><th>Waiting</th></tr>"
            "{% for s in digest.sessions %}<tr><td>{{ s.time }}"
            "{% if s.ends %} to {{ s.ends }}{% endif %}</td><td>{{ s.name }}"
            "{% if s.status == 'cancelled' %} (cancelled){% endif %}</td>"
            "<td align='right'>{{ s.booked }}</td>"
            "<td align='right'>{{ '—' if s.seats is none else s.seats }}</td>"
            "<td align='right'>{{ s.waiting }}</td></tr>{% endfor %}</table>"
            "{% elif digest.courses %}<p>No sessions are scheduled; these courses are"
            " booked:</p><ul>{% for c in digest.courses %}<li>{{ c.time }} {{ c.name }}:"
            " {{ c.names|join(', ') }}</li>{% endfor %}</ul>"
            "{% else %}<p>Nothing is booked.</p>{% endif %}<p>{{ business }}</p>"
        ),
    ),
    (CONFIRMATION, SMS): Template(
        subject="",
        text=(
            "{{ business }}: you're booked on {{ course.name }}, {{ course.day }}"
            " {{ course.time }} at {{ course.site }}. Reply or call us if you can't make it."
        ),
    ),
    (MOVED, SMS): Template(
        subject="",
        text=(
            "{{ business }}: your course has moved to {{ course.day }} {{ course.time }} at"
            " {{ course.site }} ({{ course.name }})."
        ),
    ),
    (CANCELLED, SMS): Template(
        subject="",
        text=(
            "{{ business }}: your booking for {{ course.name }} on {{ course.day }} is"
            " cancelled. Call us to pick another date."
        ),
    ),
    (REMINDER, SMS): Template(
        subject="",
        text=(
            "{{ business }}: reminder, {{ course.name }} {{ course.day }} {{ course.time }} at"
            " {{ course.site }}. Bring your permit, boots and gloves. Stop reminders:"
            " {{ stop_url }}"
        ),
    ),
    (RESULT, SMS): Template(
        subject="",
        text=(
            "{{ business }}: {% if course.passed %}congratulations, you passed"
            " {{ course.name }}!{% else %}thanks for riding with us. Call us to book your"
            " next go at {{ course.name }}.{% endif %}"
        ),
    ),
    (WAITLIST_OFFER, SMS): Template(
        subject="",
        text=(
            "{{ business }}: a place on {{ course.name }} {{ course.day }} is held for you"
            " until {{ offered_until }}. Book online or call us."
        ),
    ),
    (DIGEST, SMS): Template(
        subject="",
        text=(
            "{{ business }}: tomorrow at {{ digest.site }}, {{ digest.sessions|length }}"
            " session(s), {{ digest.sessions|sum(attribute='booked') }} booked."
        ),
    ),
}
assert all((kind, channel) in DEFAULTS for kind in KINDS for channel in (EMAIL, SMS))

# The sandbox bounds what a template may ask for: numbers, repeats, loops, widths, sizes
# (notifications/sandbox.py).
_TEXT = Sandbox(undefined=StrictUndefined, autoescape=False, keep_trailing_newline=True)
_HTML = Sandbox(undefined=StrictUndefined, autoescape=True)


class TemplateProblem(DomainError, ValueError):
    """A template that cannot render; the message says where and why."""


def current(session: Session, kind: str, channel: str) -> tuple[Template, bool]:
    """The template in use for a kind and channel, and whether an admin edited it."""
    stored = session.get(MessageTemplate, (kind, channel))
    if stored is None:
        return DEFAULTS[(kind, channel)], False
    return Template(stored.subject, stored.body_text, stored.body_html), True


def render(template: Template, context: dict[str, Any]) -> Template:
    """The rendered subject, text and HTML; raise TemplateProblem when one cannot render."""
    parts = []
    for name, source, env in (
        ("subject", template.subject, _TEXT),
        ("text", template.text, _TEXT),
        ("html", template.html, _HTML),
    ):
        try:
            with sandbox.budget():
                parts.append(sandbox.render(env, source, context) if source else "")
        except TemplateError as exc:
            line = getattr(exc, "lineno", None)
            where = f" (line {line})" if line else ""
            raise TemplateProblem(f"{name}{where}: {exc.message or exc}") from None
        except Exception as exc:  # 1/0, 'a' + 1, {% include %}: the template's fault too
            # the reason in words, as a template's author reads it (not Python's class name)
            raise TemplateProblem(f"{name}: {exc or 'the template failed'}") from None
    subject, text, html = parts
    return Template(" ".join(subject.split()), text, html)


def check(*, kind: str, channel: str, template: Template, sample: dict[str, Any]) -> None:
    """Raise TemplateProblem when ``template`` cannot render with ``sample`` or has nothing
    to send. Call it before the transaction that saves it: a render takes no write turn."""
    if (kind, channel) not in DEFAULTS:
        raise TemplateProblem(f"no message kind {kind!r} on channel {channel!r}")
    rendered = render(template, sample)
    if not rendered.text.strip():
        raise TemplateProblem("text: the message would be empty")
    if channel == EMAIL and not rendered.subject:
        raise TemplateProblem("subject: an e-mail needs a subject")


def save(
    session: Session,
    *,
    kind: str,
    channel: str,
    template: Template,
    staff_user: str,
) -> None:
    """Store an edited template, which :func:`check` accepted."""
    if (kind, channel) not in DEFAULTS:
        raise TemplateProblem(f"no message kind {kind!r} on channel {channel!r}")
    stored = session.get(MessageTemplate, (kind, channel))
    if stored is None:
        stored = MessageTemplate(kind=kind, channel=channel)
        session.add(stored)
    stored.subject = template.subject
    stored.body_text = template.text
    stored.body_html = template.html
    stored.updated_by = staff_user
    stored.updated_at = utcnow()
    session.flush()


def reset(session: Session, *, kind: str, channel: str) -> None:
    """Go back to the default template."""
    stored = session.get(MessageTemplate, (kind, channel))
    if stored is not None:
        session.delete(stored)
        session.flush()
