"""`ridercrm demo` and load_demo against a real database."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.demo_courses import ANN, BEN, BOOKED_COURSE, LIAM, product_id
from ridercrm.fields import COURSE_LOCATIONS, COURSE_STATUSES, SITE_ZONES
from ridercrm.people.models import Person, PersonKey
from ridercrm.rosters.demo import (
    FULL_COURSE,
    FULL_SESSION,
    TODAY_KILSYTH,
    TODAY_SOMERTON,
    load_demo_sessions,
)
from ridercrm.rosters.service import booked_count
from ridercrm.sessions.models import CourseSession
from tests.transfer.helpers import assert_match_keys_in_step, cli, people, products


def test_demo_loads_once_and_then_is_skipped(
    db_url: str, sessions: sessionmaker[Session], client: TestClient, admin_headers: dict[str, str]
) -> None:
    result = cli(db_url, "demo")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("loaded 14 products, 305 people")
    assert result.stdout.splitlines()[0].endswith(" and 86 courses")
    # The ids the README's examples use are printed.
    for known in (ANN, BEN, LIAM, BOOKED_COURSE, product_id("LAP-SOM")):
        assert known in result.stdout
    # Skipped, and the ids are printed again: the README's examples still need them.
    skipped = cli(db_url, "demo").stdout
    assert skipped.startswith("skipped: database already has people")
    for known in (ANN, BEN, LIAM, BOOKED_COURSE, product_id("LAP-SOM")):
        assert known in skipped
    assert load_demo(sessions).startswith("skipped: database already has people")
    stored = people(sessions)
    assert len(stored) == 305
    assert {p["kind"] for p in stored.values()} == {"contact", "lead"}
    assert all(p["postcode"] is None or len(p["postcode"]) == 4 for p in stored.values())
    codes = {p["code"] for p in products(sessions).values()}
    assert len(codes) == 14
    assert {"LAP-SOM", "LT-SOM", "LAP-IPS", "LT-TWB"} <= codes
    assert_match_keys_in_step(sessions)
    someone = next(iter(stored))
    response = client.get(f"/admin/people/{someone}", headers=admin_headers)
    assert response.status_code == 200
    forced = cli(db_url, "demo", "--force")
    assert forced.output.strip().startswith("loaded 0 products, 300 people")
    assert forced.output.strip().endswith(" and 0 courses")
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(Person)) == 605


def test_demo_data_is_the_same_on_every_load(db_url: str, sessions: sessionmaker[Session]) -> None:
    load_demo(sessions, people=50)
    first = sorted((p["first_name"], p["last_name"], p["email"]) for p in people(sessions).values())
    with session_scope(sessions, write=True) as session:
        session.execute(delete(AssetStatusChange))
        session.execute(delete(Asset))
        session.execute(delete(PersonKey))  # no cascade: keys go with their people
        session.execute(delete(Person))
    load_demo(sessions, people=50)
    again = sorted((p["first_name"], p["last_name"], p["email"]) for p in people(sessions).values())
    assert again == first


def test_demo_courses_cover_every_status_at_every_location_around_today(
    db_url: str, sessions: sessionmaker[Session], client: TestClient, admin_headers: dict[str, str]
) -> None:
    load_demo(sessions)
    with session_scope(sessions) as session:
        courses = session.scalars(select(Asset)).all()
        seen = {(c.course_location, c.course_status) for c in courses}
        assert seen == {(where, status) for where in COURSE_LOCATIONS for status in COURSE_STATUSES}
        today = dt.date.today()
        days = [(dt.date.fromisoformat(c.course_datetime[:10]) - today).days for c in courses]
        assert min(days) < -14
        assert max(days) > 14
        for course in courses:
            day = dt.date.fromisoformat(course.course_datetime[:10])
            # The site's own today (its zone), as the day sheet opens on it.
            here = dt.datetime.now(ZoneInfo(SITE_ZONES[course.course_location])).date()
            if course.course_status.startswith("completed"):
                assert day < here, course.id  # a course is completed after it ran
            if course.course_status == "booked":
                assert day >= here, course.id
            # The history replays to the stored status.
            assert course.status_history[-1].to_status == course.course_status
    booked = client.get(f"/admin/assets/{BOOKED_COURSE}", headers=admin_headers).json()
    assert (booked["person_id"], booked["course_status"]) == (BEN, "booked")
    lead = client.get(f"/admin/people/{LIAM}", headers=admin_headers).json()
    assert (lead["kind"], lead["converted_contact_id"]) == ("lead", None)
    assert_match_keys_in_step(sessions)


def test_demo_sessions_count_the_demo_courses_already_in_them(
    sessions: sessionmaker[Session],
) -> None:
    """Today's Somerton session starts where the day sheet's demo riders already are
    (08:30): their seats count, so the session's counter is its real riders and no
    session holds more riders than seats (it said 7 booked of 12 over 13 riders, and
    sold five more seats)."""
    load_demo(sessions, people=60)
    today = dt.datetime.now(ZoneInfo(SITE_ZONES["somerton"])).date()
    load_demo_sessions(sessions, today=today)
    with session_scope(sessions) as session:
        rows = session.scalars(select(CourseSession)).all()
        counted = {
            row.id: booked_count(
                session,
                product_id=row.product_id,
                location=row.location,
                course_datetime=row.course_datetime,
            )
            for row in rows
        }
        assert {row.id: row.booked for row in rows} == counted
        assert all(row.seats is None or row.booked <= row.seats for row in rows)
        somerton = session.get(CourseSession, TODAY_SOMERTON)
        assert somerton is not None
        assert (somerton.booked, somerton.seats) == (7, 12)
        full = session.get(CourseSession, FULL_SESSION)
        assert full is not None
        assert (full.booked, full.seats) == (4, 4)
        assert session.scalar(select(Asset.course_datetime).where(Asset.id == FULL_COURSE)) == (
            full.course_datetime
        )


def test_demo_sessions_today_is_the_sites_today_not_the_servers(
    sessions: sessionmaker[Session],
) -> None:
    """At 13:30 UTC it is already tomorrow in Melbourne: today's sessions at Somerton and
    Kilsyth (Melbourne's zone) start on Melbourne's date, where the day sheet opens (they
    were on the server's date, Melbourne's yesterday, and the full session a day early)."""
    load_demo(sessions, people=60)
    moment = dt.datetime(2027, 3, 1, 13, 30, tzinfo=dt.UTC)  # 00:30 on 2 March in Melbourne
    load_demo_sessions(sessions, now=moment)
    with session_scope(sessions) as session:
        stored = {
            row.id: (row.location, row.course_datetime, row.status)
            for row in session.scalars(
                select(CourseSession).where(
                    CourseSession.id.in_([TODAY_SOMERTON, TODAY_KILSYTH, FULL_SESSION])
                )
            )
        }
    assert stored == {
        TODAY_SOMERTON: ("somerton", "2027-03-02 08:30:00", "confirmed"),
        TODAY_KILSYTH: ("kilsyth", "2027-03-02 08:30:00", "confirmed"),
        FULL_SESSION: ("somerton", "2027-03-09 12:30:00", "scheduled"),
    }
