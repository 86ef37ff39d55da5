"""The day sheet service: a site's day, and results recorded in bulk (SQLite and PostgreSQL)."""

from __future__ import annotations

import datetime as dt

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses import daysheet
from ridercrm.courses.daysheet import Entry, SheetError, entry_of
from ridercrm.courses.models import Asset, AssetStatusChange
from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from tests.courses import builders

DAY = dt.date(2026, 12, 5)


@pytest.fixture
def sheet(sessions: sessionmaker[Session]) -> dict[str, str]:
    """Five courses at Somerton on DAY (two times, two products), and others elsewhere."""
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner Approved Pre-Licence")
        ride = builders.product(session, "RIDE-SOM", "Ride Ready")
        ann = builders.person(session, first_name="Ann", last_name="Nguyen")
        ben = builders.person(
            session,
            first_name="Ben",
            last_name="Kelly",
            mobile_phone="",
            home_phone="03 9999 1234",
            license_type="CYP",
            email="ben@example.com",
            drivers_license="B7654321",
        )
        cal = builders.person(session, first_name="Cal", last_name="Aziz", email="cal@example.com")
        dee = builders.person(session, first_name="Dee", last_name="Ong", email="dee@example.com")
        eve = builders.person(session, first_name="Eve", last_name="Moss", email="eve@example.com")
        at_830 = "2026-12-05 08:30:00"
        ids = {
            "ann": builders.course(session, ann, lap, course_datetime=at_830),
            # A booking's person fields update the person: Ben's are his own.
            "ben": builders.course(
                session,
                ben,
                lap,
                course_datetime=at_830,
                license_type="CYP",
                mobile_phone="",
                home_phone="03 9999 1234",
                drivers_license="B7654321",
            ),
            "cal": builders.course(session, cal, ride, course_datetime=at_830),
            "dee": builders.course(
                session,
                dee,
                lap,
                course_datetime="2026-12-05 13:00:00",
                course_date_end="2026-12-05 17:00:00",
            ),
            "eve": builders.course(
                session,
                eve,
                lap,
                course_datetime="2026-12-05 13:00:00",
                course_status="cancelled",
            ),
            "other_site": builders.course(session, ann, ride, course_location="kilsyth"),
            "other_day": builders.course(session, cal, ride, course_datetime="2026-12-06 08:30:00"),
        }
        ids.update(lap=lap, ride=ride)
    return ids


def test_sheet_groups_the_sites_day_by_start_time_and_product(
    sessions: sessionmaker[Session], sheet: dict[str, str]
) -> None:
    with session_scope(sessions) as session:
        found = daysheet.day_sheet(session, site="somerton", day=DAY)
    groups = [(g.start, g.product_code, [r.last_name for r in g.riders]) for g in found.groups]
    assert groups == [
        ("08:30", "LAP-SOM", ["Kelly", "Nguyen"]),
        ("08:30", "RIDE-SOM", ["Aziz"]),
        ("13:00", "LAP-SOM", ["Moss", "Ong"]),
    ]
    assert found.rider_count == 5
    assert found.asset_ids() == {sheet[n] for n in ("ann", "ben", "cal", "dee", "eve")}
    kelly = found.groups[0].riders[0]
    assert (kelly.license_type, kelly.phone, kelly.course_status) == (
        "CYP",
        "03 9999 1234",
        "booked",
    )
    nguyen = found.groups[0].riders[1]
    assert (nguyen.license_type, nguyen.phone) == ("CYL", "0412 345 678")
    assert nguyen.rider_instructor_1 == "Sam Lee"
    assert found.groups[2].end == "16:30"
    assert [r.course_status for r in found.groups[2].riders] == ["cancelled", "booked"]


def test_an_empty_day_and_the_site_and_date_parsers(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions) as session:
        assert daysheet.day_sheet(session, site="kilsyth", day=DAY).groups == []
    assert daysheet.site_of("IPSWICH") == "ipswitch"
    assert daysheet.site_of("toowoomba") == "Toowoomba"
    with pytest.raises(SheetError, match="site: must be one of"):
        daysheet.site_of("<script>")
    with pytest.raises(SheetError, match="site: choose one of"):
        daysheet.site_of("")
    today = dt.date(2026, 11, 22)
    assert daysheet.parse_day(None, today=today) == today
    assert daysheet.parse_day(" 2026-12-05 ", today=today) == DAY
    with pytest.raises(SheetError, match="date:"):
        daysheet.parse_day("2026-02-30", today=today)


def test_a_mixed_submission_keeps_the_good_rows_and_names_the_broken_ones(
    sessions: sessionmaker[Session], sheet: dict[str, str]
) -> None:
    entries = [
        entry_of(sheet["ann"], "Completed - Pass", "PASS a"),
        entry_of(sheet["ben"], "completed - fail", "fail 2"),
        entry_of(sheet["cal"], "cancelled"),
        # A cancelled course cannot be completed: the status machine refuses the row.
        entry_of(sheet["eve"], "completed - pass", "pass B"),
        # A pass needs a grade: the feedback rule refuses the row.
        entry_of(sheet["dee"], "completed - pass", ""),
    ]
    audit_id = new_id(RecordKind.AUDIT)
    with session_scope(sessions, write=True) as session:
        submission = daysheet.record_results(
            session, site="somerton", day=DAY, entries=entries, audit_id=audit_id
        )
    assert [r.saved for r in submission.results] == [True, True, True, False, False]
    assert submission.saved == 3
    assert submission.errors == {
        sheet["eve"]: "course_status: a cancelled course cannot become completed - pass",
        sheet[
            "dee"
        ]: "course_feedback: completed - pass needs one of pass A, pass B, pass C, pass F",
    }
    assert submission.results[0].message == "Course status changed from booked to completed - pass."
    with session_scope(sessions) as session:
        stored = {
            a.id: (a.course_status, a.course_feedback) for a in session.scalars(select(Asset))
        }
        assert stored[sheet["ann"]] == ("completed - pass", "pass A")
        assert stored[sheet["ben"]] == ("completed - fail", "fail 2")
        assert stored[sheet["cal"]] == ("cancelled", None)
        assert stored[sheet["eve"]] == ("cancelled", None)
        assert stored[sheet["dee"]] == ("booked", None)
        # Every status change of the submission points to its one audit record.
        changes = session.scalars(
            select(AssetStatusChange.asset_id).where(AssetStatusChange.audit_id == audit_id)
        ).all()
        assert sorted(changes) == sorted([sheet["ann"], sheet["ben"], sheet["cal"]])
    summary = submission.summary()
    assert (summary["site"], summary["date"], summary["saved"], summary["failed"]) == (
        "somerton",
        "2026-12-05",
        3,
        2,
    )
    assert summary["rows"][0] == {
        "asset_id": sheet["ann"],
        "course_status": "completed - pass",
        "course_feedback": "pass A",
        "saved": True,
        "message": "Course status changed from booked to completed - pass.",
    }


def test_rows_must_name_courses_of_the_sheet_once(
    sessions: sessionmaker[Session], sheet: dict[str, str]
) -> None:
    entries = [
        Entry(sheet["other_site"], "completed - pass", "pass A"),
        Entry(sheet["other_day"], "cancelled"),
        Entry("not an id", "cancelled"),
        Entry(sheet["ann"], "completed - pass", "pass C"),
        Entry(sheet["ann"], "cancelled"),
        Entry(sheet["ben"], "attended"),
        Entry(sheet["cal"], "completed - fail", "fail 9"),
    ]
    with session_scope(sessions, write=True) as session:
        submission = daysheet.record_results(
            session, site="somerton", day=DAY, entries=entries, audit_id=new_id(RecordKind.AUDIT)
        )
    messages = [r.message for r in submission.results]
    assert messages[0].startswith(f"asset_id: course {sheet['other_site']} is not on the somerton")
    assert messages[1].startswith("asset_id: course")
    assert messages[2] == "asset_id: course not an id is not on the somerton sheet of 2026-12-05"
    assert submission.results[3].saved
    assert messages[4] == f"asset_id: course {sheet['ann']} appears twice in this submission"
    assert messages[5].startswith("course_status: must be one of")
    assert messages[6].startswith("course_feedback: must be one of")
    with session_scope(sessions) as session:
        assert session.get(Asset, sheet["other_site"]).course_status == "booked"  # type: ignore[union-attr]


def test_a_submission_has_a_row_limit(sessions: sessionmaker[Session]) -> None:
    entries = [Entry("x", "cancelled")] * (daysheet.MAX_ROWS + 1)
    with session_scope(sessions, write=True) as session, pytest.raises(SheetError, match="rows:"):
        daysheet.record_results(
            session, site="somerton", day=DAY, entries=entries, audit_id=new_id(RecordKind.AUDIT)
        )
