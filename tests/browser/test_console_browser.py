"""The console in a real browser (Playwright driving Debian's Chromium)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import LOCKOUT, USERS, sign_in

pytestmark = pytest.mark.browser
ANN, BEN = "003DEMO00000ANNYD2", "003DEMO00000BENYD2"


def test_sign_in_lock_out_and_sign_out(page: Any, console_url: str) -> None:
    page.goto(console_url + "/audit")
    expect(page).to_have_url(re.compile(r"/console/login\?next="))
    for _ in range(LOCKOUT - 1):
        sign_in(page, console_url, "staff", "not the password")
        expect(page.get_by_role("alert")).to_have_text("Wrong user name or password.")
    sign_in(page, console_url, "staff", "not the password")
    expect(page.get_by_role("alert")).to_contain_text("locked until")
    sign_in(page, console_url, "staff")  # the right password, but locked
    expect(page.get_by_role("alert")).to_contain_text("locked until")
    page.goto(console_url + "/login?next=/console/audit")
    page.get_by_label("User name").fill(USERS["viewer"])
    page.get_by_label("Password").fill("correct horse battery staple")
    page.get_by_role("button", name="Sign in").click()
    expect(page).to_have_url(re.compile(r"/console/audit$"))
    expect(page.get_by_text("Signed in as")).to_contain_text("vera")
    page.get_by_role("button", name="Sign out", exact=True).click()
    expect(page).to_have_url(re.compile(r"/console/login"))
    page.goto(console_url + "/people")
    expect(page).to_have_url(re.compile(r"/console/login"))


def test_a_forged_form_is_refused(page: Any, console_url: str) -> None:
    sign_in(page, console_url, "staff")
    page.goto(f"{console_url}/people/{BEN}")
    page.eval_on_selector_all("input[name=csrf]", "els => els.forEach(e => e.value = 'forged')")
    page.get_by_label("City").fill("Nowhere")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Not allowed")
    expect(page.get_by_role("alert")).to_contain_text("CSRF check")
    page.goto(f"{console_url}/people/{BEN}")
    expect(page.get_by_label("City")).not_to_have_value("Nowhere")


def test_roles(page: Any, console_url: str) -> None:
    sign_in(page, console_url, "viewer")
    page.goto(f"{console_url}/people/{BEN}")
    expect(page.get_by_role("button", name="Save changes")).to_have_count(0)
    expect(page.get_by_role("link", name="API keys")).to_have_count(0)
    page.get_by_role("button", name="Sign out", exact=True).click()
    sign_in(page, console_url, "staff")
    expect(page.get_by_role("link", name="API keys")).to_have_count(0)
    page.goto(console_url + "/admin/keys")
    expect(page.get_by_role("alert")).to_contain_text("needs the admin role")


def test_search_with_and_without_javascript(
    page: Any, console_url: str, playwright_browser: Any
) -> None:
    sign_in(page, console_url, "viewer")
    search = page.get_by_label("Name, e-mail, phone, licence or date of birth")
    search.fill("0412 345 678")
    search.press("Enter")
    expect(page.get_by_role("link", name="Ann Nguyen")).to_be_visible()
    search.fill("Anne Nguyn")  # htmx searches as one types
    expect(page.get_by_role("link", name="Ann Nguyen")).to_be_visible()
    expect(page).to_have_url(re.compile(r"q=Anne"))
    # The core reads work without JavaScript.
    context = playwright_browser.new_context(java_script_enabled=False)
    try:
        bare = context.new_page()
        sign_in(bare, console_url, "viewer")
        bare.goto(console_url + "/people?q=nguyen")
        expect(bare.get_by_role("link", name="Ann Nguyen")).to_be_visible()
        bare.get_by_role("link", name="Ann Nguyen").click()
        expect(bare.get_by_role("heading", level=1)).to_contain_text("Ann Nguyen")
    finally:
        context.close()


def test_a_persons_page_and_an_edit(page: Any, console_url: str) -> None:
    sign_in(page, console_url, "staff")
    page.goto(f"{console_url}/people?q=Ben Kelly")
    page.get_by_role("link", name="Ben Kelly").first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Ben Kelly")
    expect(page.get_by_text("Status history").first).to_be_visible()
    page.get_by_label("E-mail").fill("not an e-mail")
    page.get_by_role("button", name="Save changes").click()
    expect(page.locator("#edit-errors")).to_contain_text(
        "email: must be an e-mail address such as ann@example.com (received text of"
    )
    page.get_by_label("E-mail").fill("ben.kelly@example.org")
    page.get_by_label("City").fill("Wollongong")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("status")).to_contain_text("Done")
    expect(page.get_by_label("City")).to_have_value("Wollongong")
    expect(page.get_by_role("cell", name="console.modify_person").first).to_be_visible()


def test_audit_filtering(page: Any, console_url: str) -> None:
    sign_in(page, console_url, "staff")
    page.goto(f"{console_url}/people/{ANN}")
    page.get_by_label("City").fill("Geelong")
    page.get_by_role("button", name="Save changes").click()
    page.get_by_role("link", name="Audit").click()
    page.get_by_label("API key or staff user").fill(USERS["staff"])
    page.get_by_label("Operation").fill("console.modify_person")
    page.get_by_role("button", name="Filter").click()
    rows = page.locator("#records tbody tr")
    expect(rows).to_have_count(1)
    rows.first.get_by_role("link").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Audit record")
    expect(page.locator("pre").first).to_contain_text("Geelong")
    page.go_back()
    page.get_by_label("Outcome").select_option("failure")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_text("No audit record matches.")).to_be_visible()


def test_admin_pages(page: Any, console_url: str) -> None:
    sign_in(page, console_url, "admin")
    page.get_by_role("link", name="API keys").click()
    page.get_by_label("Who or what it is for").fill("front desk")
    page.get_by_label("match").check()
    page.get_by_role("button", name="Create key").click()
    key = page.locator("#new-key").inner_text()
    assert key.startswith("rcrm_")
    page.goto(console_url + "/admin/keys")  # shown once: not on the page again
    expect(page.locator("#new-key")).to_have_count(0)
    expect(page.get_by_text(key)).to_have_count(0)
    page.get_by_role("button", name="Revoke key front desk").click()
    expect(page.get_by_role("cell", name=re.compile("^revoked"))).to_be_visible()

    page.get_by_role("link", name="Staff users").click()
    page.get_by_label("User name").fill("newbie")
    page.get_by_label("Role").select_option("staff")
    page.get_by_role("button", name="Create user").click()
    expect(page.locator("#new-password")).to_be_visible()
    page.get_by_role("button", name="Disable newbie").click()
    expect(page.get_by_role("row", name=re.compile("newbie"))).to_contain_text("disabled")

    page.get_by_role("link", name="Products").click()
    page.get_by_label("Name").fill("Night ride")
    page.get_by_label("Code").fill("NIGHT")
    page.get_by_label("Price").fill("99.50")
    page.get_by_role("button", name="Create product").click()
    expect(page.get_by_role("status")).to_contain_text("Done")
    page.get_by_role("button", name="Deactivate Night ride").click()
    expect(page.get_by_role("row", name=re.compile("Night ride"))).to_contain_text("inactive")
