"""Take the screenshots of docs/console.md: `python -m tests.browser.screenshots [FOLDER]`.

A live server on a fresh SQLite database in a temporary directory with the demo data
and a staff user of each role, driven by the same Playwright and Chromium setup as the
browser tests. Writes PNG files to FOLDER (default docs/console).
"""

from __future__ import annotations

import datetime as dt
import sys
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from ridercrm.config import Settings
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.demo import load_demo
from ridercrm.events import manage
from ridercrm.events import service as events
from ridercrm.events.delivery import Deliverer
from ridercrm.migrate import upgrade
from ridercrm.netsafety import AllowList
from ridercrm.staff import service as staff_service
from tests.browser import screenshots_duplicates, screenshots_ops
from tests.browser.chromium import MISSING, chromium_path, launch
from tests.live import live_server

PASSWORD = "correct horse battery staple"


def _sign_in(page: Any, root: str, name: str) -> None:
    page.goto(root + "/login")
    page.get_by_label("User name").fill(name)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()


def _failing_webhook(sessions: Any, settings: Settings) -> None:
    """An endpoint on a closed port, enabled, whose one delivery failed (retried later)."""
    with session_scope(sessions, write=True) as session:
        manage.create_endpoint(
            session, url="http://127.0.0.1:9/hooks", event_types=["person.created"],
            description="CRM sync (not listening)", allow=AllowList.parse("127.0.0.1"),
        )  # fmt: skip
    with session_scope(sessions, write=True) as session:
        events.record(session, event_type="person.created", subject="person:x", data={})
    deliverer = Deliverer(settings.model_copy(update={"webhook_retry_schedule": "3600"}))
    try:
        deliverer.run_until_idle()
    finally:
        deliverer.close()
        deliverer.sessions.kw["bind"].dispose()


def take(folder: Path) -> None:
    executable = chromium_path()
    if executable is None:
        raise SystemExit(MISSING)
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as directory:
        settings = Settings(database_url=f"sqlite:///{directory}/screens.db")
        engine = build_engine(settings)
        upgrade(engine)
        # As the app makes them: people written keep their matching keys.
        sessions = session_factory(engine)
        load_demo(sessions, only_if_empty=True)
        day = screenshots_ops.sheet_day(dt.date.today())
        screenshots_ops.add_riders(sessions, day)
        screenshots_duplicates.find(sessions, settings)
        with session_scope(sessions, write=True) as session:
            staff_service.create_user(session, name="ada", role="admin", password=PASSWORD)
            staff_service.create_user(session, name="sid", role="staff", password=PASSWORD)
        _failing_webhook(sessions, settings)
        engine.dispose()
        with live_server(settings) as base, sync_playwright() as playwright:
            browser = launch(playwright, executable)
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            root = base + "/console"

            def shot(name: str) -> None:
                page.screenshot(path=str(folder / f"{name}.png"), full_page=True)

            page.goto(root + "/login")
            shot("login")
            _sign_in(page, root, "sid")
            page.goto(root + "/people?q=0412 345 678")
            shot("search")
            page.goto(root + "/people/003DEMO00000BENYD2")
            page.get_by_label("City").fill("Wollongong")
            page.get_by_role("button", name="Save changes").click()
            shot("person")
            page.goto(root + "/audit?who=sid")
            shot("audit")
            page.locator("#records tbody a").first.click()
            shot("audit-record")
            screenshots_ops.shoot(page, root, shot, day)
            screenshots_duplicates.shoot(page, root, shot)
            page.goto(root + "/admin/keys")
            shot("forbidden")
            page.get_by_role("button", name="Sign out", exact=True).click()
            _sign_in(page, root, "ada")
            page.goto(root + "/admin/keys")
            page.get_by_label("Who or what it is for").fill("front desk")
            page.get_by_label("courses").check()
            page.get_by_role("button", name="Create key").click()
            shot("admin-keys")
            page.goto(root + "/admin/users")
            shot("admin-users")
            page.goto(root + "/admin/products")
            shot("admin-products")
            page.goto(root + "/admin/webhooks")
            shot("admin-webhooks")
            # A phone on the range (390 px): today's sheet at Somerton, and a person.
            phone = browser.new_page(viewport={"width": 390, "height": 844}, has_touch=True)
            _sign_in(phone, root, "sid")
            phone.goto(root + "/daysheet?site=somerton")
            phone.locator("#group-1").evaluate("e => e.scrollIntoView()")
            phone.screenshot(path=str(folder / "daysheet-phone.png"))
            phone.goto(root + "/people/003DEMO00000BENYD2")
            phone.locator("#courses").evaluate("e => e.scrollIntoView()")
            phone.screenshot(path=str(folder / "person-phone.png"))
            browser.close()


if __name__ == "__main__":
    take(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("docs/console"))
