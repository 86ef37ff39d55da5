"""The day sheet and the dashboard in a real browser (Playwright driving Debian's Chromium)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from tests.browser.conftest import sign_in
from tests.courses import builders

pytestmark = pytest.mark.browser
# Far from the demo data's courses (the weeks around the day it is loaded).
DAY = "2028-06-03"


def test_the_day_sheet_records_a_mixed_submission(
    page: Any, console_url: str, sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        product = builders.product(session, "LAP-X", "Learner Approved")
        ids = {}
        for first, status in (("Ann", "booked"), ("Ben", "booked"), ("Eve", "cancelled")):
            person = builders.person(
                session, first_name=first, last_name="Rider", email=f"{first}@example.com"
            )
            ids[first] = builders.course(
                session,
                person,
                product,
                course_status=status,
                course_location="kilsyth",
                course_datetime=f"{DAY} 08:30:00",
                course_date_end=f"{DAY} 16:30:00",
            )
    sign_in(page, console_url, "staff")
    page.get_by_role("link", name="Day sheet").click()
    # Pick the site and the day with the keyboard, as on a tablet's form.
    page.get_by_label("Training site").select_option("kilsyth")
    page.get_by_label("Date").fill(DAY)
    page.get_by_label("Date").press("Enter")
    expect(page).to_have_url(re.compile(rf"/console/daysheet\?site=kilsyth&date={DAY}$"))
    expect(
        page.get_by_role("heading", name=re.compile(r"Kilsyth, Saturday 3 June 2028: 3 riders"))
    ).to_be_visible()
    page.get_by_label("Result for Ann Rider").select_option("pass B")
    page.get_by_label("Result for Ben Rider").select_option("fail 2")
    # A cancelled course cannot be completed: the status machine refuses this row.
    page.get_by_label("Result for Eve Rider").select_option("pass A")
    # The day is in the future: recording needs a confirmation, and nothing is saved
    # without it (every choice is kept).
    page.get_by_role("button", name="Record results").click()
    expect(page.locator("#future-warning")).to_contain_text("Nothing was recorded yet.")
    expect(page.get_by_label("Result for Ben Rider")).to_have_value("fail 2")
    page.get_by_label("Record results for this future day anyway").check()
    page.get_by_role("button", name="Record results").click()
    expect(page.locator("#outcome")).to_contain_text("Saved 2 of 3 rows.")
    expect(page.locator(f"#outcome-{ids['Eve']}")).to_have_text(
        "course_status: a cancelled course cannot become completed - pass"
    )
    expect(page.locator(f"#row-{ids['Eve']}")).to_have_class("broken")
    expect(page.get_by_label("Result for Eve Rider")).to_have_value("pass A")
    expect(page.locator(f"#outcome-{ids['Ann']}")).to_have_text("Saved")
    expect(page.locator(f"#row-{ids['Ann']}")).to_contain_text("completed - pass (Pass, grade B")
    # The summary's link takes the keyboard to the broken row's control.
    page.locator("#outcome li a").first.click()
    expect(page.get_by_label("Result for Eve Rider")).to_be_focused()
    with session_scope(sessions) as session:
        stored = {
            a.id: a.course_status
            for a in session.scalars(select(Asset).where(Asset.id.in_(ids.values())))
        }
    assert stored == {
        ids["Ann"]: "completed - pass",
        ids["Ben"]: "completed - fail",
        ids["Eve"]: "cancelled",
    }


def test_a_viewer_reads_the_day_sheet_without_controls(page: Any, console_url: str) -> None:
    sign_in(page, console_url, "viewer")
    page.goto(console_url + "/daysheet")
    expect(page.get_by_role("heading", name="Day sheet")).to_be_visible()
    expect(page.get_by_role("button", name="Record results")).to_have_count(0)


def test_the_dashboard_draws_its_charts(
    page: Any, console_url: str, sessions: sessionmaker[Session]
) -> None:
    with session_scope(sessions, write=True) as session:
        product = builders.product(session, "LAP-X", "Learner Approved")
        rider = builders.person(session)
        for when, status, feedback in (
            ("2028-06-07 08:30:00", "completed - pass", "pass A"),
            ("2028-06-08 08:30:00", "completed - fail", "fail 1"),
            ("2028-06-14 08:30:00", "cancelled", ""),
        ):
            builders.course(
                session,
                rider,
                product,
                course_datetime=when,
                course_status=status,
                course_feedback=feedback,
                course_location="kilsyth",
            )
    sign_in(page, console_url, "viewer")
    page.get_by_role("link", name="Dashboard").click()
    page.get_by_label("From", exact=True).fill("2028-06-05")
    page.get_by_label("To", exact=True).fill("2028-06-18")
    page.get_by_role("button", name="Show").click()
    expect(page).to_have_url(re.compile(r"/console/dashboard\?from=2028-06-05&to=2028-06-18$"))
    charts = page.get_by_role("img")
    expect(charts).to_have_count(6)
    for index in range(6):
        box = charts.nth(index).bounding_box()
        assert box is not None
        assert box["width"] > 200
        assert box["height"] > 50
    expect(page.get_by_role("img", name="Bookings per week by site")).to_be_visible()
    bars = page.locator("#bookings-location rect title")
    assert sorted(bars.all_text_contents()) == [
        "Kilsyth, week of 2028-06-05: 2 courses",
        "Kilsyth, week of 2028-06-12: 1 courses",
    ]
    assert page.locator("#pass-location rect title").first.text_content() == (
        "Kilsyth: 50% passed (1 of 2)"  # the site by its proper name
    )
    expect(page.locator("#figure-pass-rate")).to_have_text("50%")
    expect(page.get_by_role("region", name="Pass rate by site: the numbers")).to_contain_text("50%")
