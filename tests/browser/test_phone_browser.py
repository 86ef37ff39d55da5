"""The day sheet, a person's page, the dashboard and the admins' webhooks page at a
phone's width (390 px) and a desktop's (1280 px), in a real browser: no sideways scroll,
one card per rider with a large result list, a readable dashboard, one card per endpoint
with its health. Each page's screenshot is kept in
RIDERCRM_BROWSER_SHOTS (a temporary folder by default) to be looked at."""

from __future__ import annotations

import datetime as dt
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlalchemy.orm import Session, sessionmaker
from testkit.receiver import receiving

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.demo_courses import BEN
from ridercrm.events import manage
from ridercrm.events import service as events
from ridercrm.events.delivery import Deliverer
from ridercrm.netsafety import AllowList
from ridercrm.rosters.demo import FULL_SESSION, load_demo_sessions
from tests.browser.conftest import PASSWORD, USERS
from tests.notifications.helpers import book

pytestmark = pytest.mark.browser
WIDTHS = {"phone": (390, 844), "desktop": (1280, 900)}


@pytest.fixture(params=list(WIDTHS))
def sized(
    request: pytest.FixtureRequest, playwright_browser: Any, console_url: str, tmp_path: Path
) -> Any:
    """A page at each width, signed in as the staff user."""
    yield from _sized(request, playwright_browser, console_url, tmp_path, "staff")


@pytest.fixture(params=list(WIDTHS))
def sized_admin(
    request: pytest.FixtureRequest, playwright_browser: Any, console_url: str, tmp_path: Path
) -> Any:
    """A page at each width, signed in as the admin."""
    yield from _sized(request, playwright_browser, console_url, tmp_path, "admin")


def _sized(
    request: pytest.FixtureRequest,
    playwright_browser: Any,
    console_url: str,
    tmp_path: Path,
    role: str,
) -> Iterator[Any]:
    width, height = WIDTHS[request.param]
    context = playwright_browser.new_context(
        viewport={"width": width, "height": height}, has_touch=request.param == "phone"
    )
    context.set_default_timeout(15_000)
    page = context.new_page()
    page.goto(console_url + "/login")
    page.get_by_label("User name").fill(USERS[role])
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/console/people$"))
    folder = Path(os.environ.get("RIDERCRM_BROWSER_SHOTS") or tmp_path)
    folder.mkdir(parents=True, exist_ok=True)

    def shot(name: str) -> None:
        page.screenshot(path=str(folder / f"{name}-{width}.png"), full_page=True)

    yield page, width, shot
    context.close()


def no_sideways_scroll(page: Any) -> None:
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow} px wider than the screen"


def test_the_day_sheet_is_one_card_per_rider_with_large_targets(
    sized: tuple[Any, int, Any], console_url: str
) -> None:
    page, width, shot = sized
    page.goto(console_url + "/daysheet?site=somerton")  # the demo's riders of today
    expect(page.get_by_role("heading", name=re.compile(r"Somerton, .*: 10 riders"))).to_be_visible()
    no_sideways_scroll(page)
    selects = page.locator("select[id^=result-]")
    assert selects.count() == 10
    for index in range(selects.count()):
        box = selects.nth(index).bounding_box()
        assert box is not None
        assert box["x"] >= 0
        assert box["x"] + box["width"] <= width  # on the screen, not in a sideways scroll
        assert box["height"] >= 44  # a thumb's target
    button = page.get_by_role("button", name="Record results").bounding_box()
    assert button is not None
    assert button["height"] >= 44
    if width < 600:
        # One card per rider: each row is a block as wide as the screen's content.
        first = page.locator("table.sheet tbody tr").first.bounding_box()
        assert first is not None
        assert first["width"] >= width - 40
    shot("daysheet")
    selects.first.select_option("pass A")
    page.get_by_role("button", name="Record results").click()
    expect(page.locator("#outcome")).to_contain_text("Saved 1 of 1 row.")
    no_sideways_scroll(page)
    shot("daysheet-saved")


def test_a_persons_page_fits_the_screen(sized: tuple[Any, int, Any], console_url: str) -> None:
    page, width, shot = sized
    page.goto(f"{console_url}/people/{BEN}")
    expect(page.get_by_role("heading", name="Ben Kelly")).to_be_visible()
    no_sideways_scroll(page)
    save = page.get_by_role("button", name="Save changes").bounding_box()
    assert save is not None
    assert save["x"] + save["width"] <= width
    if width < 600:
        # Every control is a thumb's target, on the screen.
        for control in page.locator("main input:visible, main select, main button").all():
            box = control.bounding_box()
            assert box is not None
            assert box["height"] >= 44, control.evaluate("e => e.outerHTML")
            assert box["x"] + box["width"] <= width
    shot("person")


def test_finding_moving_and_messages_fit_a_phone(
    sized: tuple[Any, int, Any], console_url: str, sessions: sessionmaker[Session]
) -> None:
    """What staff use on the range: a person's page with their messages and a long
    address, the search results, a session's roster and waiting list, the week's
    sessions, the messages. Each scrolled sideways on a phone (messages, roster and
    results were plain tables, up to 1,283 px wide at 390)."""
    page, _width, shot = sized
    load_demo_sessions(sessions)  # what `serve --demo` adds: a full session, its line
    long = "a.very.long.address.for.the.range@subdomain.example-training.com.au"
    person, _course = book(sessions, starts_in=dt.timedelta(days=5), person={"email": long})
    for name, path in (
        ("person-messages", f"/people/{person}"),
        ("found", "/people?q=smith"),
        ("roster", f"/sessions/{FULL_SESSION}"),
        ("week", "/sessions?site=somerton"),
        ("messages", "/messages"),
    ):
        page.goto(console_url + path)
        expect(page.locator("h1")).to_be_visible()
        no_sideways_scroll(page)
        shot(name)
    page.goto(f"{console_url}/sessions/{FULL_SESSION}")
    # Riders by name (the roster showed person ids), times said to be the site's.
    expect(page.get_by_text("Course times are Somerton's local time")).to_be_visible()
    assert not page.locator("main a", has_text=re.compile(r"^00[3Q]")).count()


def test_the_dashboard_is_readable(sized: tuple[Any, int, Any], console_url: str) -> None:
    page, width, shot = sized
    page.goto(console_url + "/dashboard")
    expect(page.get_by_role("heading", name="Dashboard")).to_be_visible()
    no_sideways_scroll(page)
    # Every product's whole name, not one truncated prefix for all of them.
    labels = page.locator("#pass-product text[data-label]")
    assert labels.count() > 1
    shown = [labels.nth(i).text_content() for i in range(labels.count())]
    named = [labels.nth(i).get_attribute("data-label") for i in range(labels.count())]
    assert shown == named
    assert len(set(shown)) == len(shown)
    # The axis title and the legend do not overlap.
    chart = page.locator("#bookings-location")
    title = chart.locator("text", has_text="Week starting (Monday)").bounding_box()
    legend = chart.locator("rect[width='10']").first.bounding_box()
    assert title is not None
    assert legend is not None
    assert title["y"] + title["height"] <= legend["y"]
    # Charts are drawn at least as wide as the content allows, to 56em.
    drawn = chart.bounding_box()
    assert drawn is not None
    assert drawn["width"] >= min(width - 40, 600)
    # The tables' numbers are not cut off: each table's region shows it whole (on a
    # phone a wide table is one card per week).
    for table in page.locator(".numbers").all():
        assert table.evaluate("e => e.scrollHeight - e.clientHeight") <= 0
        assert table.evaluate("e => e.scrollWidth - e.clientWidth") <= 0
    shot("dashboard")


def test_the_webhooks_page_shows_each_endpoints_health(
    sized_admin: tuple[Any, int, Any],
    console_url: str,
    db_url: str,
    sessions: sessionmaker[Session],
) -> None:
    page, width, shot = sized_admin
    with receiving() as receiver:
        with session_scope(sessions, write=True) as session:
            for url, description in (
                (receiver.url, "Booking website: confirmations"),
                ("http://127.0.0.1:9/hooks/a-rather-long-path-for-the-crm-sync", "CRM sync"),
            ):
                manage.create_endpoint(
                    session, url=url, event_types=["person.created", "course.status_changed"],
                    description=description, allow=AllowList.parse("127.0.0.1"),
                )  # fmt: skip
        # One event: the receiver takes it, the closed port refuses it (retried in an hour).
        with session_scope(sessions, write=True) as session:
            events.record(session, event_type="person.created", subject="person:x", data={})
        deliverer = Deliverer(Settings(database_url=db_url, webhook_retry_schedule="3600"))
        try:
            deliverer.run_until_idle()
        finally:
            deliverer.close()
            deliverer.sessions.kw["bind"].dispose()
        assert len(receiver.delivered()) == 1
    page.goto(console_url + "/admin/webhooks")
    expect(page.get_by_role("heading", name="Webhook endpoints")).to_be_visible()
    no_sideways_scroll(page)
    failing = page.locator("tr", has_text="CRM sync")
    expect(failing.locator("td[data-label='Failing since'] .error")).to_be_visible()
    expect(failing.locator("td[data-label='Pending']")).to_have_text("1")
    expect(failing.locator("td[data-label='Last success']")).to_have_text("never")
    working = page.locator("tr", has_text="Booking website")
    expect(working.locator("td[data-label='Failing since']")).to_have_text("not failing")
    if width < 600:
        box = failing.bounding_box()
        assert box is not None
        assert box["width"] >= width - 40  # one card per endpoint
    shot("admin-webhooks")
