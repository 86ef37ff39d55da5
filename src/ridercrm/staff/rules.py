"""Roles and what they may do; plain Python, unit-tested without a database."""

from __future__ import annotations

import unicodedata

ROLES = ("viewer", "staff", "admin")
"""Each role may do what the roles before it may: viewer reads; staff also changes
people and courses; admin also manages staff users, API keys and products."""

MAX_NAME_LENGTH = 80  # the staff_users.name column
MIN_PASSWORD_LENGTH = 12


def allows(role: str, needed: str) -> bool:
    """Whether a user of ``role`` may do what needs ``needed``."""
    if role not in ROLES or needed not in ROLES:
        return False
    return ROLES.index(role) >= ROLES.index(needed)


def name_problem(name: str) -> str | None:
    """Why a staff user's name is not acceptable, or None."""
    if not name or not name.strip():
        return "a staff user needs a name"
    if name != name.strip():
        return "a staff user's name has no leading or trailing spaces"
    if len(name) > MAX_NAME_LENGTH:
        return f"a staff user's name is at most {MAX_NAME_LENGTH} characters"
    if any(unicodedata.category(ch).startswith("C") for ch in name):
        # Also the invisible ones (zero-width, right-to-left override): "adm\u200bin" would
        # pass for admin on the audit page.
        return "a staff user's name has no control or invisible characters"
    if "/" in name or "\\" in name or "?" in name or "#" in name:
        return "a staff user's name has no / \\ ? or # (it is part of page addresses)"
    if set(name) == {"."}:
        # A browser resolves /admin/users/../disable to /admin/disable: no page could reach it.
        return "a staff user's name is not only dots (it is part of page addresses)"
    return None


def password_problem(password: str) -> str | None:
    """Why a chosen password is not acceptable, or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"a password has at least {MIN_PASSWORD_LENGTH} characters"
    if len(password) > 1024:
        return "a password has at most 1024 characters"
    if "\x00" in password:
        return "a password has no NUL characters"
    if not password.strip():
        return "a password is not only spaces"
    return None
