"""Hostile addresses on every console route: whatever a path parameter or a query value
holds, the answer is a page (a 4xx, or the page itself), never a 500.

Every route declared on a ``ConsoleRouter`` is tried, so a route added later is swept too.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from fastapi.routing import APIRoute
from fastapi.testclient import TestClient

from ridercrm.web.console.pages import ROUTERS
from tests.console.conftest import csrf

# Digits that str.isdigit() accepts and int() does not (superscripts), digits int()
# reads (Arabic-Indic), values beyond any database integer, NUL, an encoded lone
# surrogate, dot segments, signs and spaces, ids of other kinds, and a long value.
HOSTILE_VALUES = [
    "%C2%B2",  # ²
    "%C2%B9%C2%B2",  # ¹²
    "%D9%A1",  # Arabic-Indic one
    "9" * 30,
    "2147483648",  # one past a 32-bit integer column (PostgreSQL refuses it: was a 500)
    "9223372036854775808",  # one past a 64-bit integer
    "-1",
    "0",
    "+1",
    "%201",
    "1e3",
    "%00",
    "a%00b",
    "%ED%A0%80",
    "%FF",
    "%2e%2e",
    "01tDEMO00LAPSOMYT5",
    "a0A000000000001AAA",
    "ep_1",
    "x" * 3000,
]
QUERY_NAMES = ("q", "before", "status", "person", "since", "until", "from", "to", "site", "date")


def _routes() -> list[tuple[str, str]]:
    return [
        (method, "/console" + route.path)
        for router in ROUTERS
        for route in router.routes
        if isinstance(route, APIRoute)
        for method in route.methods
    ]


def test_hostile_path_values_never_reach_a_500(console_as: Callable[..., TestClient]) -> None:
    client = console_as("admin")
    token = csrf(client)
    for method, template in _routes():
        if template.endswith(("/logout", "/logout-everywhere")):
            continue  # they would end the session the sweep runs in
        for value in HOSTILE_VALUES:
            path = re.sub(r"{\w+}", value, template)
            data = {"csrf": token, "survivor": value, "field.email": value, "name": "x"}
            answer = client.request(method, path, data=data if method == "POST" else None)
            assert answer.status_code < 500, (method, path[:80], answer.text[:300])
    assert client.get("/console/people").status_code == 200  # still signed in


def test_hostile_query_values_never_reach_a_500(console_as: Callable[..., TestClient]) -> None:
    client = console_as("admin")
    for method, template in _routes():
        if method != "GET" or "{" in template:
            continue
        for value in HOSTILE_VALUES:
            query = "&".join(f"{name}={value}" for name in QUERY_NAMES)
            answer = client.get(f"{template}?{query}")
            assert answer.status_code < 500, (template, value[:40], answer.text[:300])


def test_the_calendars_first_and_last_days_never_reach_a_500(
    console_as: Callable[..., TestClient],
) -> None:
    """A date filter at the edge of the calendar: the day after 9999-12-31 is no date."""
    client = console_as("staff")
    edges = ("0001-01-01", "9999-12-31")
    for method, template in _routes():
        if method != "GET" or "{" in template:
            continue
        for first in edges:
            for last in edges:
                query = {
                    "since": first, "until": last, "from": first, "to": last,
                    "date": last, "week": first, "site": "somerton",
                }  # fmt: skip
                answer = client.get(template, params=query)
                assert answer.status_code < 500, (template, query, answer.text[:300])
                for name, value in query.items():
                    answer = client.get(template, params={name: value})
                    assert answer.status_code < 500, (template, name, value, answer.text[:300])
