"""`ridercrm messages list` and `ridercrm messages send-test`, as an operator runs them."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess

from sqlalchemy.orm import Session, sessionmaker
from testkit.serve import ridercrm_command
from testkit.smtp import Mailbox

from ridercrm.config import Settings
from tests.notifications.helpers import book


def _run(settings: Settings, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [ridercrm_command(), *args],
        env={**os.environ, "RIDERCRM_DATABASE_URL": settings.database_url, **env},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_messages_list(settings: Settings, sessions: sessionmaker[Session]) -> None:
    person_id, asset_id = book(
        sessions, starts_in=dt.timedelta(days=5), person={"mobile_phone": None}
    )
    done = _run(settings, "messages", "list", "--person", person_id)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert sorted(row["kind"] for row in rows) == ["confirmation", "reminder", "reminder"]
    assert {row["course_id"] for row in rows} == {asset_id}
    refused = _run(settings, "messages", "list", "--status", "lost")
    assert refused.returncode == 2
    assert "--status must be one of" in refused.stderr


def test_send_test_through_a_real_smtp_server(settings: Settings, mailbox: Mailbox) -> None:
    done = _run(
        settings,
        "messages",
        "send-test",
        "--to",
        "ops@example.com",
        RIDERCRM_SMTP_URL=mailbox.url,
        RIDERCRM_NOTIFY_FROM="bookings@rideright.example",
    )
    assert done.returncode == 0, done.stderr
    [mail] = mailbox.wait_for(1)
    assert mail["To"] == "ops@example.com"
    assert mail["Message-ID"].endswith("@rideright.example>")
    assert [p.get_content_type() for p in mail.walk() if p.get_content_maintype() == "text"] == [
        "text/plain",
        "text/html",
        "text/calendar",
    ]
    unset = _run(settings, "messages", "send-test", "--to", "ops@example.com")
    assert unset.returncode == 1
    assert "RIDERCRM_SMTP_URL is not set" in unset.stderr
