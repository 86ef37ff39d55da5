"""The console's pages and navigation. A module adds its pages by declaring them on a
``frame.ConsoleRouter``, adding that router to ROUTERS and, if it belongs in the
navigation, a NavItem to NAV (docs/console.md)."""

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
from ridercrm.web.console.frame import ConsoleRouter, NavItem

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

NAV: list[NavItem] = [
    NavItem("Find a person", "/people"),
    NavItem("Day sheet", "/daysheet"),
    NavItem("Sessions", "/sessions"),
    NavItem("Dashboard", "/dashboard"),
    NavItem("Duplicates", "/duplicates"),
    NavItem("Messages", "/messages"),
    NavItem("Audit", "/audit"),
    NavItem("Products", "/admin/products", role="admin"),
    NavItem("API keys", "/admin/keys", role="admin"),
    NavItem("Staff users", "/admin/users", role="admin"),
    NavItem("Webhooks", "/admin/webhooks", role="admin"),
    NavItem("Message templates", "/admin/templates", role="admin"),
]
