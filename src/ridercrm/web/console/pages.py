"""The console's pages and navigation. A module adds its page by adding its router to
ROUTERS and, if it belongs in the navigation, a NavItem to NAV (docs/console.md)."""

from __future__ import annotations

from fastapi import APIRouter

from ridercrm.web.console import admin, audit, auth, dashboard, daysheet, duplicates, people
from ridercrm.web.console.frame import NavItem

ROUTERS: list[APIRouter] = [
    auth.router,
    people.router,
    audit.router,
    admin.router,
    daysheet.router,
    dashboard.router,
    duplicates.router,
]

NAV: list[NavItem] = [
    NavItem("Find a person", "/people"),
    NavItem("Day sheet", "/daysheet"),
    NavItem("Dashboard", "/dashboard"),
    NavItem("Duplicates", "/duplicates"),
    NavItem("Audit", "/audit"),
    NavItem("Products", "/admin/products", role="admin"),
    NavItem("API keys", "/admin/keys", role="admin"),
    NavItem("Staff users", "/admin/users", role="admin"),
]
