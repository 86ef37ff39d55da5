"""The duplicates pages' screenshots, taken by tests/browser/screenshots.py."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.duplicates import scan
from ridercrm.matching.service import thresholds_of


def find(sessions: sessionmaker[Session], settings: Settings) -> None:
    """Scan the demo people, as `ridercrm duplicates scan` does: a few riders who
    enquired again as leads are proposed."""
    scan.scan(
        sessions,
        thresholds=thresholds_of(settings),
        review_threshold=settings.duplicates_review_threshold,
    )


def shoot(page: Any, root: str, shot: Callable[[str], None]) -> None:
    """The queue, then a cluster with the preview of its merge."""
    page.goto(root + "/duplicates")
    shot("duplicates")
    # A demo rider who enquired again as a lead under her nickname.
    row = page.locator("#clusters tbody tr", has_text="Jess Scott")
    row.get_by_role("link", name=re.compile(r"^Review cluster \d+$")).click()
    page.get_by_role("button", name="Preview merge").click()
    shot("duplicates-cluster")
