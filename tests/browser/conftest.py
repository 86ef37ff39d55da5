"""Browser tests: a live server on the test database with the demo data and one staff user
of each role, and a Playwright page in Debian's Chromium; a failing test leaves a
screenshot in browser-failures/ (RIDERCRM_BROWSER_FAILURES to put them elsewhere)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.staff import service as staff_service
from tests.browser.chromium import MISSING, chromium_path, launch
from tests.live import live_server

PASSWORD = "correct horse battery staple"
USERS = {"viewer": "vera", "staff": "sid", "admin": "ada"}
LOCKOUT = 3

pytestmark = pytest.mark.browser


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[Any]) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    setattr(item, f"report_{report.when}", report)


@pytest.fixture(scope="session")
def playwright_browser() -> Iterator[Any]:
    executable = chromium_path()
    if executable is None:
        pytest.skip(MISSING)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = launch(playwright, executable)
        yield browser
        browser.close()


@pytest.fixture
def console_url(db_url: str, sessions: sessionmaker[Session]) -> Iterator[str]:
    """The console's root on a live server with the demo data and vera, sid and ada."""
    load_demo(sessions, only_if_empty=True)
    with session_scope(sessions, write=True) as session:
        for role, name in USERS.items():
            staff_service.create_user(session, name=name, role=role, password=PASSWORD)
    settings = Settings(database_url=db_url, console_lockout_attempts=LOCKOUT)
    with live_server(settings) as base:
        yield base + "/console"


@pytest.fixture
def page(playwright_browser: Any, request: pytest.FixtureRequest) -> Iterator[Any]:
    context = playwright_browser.new_context(viewport={"width": 1280, "height": 900})
    context.set_default_timeout(15_000)
    page = context.new_page()
    yield page
    report = getattr(request.node, "report_call", None)
    if report is not None and report.failed:
        folder = Path(os.environ.get("RIDERCRM_BROWSER_FAILURES", "browser-failures"))
        folder.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.nodeid)
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)
    context.close()


def sign_in(page: Any, console_url: str, role: str, password: str = PASSWORD) -> None:
    page.goto(console_url + "/login")
    page.get_by_label("User name").fill(USERS[role])
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
