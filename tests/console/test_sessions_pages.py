"""Console: sessions per site and week, a session's roster and waiting list, moving riders,
staff actions on the line, and the sessions to watch counted on the dashboard (issue 25)."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.models import AuditRecord
from ridercrm.db import session_scope
from ridercrm.events.models import Event
from tests.console.conftest import csrf
from tests.duplicates.test_merge import snapshot
from tests.sessions.helpers import START, Seats


def test_week_page_shows_seats_waiting_list_and_cover(
    client: TestClient, admin_headers: dict[str, str], console_as: Callable[..., TestClient]
) -> None:
    seats = Seats(client, admin_headers, code="CBT", trainees_per_instructor=4)
    full = seats.create(capacity=8, instructors=1, minimum=3)
    seats.book()
    viewer = console_as("viewer")
    page = viewer.get("/console/sessions", params={"site": "somerton", "week": START[:10]})
    assert page.status_code == 200, page.text
    assert full["id"] in page.text
    assert "short of cover" in page.text
    assert "under minimum (3)" in page.text
    roster = viewer.get(f"/console/sessions/{full['id']}")
    assert roster.status_code == 200
    assert "Roster: 1 course" in roster.text
    assert 'name="asset"' not in roster.text  # a viewer cannot move anyone
    assert viewer.get("/console/sessions", params={"site": "mars"}).status_code == 400
    assert viewer.get("/console/sessions/a0S000000000000AAA").status_code == 404


def test_staff_move_a_roster_in_one_step_with_seats_checked(
    client: TestClient, admin_headers: dict[str, str], console_as: Callable[..., TestClient]
) -> None:
    seats = Seats(client, admin_headers)
    here = seats.create(capacity=3)
    there = seats.create(capacity=1, course_datetime="2026-12-12 08:30:00")
    one, two = seats.book(), seats.book()
    staff = console_as("staff")
    token = csrf(staff)
    refused = staff.post(
        f"/console/sessions/{here['id']}/move", data={"csrf": token, "target": there["id"]}
    )
    assert "nobody was moved" in refused.text
    assert "Course is full." in refused.text
    assert seats.read(here["id"])["booked"] == 2
    moved = staff.post(
        f"/console/sessions/{here['id']}/move",
        data={"csrf": token, "target": there["id"], "asset": one["asset_id"]},
    )
    assert moved.status_code == 200
    assert "Done." in moved.text
    assert (seats.read(here["id"])["booked"], seats.read(there["id"])["booked"]) == (1, 1)
    asset = client.get(f"/admin/assets/{one['asset_id']}", headers=admin_headers).json()
    assert asset["course_datetime"] == "2026-12-12 08:30:00"
    assert two["delivery"] == "true"


def test_a_move_takes_only_courses_booked_in_the_session_it_is_posted_to(
    client: TestClient, admin_headers: dict[str, str], console_as: Callable[..., TestClient]
) -> None:
    """The form's ticked ids are checked against the roster: a course of another session,
    or one cancelled or completed since the page was read, was moved (a passed course
    moved to tomorrow, holding a seat there; a cancelled one moved without a seat)."""
    seats = Seats(client, admin_headers)
    here = seats.create(capacity=3)
    elsewhere = seats.create(capacity=3, course_datetime="2026-12-13 08:30:00")
    there = seats.create(capacity=3, course_datetime="2026-12-12 08:30:00")
    stranger = seats.book(course_datetime="2026-12-13 08:30:00")
    gone = seats.book()
    done = seats.send({"asset_id": gone["asset_id"], "course_status": "cancelled"})
    assert done[0]["delivery"] == "true", done
    staff = console_as("staff")
    token = csrf(staff)
    for asset in (stranger["asset_id"], gone["asset_id"]):
        refused = staff.post(
            f"/console/sessions/{here['id']}/move",
            data={"csrf": token, "target": there["id"], "asset": asset},
        )
        assert f"course {asset} is not booked in session {here['id']}" in refused.text
    assert seats.read(there["id"])["booked"] == 0
    assert seats.read(elsewhere["id"])["booked"] == 1
    moved = client.get(f"/admin/assets/{gone['asset_id']}", headers=admin_headers).json()
    assert (moved["course_datetime"], moved["course_status"]) == (START, "cancelled")


def test_a_move_to_the_session_itself_is_refused_and_changes_nothing(
    client: TestClient,
    admin_headers: dict[str, str],
    console_as: Callable[..., TestClient],
    engine: Engine,
    sessions: sessionmaker[Session],
) -> None:
    """A form naming the session itself as the target answered "Done." and was audited as
    a move of its riders; their courses' end times were set to the session's, and a rider
    whose end so changed was sent a "moved" message."""
    seats = Seats(client, admin_headers)
    here = seats.create(capacity=3)
    early = seats.book(course_date_end="2026-12-05 15:00:00")
    seats.book()
    staff = console_as("staff")
    token = csrf(staff)
    before, events_before = snapshot(engine), _events(sessions)
    refused = staff.post(
        f"/console/sessions/{here['id']}/move", data={"csrf": token, "target": here["id"]}
    )
    assert refused.status_code == 400, refused.text
    assert "Done." not in refused.text
    reason = f"nobody was moved: session {here['id']} is the session they are booked in"
    assert reason in refused.text
    assert snapshot(engine) == before
    asset = client.get(f"/admin/assets/{early['asset_id']}", headers=admin_headers).json()
    assert asset["course_date_end"] == "2026-12-05 15:00:00"
    with session_scope(sessions) as session:
        records = session.execute(
            select(AuditRecord.response_status, AuditRecord.failure_reason).where(
                AuditRecord.operation == "console.sessions.move"
            )
        ).all()
    assert [(status, reason in (why or "")) for status, why in records] == [(400, True)]
    assert _events(sessions) == events_before


def _events(sessions: sessionmaker[Session]) -> list[tuple[str, str]]:
    with session_scope(sessions) as session:
        return [(e.id, e.type) for e in session.scalars(select(Event).order_by(Event.id))]


def test_staff_reorder_offer_and_remove_on_the_waiting_list(
    client: TestClient, admin_headers: dict[str, str], console_as: Callable[..., TestClient]
) -> None:
    seats = Seats(client, admin_headers)
    session = seats.create(capacity=1)
    booked = seats.book()
    a, b = seats.person(), seats.person()
    seats.join(session["id"], a)
    seats.join(session["id"], b)
    staff = console_as("staff")
    token = csrf(staff)
    url = f"/console/sessions/{session['id']}/waitlist"
    # "²" is a digit to str.isdigit() that int() refuses: Python's own words were shown.
    odd = staff.post(url, data={"csrf": token, "action": "move", "person": b, "position": "²"})
    assert odd.status_code == 400
    assert "position: a whole number from 1" in odd.text
    assert "invalid literal" not in odd.text
    staff.post(url, data={"csrf": token, "action": "move", "person": b, "position": "1"})
    assert [e["person_id"] for e in seats.waitlist(session["id"])] == [b, a]
    full = staff.post(url, data={"csrf": token, "action": "offer", "person": a})
    assert "no seat is free" in full.text
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert seats.waitlist(session["id"])[0]["state"] == "offered"  # b, first after the reorder
    staff.post(url, data={"csrf": token, "action": "remove", "person": b})
    assert {e["person_id"]: e["state"] for e in seats.waitlist(session["id"])} == {
        a: "offered",
        b: "removed",
    }


def test_dashboard_counts_the_sessions_to_watch(
    client: TestClient, admin_headers: dict[str, str], console_as: Callable[..., TestClient]
) -> None:
    seats = Seats(client, admin_headers)
    soon = (dt.date.today() + dt.timedelta(days=2)).isoformat()
    seats.create(course_datetime=f"{soon} 08:30:00", capacity=8, minimum=4)
    seats.create(course_datetime=f"{soon} 13:00:00", minimum=0)
    page = console_as("viewer").get("/console/dashboard")
    assert page.status_code == 200
    assert "1 session in the next 7 days" in page.text
