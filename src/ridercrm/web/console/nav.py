"""The console's navigation: the links every page's frame shows, by role (docs/console.md).

A leaf module: the frame reads it, and it knows no page (a page's path is all it names).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class NavItem:
    """A link in the console's navigation, shown to users whose role reaches ``role``."""

    label: str
    path: str  # below the console's root, e.g. "/people"
    role: str = "viewer"


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
