"""Reviewing duplicates in a real browser: the queue, a cluster side by side, a merge
previewed with a value chosen from the other record, merged, and undone."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.duplicates import scan
from ridercrm.matching.score import Thresholds
from ridercrm.people.models import Person
from tests.browser.conftest import sign_in

pytestmark = pytest.mark.browser


def test_review_preview_merge_and_undo_a_cluster(
    page: Any, console_url: str, sessions: sessionmaker[Session]
) -> None:
    # The demo holds a few riders who enquired again as leads; the scan proposes them.
    found = scan.scan(sessions, thresholds=Thresholds(), review_threshold=12.0)
    assert found.clusters >= 1
    sign_in(page, console_url, "staff")
    page.get_by_role("link", name="Duplicates", exact=True).click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Duplicates")
    page.get_by_role("link", name=re.compile(r"^Review cluster \d+$")).first.click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Duplicates cluster")
    side = page.locator("table.side")
    # Differing rows say so in words, not only by their colour.
    expect(side.locator("tr.differs").first).to_contain_text("differs")
    expect(page.get_by_role("heading", name="Why they were proposed")).to_be_visible()

    # The contact remains (a lead cannot absorb a contact); take the lead's lead source.
    columns = side.locator("thead th[scope=col]")
    kinds = [columns.nth(i).locator(".badge").inner_text() for i in (1, 2)]
    lead_id = side.locator("thead th[scope=col] .note").nth(kinds.index("lead")).inner_text()
    contact_id = side.locator("thead th[scope=col] .note").nth(kinds.index("contact")).inner_text()
    expect(
        page.get_by_role("radio", name=re.compile(rf"Keep this record.*{contact_id}"))
    ).to_be_checked()
    lead_source = page.locator(f'input[name="field.lead_source"][value="{lead_id}"]')
    lead_source.check()
    page.get_by_role("button", name="Preview merge").click()

    preview = page.locator("#preview")
    expect(preview.get_by_role("heading")).to_contain_text("Preview of the merge")
    expect(preview).to_contain_text("The record that remains: ")
    expect(preview).to_contain_text(contact_id)
    row = preview.locator("tr", has=page.locator("th", has_text="Lead source"))
    expect(row.locator("td").nth(1)).to_contain_text(lead_id)
    with session_scope(sessions) as session:
        lead = session.get(Person, lead_id)
        assert lead is not None
        assert lead.merged_into is None  # a preview changes nothing
        wanted = lead.lead_source
    page.get_by_role("button", name="Merge these records").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("in effect")
    expect(page.get_by_role("status")).to_contain_text("Done.")
    with session_scope(sessions) as session:
        merged = session.scalars(select(Person).where(Person.id.in_([lead_id, contact_id]))).all()
        by_id = {p.id: p for p in merged}
        assert by_id[lead_id].merged_into == contact_id
        assert by_id[contact_id].lead_source == wanted

    # The survivor's page says what was merged into it and leads to the undo.
    page.locator("dl.details").get_by_role("link").first.click()
    expect(page.get_by_text("was merged into this record")).to_be_visible()
    page.get_by_role("link", name=re.compile("The merges of this record")).click()
    page.get_by_role("link", name=re.compile(r"^Merge \d+$")).click()
    page.get_by_role("button", name="Undo this merge").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("undone")
    with session_scope(sessions) as session:
        restored = session.get(Person, lead_id)
        assert restored is not None
        assert restored.merged_into is None
