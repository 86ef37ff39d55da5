"""The dashboard page: access, the period chooser, charts with their numbers beside them."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from tests.courses import builders

PERIOD = "from=2026-11-30&to=2026-12-13"


@pytest.fixture
def courses(sessions: sessionmaker[Session]) -> None:
    with session_scope(sessions, write=True) as session:
        lap = builders.product(session, "LAP-SOM", "Learner <Approved>")
        rider = builders.person(session)
        for when, status, feedback in (
            ("2026-12-05 08:30:00", "completed - pass", "pass A"),
            ("2026-12-05 08:30:00", "completed - fail", "fail 1"),
            ("2026-12-06 08:30:00", "cancelled", ""),
            ("2026-12-09 08:30:00", "booked", ""),
        ):
            builders.course(
                session,
                rider,
                lap,
                course_datetime=when,
                course_status=status,
                course_feedback=feedback,
                rider_instructor_1="<b>Sam</b>",
            )


def test_no_session_is_sent_to_sign_in(make_client: Callable[..., TestClient]) -> None:
    client = make_client()
    client.follow_redirects = False
    answer = client.get(f"/console/dashboard?{PERIOD}")
    assert answer.status_code == 303
    assert answer.headers["location"].startswith("/console/login?next=%2Fconsole%2Fdashboard")


def test_a_viewer_sees_every_chart_with_its_numbers(
    console_as: Callable[..., TestClient], courses: None
) -> None:
    page = console_as("viewer").get(f"/console/dashboard?{PERIOD}")
    assert page.status_code == 200
    assert page.headers["content-security-policy"].startswith("default-src 'self'")
    assert page.text.count('<svg xmlns="http://www.w3.org/2000/svg" role="img"') == 6
    assert page.text.count('-table">') == 6
    assert ' style="' not in page.text  # the CSP allows no inline style
    assert re.search(r'id="figure-bookings">4<', page.text)
    assert "2 weeks, Monday 30 November 2026 to Sunday 13 December 2026" in page.text
    # The weekly table: week, somerton, total.
    table = page.text.split('id="bookings-location-table">', 1)[1].split("</table>", 1)[0]
    rows = re.findall(r"<tr><th scope=\"row\">(.*?)</th>(.*?)</tr>", table)
    assert [(week, re.findall(r">(\d+)<", cells)) for week, cells in rows] == [
        ("2026-11-30", ["3", "3"]),
        ("2026-12-07", ["1", "1"]),
    ]
    rates = page.text.split('id="pass-instructor-table">', 1)[1].split("</table>", 1)[0]
    assert "&lt;b&gt;Sam&lt;/b&gt;" in rates
    assert "<b>Sam</b>" not in page.text
    assert "50%" in rates
    assert "Learner &lt;Approved&gt; (LAP-SOM)" in page.text


def test_the_default_period_is_twelve_weeks(console_as: Callable[..., TestClient]) -> None:
    page = console_as("viewer").get("/console/dashboard")
    assert page.status_code == 200
    assert "12 weeks, Monday" in page.text
    assert "No courses in this period." in page.text


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("from=yesterday", "from: &#39;yesterday&#39; is not a date written YYYY-MM-DD."),
        ("from=2026-12-01&to=2026-01-01", "the period must start before it ends"),
        ("from=2020-01-01&to=2026-01-01", "a period is at most 53 weeks"),
        ("to=9999-12-31", "to: must be in the years 1900 to 9998"),
    ],
)
def test_a_bad_period_is_a_400_page(
    console_as: Callable[..., TestClient], query: str, message: str
) -> None:
    answer = console_as("viewer").get(f"/console/dashboard?{query}")
    assert answer.status_code == 400
    assert message in answer.text
