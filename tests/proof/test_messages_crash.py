"""Messages survive SIGKILL: `ridercrm deliver` killed again and again while it hands
e-mails to a real SMTP server (aiosmtpd) that keeps each message before it acknowledges
it. Afterwards every message was received (none lost), each at most once more per kill
(a resend carries the same Message-ID), and nothing was received that is not stored.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import time
from collections import Counter
from email.message import EmailMessage
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker
from testkit.serve import ridercrm_command, tail
from testkit.smtp import smtp_server

from ridercrm.config import Settings
from tests.notifications.helpers import book, messages

pytestmark = pytest.mark.crash


def _key(mail: EmailMessage) -> str:
    return str(mail["Message-ID"]).strip("<>").partition("@")[0]


def _keys(mails: list[EmailMessage]) -> set[str]:
    return {_key(mail) for mail in mails}


BOOKINGS = 12
KILLS = 3


def test_killed_deliverer_loses_nothing_and_duplicates_at_most_one_per_kill(
    settings: Settings, sessions: sessionmaker[Session], tmp_path: Path
) -> None:
    for _ in range(BOOKINGS):
        book(sessions, starts_in=dt.timedelta(days=5), person={"mobile_phone": None})
    expected = {m.key for m in messages(sessions, kind="confirmation")}
    assert len(expected) == BOOKINGS
    with smtp_server() as mailbox:
        mailbox.delay = 0.15  # each message is in the server's hands before it is acknowledged
        env = {
            **os.environ,
            "RIDERCRM_DATABASE_URL": settings.database_url,
            "RIDERCRM_SMTP_URL": mailbox.url,
            "RIDERCRM_NOTIFY_FROM": "bookings@rideright.example",
            "RIDERCRM_NOTIFY_LEASE_SECONDS": "1",
            "RIDERCRM_NOTIFY_RETRY_SCHEDULE": "0.1,0.1,0.1",
            "RIDERCRM_WEBHOOK_POLL_SECONDS": "0.05",
            "RIDERCRM_LOG_LEVEL": "WARNING",
        }
        log = tmp_path / "deliver.log"

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                [ridercrm_command(), "deliver"],
                env=env,
                stdout=log.open("ab"),
                stderr=subprocess.STDOUT,
            )

        for kill in range(KILLS):
            child = start()
            # Kill it while a message not seen before is in the server's hands,
            # unacknowledged (a resend of the last kill's message does not count).
            seen = _keys(mailbox.messages)
            deadline = time.monotonic() + 60
            while len(_keys(mailbox.messages)) <= len(seen):
                assert child.poll() is None, tail(log)
                assert time.monotonic() < deadline, f"no e-mail after kill {kill}:\n{tail(log)}"
                time.sleep(0.01)
            child.send_signal(signal.SIGKILL)
            child.wait()
        child = start()
        try:
            deadline = time.monotonic() + 90
            while any(m.status != "sent" for m in messages(sessions, kind="confirmation")):
                assert child.poll() is None, tail(log)
                assert time.monotonic() < deadline, f"messages still open:\n{tail(log)}"
                time.sleep(0.1)
        finally:
            child.send_signal(signal.SIGINT)
            child.wait(timeout=30)
        received = Counter(_key(mail) for mail in mailbox.messages)
    # None lost, none invented.
    assert set(received) == expected
    # A killed deliverer sends what it had in hand once more at most.
    duplicates = sum(count - 1 for count in received.values())
    assert duplicates <= KILLS
    assert all(count <= 2 for count in received.values())
    rows = messages(sessions, kind="confirmation")
    assert [row.provider_id for row in rows] == [f"<{row.key}@rideright.example>" for row in rows]
