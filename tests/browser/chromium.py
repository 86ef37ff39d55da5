"""Playwright on Debian's Chromium: found on PATH, never downloaded (docs/console.md).

Used by the browser tests and by ``python -m tests.browser.screenshots``.
"""

from __future__ import annotations

import shutil
from typing import Any

NAMES = ("chromium", "chromium-browser")
MISSING = (
    "the browser tests drive Debian's Chromium, and none is on PATH:"
    " `apt-get install chromium` (Playwright never downloads a browser here)"
)


def chromium_path() -> str | None:
    """The Chromium executable on PATH, or None."""
    for name in NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def launch(playwright: Any, executable: str) -> Any:
    """A headless Chromium browser from ``executable``."""
    return playwright.chromium.launch(
        executable_path=executable,
        headless=True,
        # Containers and CI run as root, where Chromium's sandbox cannot start.
        args=["--no-sandbox", "--disable-dev-shm-usage"],
    )
