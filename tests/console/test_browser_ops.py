"""Browser tests of the day sheet and the dashboard: Playwright driving Debian's Chromium.

No browser is downloaded: the tests use /usr/bin/chromium (or $RIDERCRM_CHROMIUM) and are
skipped with a reason when there is none. On a failure the page's screenshot is saved
to $RIDERCRM_SCREENSHOTS (default: the test's temporary directory) and its path printed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from tests.console.conftest import PASSWORD
from tests.courses import builders
from tests.live import live_server

playwright_api = pytest.importorskip("playwright.sync_api")

DAY = "2026-12-05"


def chromium_path() -> str | None:
    return os.environ.get("RIDERCRM_CHROMIUM") or shutil.which("chromium") or None


@pytest.fixture
def browser_page(settings: Settings, tmp_path: Path) -> Iterator[tuple[str, Any]]:
    """A live server on the test's SQLite database and a Chromium page; (base URL, page)."""
    if not settings.database_url.startswith("sqlite"):
        pytest.skip("browser tests run on SQLite (the pages' HTTP tests cover PostgreSQL)")
    executable = chromium_path()
    if executable is None:
        pytest.skip("no Chromium: apt-get install chromium (or set RIDERCRM_CHROMIUM)")
    with live_server(settings) as base, playwright_api.sync_playwright() as driver:
        browser = driver.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1024, "height": 768})
            page.set_default_timeout(15_000)
            yield base, page
        finally:
            browser.close()


@contextmanager
def screenshot_on_failure(page: Any, name: str, tmp_path: Path) -> Iterator[None]:
    try:
        yield
    except BaseException:
        folder = Path(os.environ.get("RIDERCRM_SCREENSHOTS") or tmp_path)
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{name}.png"
        page.screenshot(path=str(target), full_page=True)
        print(f"screenshot of the failure: {target}")
        raise


def sign_in(page: Any, base: str, name: str) -> None:
    page.goto(f"{base}/console/login")
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_label("Password").press("Enter")
    page.wait_for_url(lambda url: "/login" not in url)


def test_the_day_sheet_records_a_mixed_submission(
    browser_page: tuple[str, Any],
    make_staff: Callable[..., str],
    sessions: sessionmaker[Session],
    tmp_path: Path,
) -> None:
    base, page = browser_page
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner Approved")
        ids = {}
        for first, status in (("Ann", "booked"), ("Ben", "booked"), ("Eve", "cancelled")):
            person = builders.person(
                session, first_name=first, last_name="Rider", email=f"{first}@example.com"
            )
            ids[first] = builders.course(session, person, lap, course_status=status)
    name = make_staff("staff")
    with screenshot_on_failure(page, "daysheet", tmp_path):
        sign_in(page, base, name)
        page.goto(f"{base}/console/daysheet")
        # Pick the site and the day with the keyboard, as on a tablet's form.
        page.get_by_label("Training site").select_option("somerton")
        page.get_by_label("Date").fill(DAY)
        page.get_by_label("Date").press("Enter")
        page.wait_for_url(f"**/console/daysheet?site=somerton&date={DAY}")
        assert page.get_by_role(
            "heading", name="Somerton, Saturday 5 December 2026: 3 riders"
        ).is_visible()
        page.get_by_label("Result for Ann Rider").select_option("pass B")
        page.get_by_label("Result for Ben Rider").select_option("fail 2")
        # A cancelled course cannot be completed: the status machine refuses this row.
        page.get_by_label("Result for Eve Rider").select_option("pass A")
        page.get_by_role("button", name="Record results").click()
        page.wait_for_load_state()
        assert page.get_by_text("Saved 2 of 3 rows.").is_visible()
        broken = page.locator(f"#outcome-{ids['Eve']}")
        assert "a cancelled course cannot become completed - pass" in broken.inner_text()
        assert page.locator(f"#row-{ids['Eve']}").get_attribute("class") == "broken"
        assert page.locator(f"#outcome-{ids['Ann']}").inner_text() == "Saved"
        assert "completed - pass (pass B)" in page.locator(f"#row-{ids['Ann']}").inner_text()
        # The summary's link leads the keyboard to the broken row's control.
        page.locator("#outcome li a").first.click()
        assert page.evaluate("document.activeElement.id") == f"result-{ids['Eve']}"
    with session_scope(sessions) as session:
        stored = {a.id: a.course_status for a in session.scalars(select(Asset))}
    assert stored == {
        ids["Ann"]: "completed - pass",
        ids["Ben"]: "completed - fail",
        ids["Eve"]: "cancelled",
    }


def test_the_dashboard_draws_its_charts(
    browser_page: tuple[str, Any],
    make_staff: Callable[..., str],
    sessions: sessionmaker[Session],
    tmp_path: Path,
) -> None:
    base, page = browser_page
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner Approved")
        rider = builders.person(session)
        for when, status, feedback in (
            ("2026-12-02 08:30:00", "completed - pass", "pass A"),
            ("2026-12-03 08:30:00", "completed - fail", "fail 1"),
            ("2026-12-10 08:30:00", "cancelled", ""),
        ):
            builders.course(
                session,
                rider,
                lap,
                course_datetime=when,
                course_status=status,
                course_feedback=feedback,
            )
    name = make_staff("viewer")
    with screenshot_on_failure(page, "dashboard", tmp_path):
        sign_in(page, base, name)
        page.goto(f"{base}/console/dashboard")
        page.get_by_label("From", exact=True).fill("2026-11-30")
        page.get_by_label("To", exact=True).fill("2026-12-13")
        page.get_by_role("button", name="Show").click()
        page.wait_for_url("**/console/dashboard?from=2026-11-30&to=2026-12-13")
        charts = page.get_by_role("img")
        assert charts.count() == 6
        for index in range(6):
            box = charts.nth(index).bounding_box()
            assert box is not None
            assert box["width"] > 200
            assert box["height"] > 50
        assert page.get_by_role("img", name="Bookings per week by site").is_visible()
        bars = page.locator("#bookings-location rect title")
        assert sorted(bars.all_text_contents()) == [
            "somerton, week of 2026-11-30: 2 courses",
            "somerton, week of 2026-12-07: 1 courses",
        ]
        rate = page.locator("#pass-location rect title").first.text_content()
        assert rate == "somerton: 50% passed (1 of 2)"
        assert page.locator("#figure-pass-rate").inner_text() == "50%"
        table = page.get_by_role("region", name="Pass rate by site: the numbers")
        assert "50%" in table.inner_text()
