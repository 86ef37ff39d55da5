"""The dashboard's weekly course counts stay equal to counting the courses from scratch,
whatever writes them (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import threading
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import Engine, delete, text, update
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import new_booking
from typer.testing import CliRunner

from ridercrm.cli import app as cli
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.duplicates.merge import merge_people, undo_merge
from ridercrm.ids import RecordKind, new_id
from ridercrm.migrate import downgrade, upgrade
from ridercrm.reports import counts, service
from ridercrm.reports.models import CourseWeekCount
from tests.console.conftest import console_as as console_as  # a fixture
from tests.console.conftest import csrf
from tests.console.conftest import make_staff as make_staff  # console_as's fixture
from tests.courses import builders


def _assert_in_step(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions) as session:
        fresh = counts.count_courses(session)
        stored = counts.stored_counts(session)
    assert stored == fresh
    assert all(n > 0 for n in stored.values())  # no row counting nothing is left behind


def test_every_write_path_keeps_the_counts_exact(
    sessions: sessionmaker[Session],
    client: TestClient,
    make_key: Callable[..., str],
    console_as: Callable[..., TestClient],
) -> None:
    load_demo(sessions, people=30)  # Core bulk inserts of courses, outside the ORM
    _assert_in_step(sessions)
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-TST", "Learner Approved")
        ride = builders.product(session, "RDY-TST", "Ride Ready")
        ann, bob = builders.person(session), builders.person(session)
    headers = {"Authorization": f"Bearer {make_key('courses')}"}

    def rider_courses(*items: dict[str, object]) -> list[dict[str, object]]:
        answer = client.post(
            "/crm/people/rider_courses", json={"people_product": list(items)}, headers=headers
        )
        assert answer.status_code == 200, answer.text
        details: list[dict[str, object]] = answer.json()["details"]
        return details

    # Operation 1: new bookings in one request, one of them refused after the others.
    booked = rider_courses(
        new_booking(ann, lap, booking_number="W-1", course_datetime="2026-11-23 08:30:00"),
        new_booking(ann, ride, booking_number="W-2", course_datetime="2026-11-29",
                    course_location="kilsyth", booking_source="Phone", rider_instructor_1=""),
        new_booking(bob, lap, booking_number="W-3", course_status="completed - pass",
                    course_feedback="nonsense"),
        new_booking(bob, lap, booking_number="W-4", course_datetime="2026-11-30 07:00:00"),
    )  # fmt: skip
    assert [d["delivery"] for d in booked] == ["true", "true", "false", "true"]
    first, second, fourth = (str(d["asset_id"]) for d in (booked[0], booked[1], booked[3]))
    # Status changes, a course moved to another week, site, instructor and source, and
    # an item refused by the status machine.
    changed = rider_courses(
        {"asset_id": first, "course_status": "completed - pass", "course_feedback": "pass A"},
        {"asset_id": second, "course_datetime": "2026-12-08 09:00:00",
         "course_location": "somerton", "rider_instructor_1": "Jo Park",
         "booking_source": "Website"},
        {"asset_id": fourth, "course_status": "cancelled"},
        {"asset_id": fourth, "course_status": "completed - pass", "course_feedback": "pass B"},
    )  # fmt: skip
    assert [d["delivery"] for d in changed] == ["true", "true", "true", "false"]
    _assert_in_step(sessions)

    # The console: a day-sheet submission with a broken row, and one course's status.
    staff = console_as("staff")
    token = csrf(staff)
    with session_scope(sessions, write=True) as session:
        sheet = [
            builders.course(session, bob, ride, course_datetime="2026-12-02 08:30:00")
            for _ in range(3)
        ]
    answer = staff.post(
        "/console/daysheet",
        data={
            "csrf": token,
            "site": "somerton",
            "date": "2026-12-02",
            f"result-{sheet[0]}": "pass C",
            f"result-{sheet[1]}": "fail 1",
            f"result-{sheet[2]}": "booked-not-a-result",
        },
    )
    assert answer.status_code == 200, answer.text
    answer = staff.post(
        f"/console/people/{bob}/courses/{sheet[2]}",
        data={"csrf": token, "course_status": "cancelled", "course_feedback": ""},
    )
    assert answer.status_code == 200
    _assert_in_step(sessions)

    # Merges move courses to another person (their counts stay), and undo moves them back.
    with session_scope(sessions, write=True) as session:
        _plan, record = merge_people(session, people_ids=[ann, bob], survivor_id=ann)
        assert record is not None
        merge_id = record.id
    with session_scope(sessions, write=True) as session:
        undo_merge(session, merge_id)
    _assert_in_step(sessions)

    # A transaction that fails takes its counts with it; so does a savepoint.
    def booked_then_failed() -> None:
        with session_scope(sessions, write=True) as session:
            builders.course(session, ann, lap, course_datetime="2027-01-04 08:30:00")
            raise RuntimeError("rolled back")

    with pytest.raises(RuntimeError):
        booked_then_failed()
    with session_scope(sessions, write=True) as session:
        savepoint = session.begin_nested()
        session.execute(update(Asset).where(Asset.id == first).values(course_status="booked"))
        savepoint.rollback()
        # Hand-made SQL and a course that loses its date, then is deleted.
        session.execute(update(Asset).where(Asset.id == second).values(course_datetime=None))
        session.execute(
            update(Asset).where(Asset.course_location == "kilsyth").values(course_location=None)
        )
        session.execute(delete(AssetStatusChange).where(AssetStatusChange.asset_id == fourth))
        session.execute(delete(Asset).where(Asset.id == fourth))
    _assert_in_step(sessions)


def test_the_dashboard_reads_the_counts_of_its_weeks(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session)
        rider = builders.person(session)
        # A course written with its date only is counted on that day, even the first of
        # the period (text comparison against "YYYY-MM-DD 00:00:00" used to miss it).
        builders.course(session, rider, lap, course_datetime="2026-11-02")
        builders.course(session, rider, lap, course_datetime="2026-11-15 23:59:59")
        builders.course(session, rider, lap, course_datetime="2026-11-16 00:00:00")
    period = service.Period(dt.date(2026, 11, 2), dt.date(2026, 11, 15))
    with session_scope(sessions) as session:
        board = service.dashboard(session, period=period)
    assert board.bookings_by_location.series == {"somerton": [1, 1]}


def test_rebuild_repairs_counts_changed_by_hand(
    sessions: sessionmaker[Session], db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with session_scope(sessions, write=True) as session:
        lap, rider = builders.product(session), builders.person(session)
        for day in ("2026-11-02", "2026-11-03", "2026-11-10"):
            builders.course(session, rider, lap, course_datetime=f"{day} 08:30:00")
    with session_scope(sessions, write=True) as session:
        assert counts.fold(session) == 12  # 3 courses x 4 dimensions, now count rows
    with session_scope(sessions, write=True) as session:
        session.execute(update(CourseWeekCount).values(courses=CourseWeekCount.courses + 5))
        session.add(CourseWeekCount(dimension="site", week="2026-01-05", label="x",
                                    status="booked", courses=1))  # fmt: skip
    monkeypatch.setenv("RIDERCRM_DATABASE_URL", db_url)
    result = CliRunner().invoke(cli, ["reports", "rebuild"])
    assert result.exit_code == 0, result.output
    # 2 weeks x 4 dimensions were wrong, and one row counted no course.
    assert "course_week_counts: 8 rows; 9 differed from the courses" in result.stdout
    _assert_in_step(sessions)
    again = CliRunner().invoke(cli, ["reports", "rebuild"])
    assert "8 rows; 0 differed" in again.stdout


def test_the_migration_counts_the_courses_already_stored(
    sessions: sessionmaker[Session], engine: Engine
) -> None:
    with session_scope(sessions, write=True) as session:
        lap, rider = builders.product(session), builders.person(session)
        builders.course(session, rider, lap, course_datetime="2026-11-02 08:30:00")
    downgrade(engine, "0011")
    with session_scope(sessions, write=True) as session:
        session.execute(
            text(
                "INSERT INTO assets (id, person_id, product_id, course_status, course_datetime,"
                " course_location, booking_source, created_at, updated_at) VALUES"
                " (:id, :person, :product, 'booked', '2026-11-04', NULL, 'Phone', :now, :now)"
            ),
            {
                "id": new_id(RecordKind.ASSET),
                "person": rider,
                "product": lap,
                "now": dt.datetime.now(dt.UTC),
            },
        )
    upgrade(engine)
    _assert_in_step(sessions)
    with session_scope(sessions) as session:
        assert counts.stored_counts(session)[("site", "2026-11-02", "", "booked")] == 1


def test_folding_moves_the_deltas_into_the_counts_and_changes_no_figure(
    sessions: sessionmaker[Session],
) -> None:
    """Writes leave deltas; a fold, between or after them, leaves every figure as it was."""
    with session_scope(sessions, write=True) as session:
        lap, rider = builders.product(session), builders.person(session)
        first = builders.course(session, rider, lap, course_datetime="2026-11-02 08:30:00")
        builders.course(session, rider, lap, course_datetime="2026-11-03 08:30:00")
    period = service.Period(dt.date(2026, 11, 2), dt.date(2026, 11, 15))

    def board() -> object:
        with session_scope(sessions) as session:
            return service.dashboard(session, period=period)

    before = board()
    with session_scope(sessions, write=True) as session:
        assert counts.fold(session) == 8
    assert board() == before
    _assert_in_step(sessions)
    with session_scope(sessions, write=True) as session:  # moved out of the period
        session.execute(
            update(Asset).where(Asset.id == first).values(course_datetime="2026-12-01 08:30:00")
        )
    moved = board()
    assert moved != before
    with session_scope(sessions, write=True) as session:
        assert counts.fold(session) == 8  # 4 taken away, 4 added
        assert counts.fold(session) == 0
    assert board() == moved
    _assert_in_step(sessions)
    with session_scope(sessions) as session:
        assert session.scalar(text("SELECT count(*) FROM course_week_deltas")) == 0


@pytest.mark.postgresql
def test_bookings_of_the_same_weeks_in_opposite_orders_never_deadlock(
    sessions: sessionmaker[Session], db_url: str
) -> None:
    """Two transactions each book a course in week A and one in week B, in opposite
    orders, both holding their first course while the other books: with shared count
    rows that is a deadlock on PostgreSQL (one of them aborted); with delta rows both
    commit and the counts are exact."""
    if not db_url.startswith("postgresql"):
        pytest.skip("the row locks in question are PostgreSQL's")
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session)
        riders = [builders.person(session), builders.person(session)]
    weeks = ["2026-11-02 08:30:00", "2026-11-09 08:30:00"]
    both_hold_one = threading.Barrier(2, timeout=30)
    failures: list[BaseException] = []

    def book(rider: str, order: list[str]) -> None:
        try:
            with session_scope(sessions, write=True) as session:
                session.execute(text("SET LOCAL lock_timeout = '20s'"))
                builders.course(session, rider, lap, course_datetime=order[0])
                both_hold_one.wait()
                builders.course(session, rider, lap, course_datetime=order[1])
        except BaseException as exc:
            failures.append(exc)

    threads = [
        threading.Thread(target=book, args=(riders[0], weeks)),
        threading.Thread(target=book, args=(riders[1], weeks[::-1])),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failures == []
    _assert_in_step(sessions)
