"""The day sheet page: who may read and record, CSRF, a mixed submission, escaping."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from zoneinfo import ZoneInfo

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.models import AuditRecord
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.fields import SITE_ZONES
from ridercrm.web.console import daysheet as daysheet_page
from tests.console.conftest import csrf
from tests.courses import builders

DAY = "2026-12-05"
PAGE = f"/console/daysheet?site=somerton&date={DAY}"


@pytest.fixture
def riders(sessions: sessionmaker[Session]) -> dict[str, str]:
    """Three booked riders and one cancelled one at Somerton on DAY."""
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner Approved")
        ids: dict[str, str] = {}
        for name, status in (
            ("Ann", "booked"),
            ("Ben", "booked"),
            ("Cal", "booked"),
            ("Eve", "cancelled"),
        ):
            person = builders.person(
                session,
                first_name=name,
                last_name=f"<script>alert('{name}')</script>",
                email=f"{name.lower()}@example.com",
            )
            ids[name] = builders.course(session, person, lap, course_status=status)
    return ids


def statuses(sessions: sessionmaker[Session]) -> dict[str, tuple[str, str | None]]:
    with session_scope(sessions) as session:
        return {a.id: (a.course_status, a.course_feedback) for a in session.scalars(select(Asset))}


def test_no_session_is_sent_to_sign_in(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    client.follow_redirects = False
    answer = client.get(PAGE)
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/console/login?next=%2Fconsole%2Fdaysheet")
    answer = client.post(
        "/console/daysheet", data={"site": "somerton", "date": DAY, "confirm_future": "yes"}
    )
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/console/login")


def test_a_viewer_reads_the_sheet_but_cannot_record(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("viewer")
    page = client.get(PAGE)
    assert page.status_code == 200
    assert "4 riders" in page.text
    assert "08:30&ndash;16:30" in page.text
    assert 'href="tel:0412345678"' in page.text
    assert '<select id="result-' not in page.text
    assert "recording results needs the staff role" in page.text
    # Rider names are shown escaped, never run.
    assert "<script>alert" not in page.text
    assert "&lt;script&gt;alert(&#39;Ann&#39;)&lt;/script&gt;" in page.text
    before = statuses(sessions)
    answer = client.post(
        "/console/daysheet",
        data={
            "csrf": csrf(client),
            "site": "somerton",
            "date": DAY,
            "confirm_future": "yes",
            f"result-{riders['Ann']}": "pass A",
        },
    )
    assert answer.status_code == 403
    assert statuses(sessions) == before


def test_a_staff_submission_needs_its_csrf_token(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    before = statuses(sessions)
    for token in ({}, {"csrf": "forged"}):
        answer = client.post(
            "/console/daysheet",
            data={
                **token,
                "site": "somerton",
                "date": DAY,
                "confirm_future": "yes",
                f"result-{riders['Ann']}": "pass A",
            },
        )
        assert answer.status_code == 403
        assert "CSRF" in answer.text
    assert statuses(sessions) == before


def test_a_mixed_submission_saves_the_good_rows_and_shows_the_broken_ones(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    page = client.get(PAGE)
    assert page.text.count('<select id="result-') == 4
    answer = client.post(
        "/console/daysheet",
        data={
            "csrf": csrf(client),
            "site": "somerton",
            "date": DAY,
            "confirm_future": "yes",
            f"result-{riders['Ann']}": "pass B",
            f"result-{riders['Ben']}": "fail 3",
            f"result-{riders['Cal']}": "",  # no change: not sent
            # A cancelled course cannot be completed: the status machine refuses this row.
            f"result-{riders['Eve']}": "pass A",
        },
    )
    assert answer.status_code == 200
    assert "Saved 2 of 3 rows." in answer.text
    outcome = re.search(rf'id="outcome-{riders["Eve"]}" class="outcome">(.*?)</td>', answer.text)
    assert outcome is not None
    assert "a cancelled course cannot become completed - pass" in outcome.group(1)
    # The broken row keeps its choice, to correct and send again.
    eve_select = answer.text.split(f'id="result-{riders["Eve"]}"', 1)[1].split("</select>", 1)[0]
    assert 'aria-invalid="true"' in eve_select
    assert '<option value="pass A" selected>' in eve_select
    stored = statuses(sessions)
    assert stored[riders["Ann"]] == ("completed - pass", "pass B")
    assert stored[riders["Ben"]] == ("completed - fail", "fail 3")
    assert stored[riders["Cal"]] == ("booked", None)
    assert stored[riders["Eve"]] == ("cancelled", None)
    with session_scope(sessions) as session:
        records = session.scalars(
            select(AuditRecord).where(AuditRecord.operation == "console.daysheet")
        ).all()
        assert len(records) == 1
        record = records[0]
        assert record.staff_user is not None
        assert record.staff_user.startswith("staff")
        assert record.response_status == 200
        assert record.id in answer.text
        changed = session.scalars(
            select(AssetStatusChange.asset_id).where(AssetStatusChange.audit_id == record.id)
        ).all()
        assert sorted(changed) == sorted([riders["Ann"], riders["Ben"]])


def test_an_empty_submission_or_a_course_of_another_day_changes_nothing(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    token = csrf(client)
    answer = client.post(
        "/console/daysheet",
        data={"csrf": token, "site": "somerton", "date": DAY, "confirm_future": "yes"},
    )
    assert answer.status_code == 400
    assert "no row has a result chosen" in answer.text
    answer = client.post(
        "/console/daysheet",
        data={
            "csrf": token,
            "site": "kilsyth",
            "date": DAY,
            "confirm_future": "yes",
            f"result-{riders['Ann']}": "cancelled",
        },
    )
    assert answer.status_code == 200
    assert "Saved 0 of 1 row." in answer.text
    assert statuses(sessions)[riders["Ann"]] == ("booked", None)


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("site=atlantis", "site: must be one of"),
        ("site=somerton&date=2026-13-01", "is not a date written YYYY-MM-DD"),
        ("site=%3Cscript%3E", "site: must be one of"),
        ("site=somerton&date=9999-12-31", "date: must be in the years 1900 to 9998"),
        ("site=somerton&date=0001-01-01", "date: must be in the years 1900 to 9998"),
    ],
)
def test_a_bad_site_or_date_is_a_400_page(
    console_as: Callable[..., TestClient], query: str, message: str
) -> None:
    answer = console_as("viewer").get(f"/console/daysheet?{query}")
    assert answer.status_code == 400
    assert message in answer.text
    assert "<script>" not in answer.text.split("<main", 1)[1]


def test_the_default_is_the_first_site_today(console_as: Callable[..., TestClient]) -> None:
    page = console_as("viewer").get("/console/daysheet")
    assert page.status_code == 200
    # Today where the site is (Somerton: Melbourne), not on the machine's clock: they
    # differ for an hour or more of every UTC day.
    today = dt.datetime.now(ZoneInfo("Australia/Melbourne")).date()
    assert f'value="{today.isoformat()}"' in page.text
    assert "No course is booked at Somerton on this day." in page.text


def test_injection_in_a_result_or_a_course_id_is_shown_escaped(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    hostile = "<img src=x onerror=alert(1)>"
    answer = client.post(
        "/console/daysheet",
        data={
            "csrf": csrf(client),
            "site": "somerton",
            "date": DAY,
            "confirm_future": "yes",
            f"result-{riders['Ann']}": hostile,
            f"result-{hostile}": "cancelled",
            f"result-{riders['Ben']}": "' OR 1=1 --",
        },
    )
    assert answer.status_code == 200
    assert "Saved 0 of 3 rows." in answer.text
    assert "<img src=x" not in answer.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in answer.text
    assert statuses(sessions)[riders["Ann"]] == ("booked", None)
    assert statuses(sessions)[riders["Ben"]] == ("booked", None)


def test_the_audit_filters_find_a_day_sheet_record_by_person_and_booking_number(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    answer = client.post(
        "/console/daysheet",
        data={
            "csrf": csrf(client),
            "site": "somerton",
            "date": DAY,
            "confirm_future": "yes",
            f"result-{riders['Ann']}": "pass B",
        },
    )
    assert answer.status_code == 200
    with session_scope(sessions) as session:
        ann = session.get(Asset, riders["Ann"])
        assert ann is not None
        person_id, number = ann.person_id, ann.booking_number
        ben = session.get(Asset, riders["Ben"])
        assert ben is not None
        assert ben.booking_number is not None
        other_person, other_number = ben.person_id, ben.booking_number
    assert number is not None

    def listed(**params: str) -> int:
        page = client.get("/console/audit", params={"operation": "console.daysheet", **params})
        assert page.status_code == 200
        return page.text.count("<td>console.daysheet</td>")

    assert listed() == 1
    assert listed(person=person_id) == 1
    assert listed(person=person_id[:15]) == 1
    assert listed(booking=number) == 1
    # Ben was on the sheet but given no result: the record did not touch him.
    assert listed(person=other_person) == 0
    assert listed(booking=other_number) == 0
    # The person page lists the same record.
    assert "console.daysheet" in client.get(f"/console/people/{person_id}").text


def test_a_result_for_a_future_day_needs_a_confirmation(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    day = daysheet_page.site_today("somerton") + dt.timedelta(days=3)
    with session_scope(sessions, write=True) as session:
        for asset_id in riders.values():
            asset = session.get(Asset, asset_id)
            assert asset is not None
            asset.course_datetime = f"{day} 08:30:00"
    before = statuses(sessions)
    form = {"csrf": csrf(client), "site": "somerton", "date": day.isoformat()}
    asked = client.post(
        "/console/daysheet",
        data={**form, f"result-{riders['Ann']}": "pass B", f"result-{riders['Ben']}": "fail 3"},
    )
    assert asked.status_code == 200
    assert "Nothing was recorded yet." in asked.text
    assert 'name="confirm_future" value="yes"' in asked.text
    assert statuses(sessions) == before  # nothing changed before the confirmation
    # Every choice is kept for the confirmed submission.
    ann_select = asked.text.split(f'id="result-{riders["Ann"]}"', 1)[1].split("</select>")[0]
    assert '<option value="pass B" selected>' in ann_select
    confirmed = client.post(
        "/console/daysheet",
        data={**form, f"result-{riders['Ann']}": "pass B", "confirm_future": "yes"},
    )
    assert "Saved 1 of 1 row." in confirmed.text
    assert statuses(sessions)[riders["Ann"]] == ("completed - pass", "pass B")


def test_a_result_for_today_needs_no_confirmation(
    console_as: Callable[..., TestClient], riders: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    client = console_as("staff")
    today = daysheet_page.site_today("somerton")
    with session_scope(sessions, write=True) as session:
        asset = session.get(Asset, riders["Ann"])
        assert asset is not None
        asset.course_datetime = f"{today} 08:30:00"
    page = client.get("/console/daysheet?site=somerton")  # today at the site by default
    assert 'name="confirm_future"' not in page.text
    answer = client.post(
        "/console/daysheet",
        data={
            "csrf": csrf(client),
            "site": "somerton",
            "date": today.isoformat(),
            f"result-{riders['Ann']}": "pass A",
        },
    )
    assert "Saved 1 of 1 row." in answer.text


def test_staff_read_proper_names_explained_results_and_the_sites_time(
    console_as: Callable[..., TestClient], sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-IPS", "Learner Approved Pre-Licence (Ipswich)")
        person = builders.person(session, lead_source="Purchansed List")
        builders.course(
            session,
            person,
            lap,
            course_location="ipswitch",
            course_status="completed - pass",
            course_feedback="pass F",
        )
    client = console_as("staff")
    sheet = client.get(f"/console/daysheet?site=ipswich&date={DAY}").text
    assert '<h2 id="sheet-title">Ipswich,' in sheet
    assert ">Ipswich</option>" in sheet
    assert "Ipswitch" not in sheet
    assert "Somerton</option>" in sheet
    assert "St Ives</option>" in sheet
    assert "Course times are Ipswich's local time (Australia/Brisbane)." in sheet
    assert "Pass, grade F (4th of 4; still a pass)" in sheet  # the stored result, explained
    assert "Fail, reason 1 (of 4)" in sheet  # a choice of the result lists
    assert "grade F is the fourth pass grade, not a fail" in sheet
    page = client.get(f"/console/people/{person}").text
    assert 'value="Purchased List"' in page
    assert "Purchansed" not in page
    assert '08:30 <span class="note">(Ipswich local time)</span>' in page
    # The wire keeps the interface's spellings.
    with session_scope(sessions) as session:
        stored = session.scalars(select(Asset)).one()
        assert stored.course_location == "ipswitch"


def test_the_demos_day_sheets_open_on_riders_today_at_two_sites(
    sessions: sessionmaker[Session], console_as: Callable[..., TestClient]
) -> None:
    load_demo(sessions)
    client = console_as("viewer")
    for site, name in (("somerton", "Somerton"), ("ipswitch", "Ipswich")):
        page = client.get("/console/daysheet", params={"site": site})  # today at the site
        assert page.status_code == 200
        assert f'<h2 id="sheet-title">{name},' in page.text
        assert ": 10 riders</h2>" in page.text, page.text
        # And every other day of the site's week has its course.
        today = dt.datetime.now(ZoneInfo(SITE_ZONES[site])).date()
        for offset in range(-today.weekday(), 7 - today.weekday()):
            day = today + dt.timedelta(days=offset)
            other = client.get("/console/daysheet", params={"site": site, "date": str(day)})
            assert "No course is booked" not in other.text, day
