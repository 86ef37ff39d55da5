"""Templates an admin types are the template's problem, never the service's: a template
that raises (1/0, 'a' + 1, an include) is refused on save with the reason, and one that
fails only on some rider's data fails that message, not the sender's round. Numbers and
repeats are bounded so a template cannot hold a worker or its memory."""

from __future__ import annotations

import datetime as dt
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.notifications import templates
from ridercrm.notifications.models import FAILED, MessageTemplate
from ridercrm.notifications.sender import MessageSender
from tests.console.conftest import csrf
from tests.notifications.helpers import book, messages

DAYS = dt.timedelta(days=1)


@pytest.mark.parametrize(
    "text",
    [
        "{{ 1 / 0 }}",
        "{{ 'a' + 1 }}",
        "{{ '%s %s' % (1,) }}",
        "{% include 'other' %}",
        "{{ 2 ** 100000 }}",
        "{{ 'x' * 1000000 }}",
        "{{ 64 ** 64 ** 64 ** 64 }}",
        # nested loops, widths and growth: each would, larger, hold a worker or its memory
        "{% for a in range(2000) %}{% for b in range(2000) %}{% endfor %}{% endfor %}done",
        "{{ '%0100000d' % 1 }}",
        "{{ '%0100000d'|format(1) }}",
        "{{ '%*d' % (100000, 1) }}",
        "{{ '{:>100000}'.format(1) }}",
        "{{ 'x'.ljust(100000) }}",
        "{{ 'x'|center(100000) }}",
        "{{ 'x'|indent(100000, true) }}",
        "{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}"
        "{% endfor %}{{ ns.s|length }}",
        "{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s + ns.s %}"
        "{% endfor %}{{ ns.s|length }}",
        "{{ (['x' * 5000] * 100)|join }}",
        "{{ ('x' * 5000).replace('x', 'yyyyyyyyyyyyyyyyyyyyyyyyyy') }}",
        "{% macro f(n) %}{% if n %}{{ f(n - 1) }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(16) }}done",
        "{% for a in [1] recursive %}{% if loop.depth < 50 %}{{ loop([1]) }}{% endif %}{% endfor %}done",
        "{% for i in range(2000) %}{{ 'x' * 100 }}{% endfor %}",
    ],
)
def test_a_template_that_raises_is_refused_on_save(
    text: str, sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    client = console_as("admin")
    answer = client.post(
        "/console/admin/templates/confirmation/email",
        data={"csrf": csrf(client), "action": "save", "subject": "Hi", "text": text},
    )
    assert answer.status_code == 400
    assert "cannot render" in answer.text
    with session_scope(sessions) as session:
        assert session.scalars(select(MessageTemplate)).all() == []


def test_a_save_renders_the_template_outside_the_write_transaction(
    db_url: str,
    sessions: sessionmaker[Session],
    console_as: Callable[..., TestClient],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Rendering a template (bounded, but a preview all the same) never holds SQLite's one
    write lock: other writers go on meanwhile."""
    if not db_url.startswith("sqlite"):
        pytest.skip("SQLite's database-wide write lock")
    book(sessions, starts_in=5 * DAYS, person={"mobile_phone": None})
    client = console_as("admin")
    path = db_url.removeprefix("sqlite:///")
    writable: list[bool] = []
    render = templates.render

    def render_and_try_a_write(*args: Any, **kwargs: Any) -> templates.Template:
        other = sqlite3.connect(path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")
            other.execute("ROLLBACK")
            writable.append(True)
        except sqlite3.OperationalError:
            writable.append(False)
        finally:
            other.close()
        return render(*args, **kwargs)

    monkeypatch.setattr(templates, "render", render_and_try_a_write)
    answer = client.post(
        "/console/admin/templates/confirmation/email",
        data={"csrf": csrf(client), "action": "save", "subject": "Hi", "text": "Hello"},
    )
    assert answer.status_code == 200, answer.text
    assert writable
    assert all(writable)
    with session_scope(sessions) as session:
        assert session.get(MessageTemplate, ("confirmation", "email")) is not None


def test_a_template_failing_on_one_riders_data_fails_that_message_only(
    settings: Settings, sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        session.add(
            MessageTemplate(
                kind="confirmation",
                channel="email",
                subject="Hi",
                body_text="{{ 100 // (person.first_name | length - 3) }}",
                body_html="",
                updated_by="admin",
            )
        )
    book(sessions, starts_in=5 * DAYS, person={"first_name": "Zoe", "mobile_phone": None})
    book(sessions, starts_in=6 * DAYS, person={"first_name": "Priya", "mobile_phone": None})
    sender = MessageSender(settings.model_copy(update={"sms_quiet_hours": "off"}), sessions)
    sender.run_until_idle()
    zoe, priya = messages(sessions, kind="confirmation")
    assert zoe.status == FAILED
    assert "cannot render" in (zoe.reason or "")
    assert "by zero" in (zoe.reason or "")
    assert "ZeroDivisionError" not in (zoe.reason or "")
    assert priya.status != FAILED
    assert priya.body_text == "50"
