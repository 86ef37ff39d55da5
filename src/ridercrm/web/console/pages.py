"""The console's pages. A module adds its pages by declaring them on a
``frame.ConsoleRouter`` and adding that router to ROUTERS; if they belong in the
navigation, a NavItem goes to ``nav.NAV`` (docs/console.md)."""

from __future__ import annotations

from ridercrm.web.console import (
    admin,
    audit,
    auth,
    dashboard,
    daysheet,
    duplicates,
    messages,
    people,
    sessions,
)
from ridercrm.web.console.frame import ConsoleRouter

ROUTERS: list[ConsoleRouter] = [
    auth.router,
    people.router,
    audit.router,
    admin.router,
    daysheet.router,
    dashboard.router,
    duplicates.router,
    sessions.router,
    messages.router,
]
