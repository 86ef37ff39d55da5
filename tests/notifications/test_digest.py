"""The staff digest of tomorrow's sessions: written once per site and local day at the
site's own hour (daylight saving included), listing sessions (or courses), sent by the
deliverer to the site's staff address through a real SMTP server."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.smtp import Mailbox

from ridercrm.config import Settings, parse_digest_to
from ridercrm.db import session_scope
from ridercrm.notifications.models import DIGEST, PENDING, SENT, SKIPPED, Message
from ridercrm.notifications.sender import MessageSender
from ridercrm.notifications.timing import digest_days
from ridercrm.rosters.digest import write_due_digests
from tests.sessions.helpers import Seats

MELBOURNE, BRISBANE = "somerton", "slacks creek"
FIVE_PM = dt.time(17, 0)


def _utc(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.UTC)


def test_the_digest_hour_is_the_sites_own_across_daylight_saving() -> None:
    sites = [MELBOURNE, BRISBANE]
    # Saturday 3 October 2026, Melbourne on AEST (UTC+10): 17:00 is 07:00 UTC.
    assert digest_days(_utc("2026-10-03 06:59"), sites, FIVE_PM) == []
    assert digest_days(_utc("2026-10-03 07:00"), sites, FIVE_PM) == [
        (MELBOURNE, dt.date(2026, 10, 4)),
        (BRISBANE, dt.date(2026, 10, 4)),
    ]
    # Sunday 4 October, clocks went forward at 2 am: Melbourne is UTC+11, 17:00 is 06:00
    # UTC; Brisbane (no daylight saving) is still UTC+10.
    assert digest_days(_utc("2026-10-04 06:00"), sites, FIVE_PM) == [
        (MELBOURNE, dt.date(2026, 10, 5))
    ]
    assert digest_days(_utc("2026-10-04 05:59"), sites, FIVE_PM) == []
    # An hour the change skips (2:30 am on 4 October) is reached when the clock jumps.
    half_two = dt.time(2, 30)
    assert digest_days(_utc("2026-10-03 15:59"), [MELBOURNE], half_two) == []  # 1:59 AEST
    assert digest_days(_utc("2026-10-03 16:00"), [MELBOURNE], half_two) == [  # 3:00 AEDT
        (MELBOURNE, dt.date(2026, 10, 5))
    ]
    # Sunday 5 April 2026, clocks went back at 3 am: Melbourne is UTC+10 again.
    assert digest_days(_utc("2026-04-05 06:59"), [MELBOURNE], FIVE_PM) == []
    assert digest_days(_utc("2026-04-05 07:00"), [MELBOURNE], FIVE_PM) == [
        (MELBOURNE, dt.date(2026, 4, 6))
    ]


def test_the_digest_addresses_setting() -> None:
    assert parse_digest_to("") == {}
    assert parse_digest_to("Somerton=desk@example.com, toowoomba = qld@example.com") == {
        "somerton": "desk@example.com",
        "Toowoomba": "qld@example.com",
    }
    # The interface's alias, as operation 1 and /admin/sessions take it (was "no site").
    assert parse_digest_to("Ipswich=qld@example.com") == {"ipswitch": "qld@example.com"}
    everywhere = parse_digest_to("ops@example.com,kilsyth=kil@example.com")
    assert everywhere["kilsyth"] == "kil@example.com"
    assert everywhere["st ives"] == "ops@example.com"
    assert len(everywhere) == 7
    for bad, why in (
        ("mars=desk@example.com", "no site 'mars'"),
        ("somerton=desk", "not an e-mail address"),
        ("somerton=a b@example.com", "not an e-mail address"),
    ):
        with pytest.raises(ValueError, match=why):
            parse_digest_to(bad)
    with pytest.raises(ValueError, match="digest_to"):
        Settings(digest_to="mars=desk@example.com")
    with pytest.raises(ValueError, match="digest_at"):
        Settings(digest_at="5pm")


# Monday 1 March 2027, 17:05 in Melbourne (AEDT, UTC+11): the digests of Tuesday are due.
NOW = _utc("2027-03-01 06:05")
TOMORROW = "2027-03-02"
ADDRESSES = {
    "somerton": "somerton-desk@example.com",
    "kilsyth": "kilsyth-desk@example.com",
    "tullamarine": "tullamarine-desk@example.com",
}


def _digests(sessions: sessionmaker[Session]) -> list[Message]:
    with session_scope(sessions) as session:
        query = select(Message).where(Message.kind == DIGEST).order_by(Message.location)
        return list(session.scalars(query))


def _tomorrow_at_the_sites(client: TestClient, headers: dict[str, str]) -> None:
    """Somerton: a full session of two with one rider waiting, and a later one. Kilsyth:
    no sessions, two riders booked on a course. Tullamarine: nothing."""
    seats = Seats(client, headers, name="Learner Approved")
    full = seats.create(
        course_datetime=f"{TOMORROW} 08:30:00", course_date_end=f"{TOMORROW} 16:30:00", capacity=2
    )
    seats.create(course_datetime=f"{TOMORROW} 13:00:00", course_date_end=None, capacity=6)
    for _ in range(2):
        seats.book(course_datetime=f"{TOMORROW} 08:30:00", course_date_end=f"{TOMORROW} 16:30:00")
    assert seats.join(full["id"], seats.person()).status_code == 201
    for first in ("Ann", "Bo"):
        seats.book(
            seats.person(first_name=first, last_name="Nguyen"),
            course_location="kilsyth",
            course_datetime=f"{TOMORROW} 09:00:00",
            course_date_end=f"{TOMORROW} 15:00:00",
        )


def test_one_digest_per_site_and_day_sent_to_the_staff_address(
    client: TestClient,
    admin_headers: dict[str, str],
    settings: Settings,
    sessions: sessionmaker[Session],
    mailbox: Mailbox,
) -> None:
    _tomorrow_at_the_sites(client, admin_headers)
    before = NOW - dt.timedelta(minutes=10)  # 16:55 at the sites: not yet
    assert write_due_digests(sessions, addresses=ADDRESSES, at=FIVE_PM, now=before) == 0
    assert write_due_digests(sessions, addresses=ADDRESSES, at=FIVE_PM, now=NOW) == 3
    # A second round, a restart, a second deliverer: never twice for a site and day.
    assert write_due_digests(sessions, addresses=ADDRESSES, at=FIVE_PM, now=NOW) == 0
    rounds: list[int] = []
    start = threading.Barrier(2)

    def deliverer() -> None:
        start.wait()
        later = NOW + dt.timedelta(hours=2)
        rounds.append(write_due_digests(sessions, addresses=ADDRESSES, at=FIVE_PM, now=later))

    threads = [threading.Thread(target=deliverer) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert rounds == [0, 0]
    digests = _digests(sessions)
    assert [(m.location, m.detail, m.status) for m in digests] == [
        ("kilsyth", TOMORROW, PENDING),
        ("somerton", TOMORROW, PENDING),
        ("tullamarine", TOMORROW, SKIPPED),
    ]
    assert digests[2].reason == "nothing is booked that day"
    assert all(m.person_id is None for m in digests)

    values: dict[str, Any] = {**settings.model_dump(), "smtp_url": mailbox.url}
    MessageSender(Settings(**values), sessions).run_until_idle()
    # The riders' confirmations went too; the staff got their digest each, once.
    staff = [mail for mail in mailbox.messages if str(mail["To"]) in ADDRESSES.values()]
    received = {str(mail["To"]): mail for mail in staff}
    assert len(staff) == len(received) == 2
    assert set(received) == {"somerton-desk@example.com", "kilsyth-desk@example.com"}
    somerton = received["somerton-desk@example.com"]
    assert str(somerton["Subject"]) == "Tomorrow at Somerton: Tuesday 2 March 2027"
    text = somerton.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert "8:30 am to 4:30 pm  Learner Approved\n    2 booked of 2 seats, 1 waiting" in text
    assert "1 pm  Learner Approved\n    0 booked of 6 seats, 0 waiting" in text
    html = somerton.get_body(("html",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert "<td>Learner Approved</td>" in html
    kilsyth = received["kilsyth-desk@example.com"]
    text = kilsyth.get_body(("plain",)).get_content().replace("\r\n", "\n")  # type: ignore[union-attr]
    assert "No sessions are scheduled" in text
    assert "9 am  Learner Approved: 2 riders (Ann Nguyen, Bo Nguyen)" in text
    assert {m.status for m in _digests(sessions) if m.location != "tullamarine"} == {SENT}
