"""Console page: the dashboard, its charts with their numbers beside them."""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import Any

from fastapi.responses import Response
from markupsafe import Markup

from ridercrm import fields
from ridercrm.reports import charts
from ridercrm.reports import service as reports
from ridercrm.reports.service import Dashboard, PassRate, PeriodError, WeeklySeries
from ridercrm.rosters import service as rosters
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Visit

router = ConsoleRouter()

QUICK_WEEKS = (4, 12, 26, 52)


@dataclass
class Chart:
    """One chart and the table of its numbers."""

    id: str
    title: str
    svg: Markup
    headers: list[str]
    rows: list[list[Any]]
    numeric_from: int = 1  # columns from this one hold numbers


def _date(value: str | None, name: str) -> dt.date | None:
    if not value or not value.strip():
        return None
    try:
        return dt.date.fromisoformat(value.strip())
    except ValueError:
        raise frame.ConsoleRefusal(
            400, f"{name}: {value[:40]!r} is not a date written YYYY-MM-DD."
        ) from None


def _weekly(chart_id: str, title: str, data: WeeklySeries, unit: str) -> Chart:
    # Sites by their proper names (the stored spellings are the interface's).
    data = WeeklySeries(
        data.weeks, {fields.display_name(label): counts for label, counts in data.series.items()}
    )
    svg = charts.stacked_weeks(chart_id=chart_id, title=title, data=data, unit=unit)
    labels = list(data.series)
    rows = [
        [week.isoformat(), *(data.series[label][i] for label in labels), data.totals[i]]
        for i, week in enumerate(data.weeks)
    ]
    return Chart(chart_id, title, Markup(svg), ["Week starting", *labels, "Total"], rows)  # noqa: S704 - escaped by charts


def _rates(chart_id: str, title: str, heading: str, rates: list[PassRate]) -> Chart:
    rates = [dataclasses.replace(r, label=fields.display_name(r.label)) for r in rates]
    svg = charts.rate_bars(chart_id=chart_id, title=title, rates=rates)
    rows = [[r.label, r.passed, r.failed, f"{r.rate:.0%}"] for r in rates]
    headers = [heading, "Passed", "Failed", "Pass rate"]
    return Chart(chart_id, title, Markup(svg), headers, rows)  # noqa: S704 - escaped by charts


def charts_of(board: Dashboard) -> list[Chart]:
    return [
        _weekly(
            "bookings-location", "Bookings per week by site", board.bookings_by_location, "courses"
        ),
        _weekly(
            "bookings-source", "Bookings per week by source", board.bookings_by_source, "courses"
        ),
        _weekly(
            "cancellations",
            "Cancellations per week by site",
            board.cancellations_by_location,
            "cancelled",
        ),
        _rates("pass-location", "Pass rate by site", "Site", board.pass_by_location),
        _rates(
            "pass-instructor",
            "Pass rate by lead instructor",
            "Instructor",
            board.pass_by_instructor,
        ),
        _rates("pass-product", "Pass rate by product", "Product", board.pass_by_product),
    ]


@router.page("/dashboard", role="viewer", name="dashboard")
async def dashboard(visit: Visit) -> Response:
    """Bookings, cancellations and pass rates over a chosen period, as charts and tables."""
    today = frame.business_today(visit.request)
    start = _date(visit.request.query_params.get("from"), "from")
    end = _date(visit.request.query_params.get("to"), "to")
    try:
        period = reports.period_of(start, end, today=today)
    except PeriodError as problem:
        raise frame.ConsoleRefusal(400, f"{problem}.") from None
    board = await visit.read(lambda session: reports.dashboard(session, period=period))
    days = frame.services_of(visit.request).settings.sessions_flag_days
    watch = await visit.read(lambda session: len(rosters.flagged(session, today=today, days=days)))
    this_week = reports.monday(today)
    quick = [
        (weeks, this_week - dt.timedelta(weeks=weeks - 1), this_week + dt.timedelta(days=6))
        for weeks in QUICK_WEEKS
    ]
    cancelled = board.cancellations_by_location.total
    booked = board.bookings_by_location.total
    return visit.render(
        "dashboard.html",
        {
            "board": board,
            "period": period,
            "charts": charts_of(board),
            "quick": quick,
            "booked": booked,
            "cancelled": cancelled,
            "cancelled_share": cancelled / booked if booked else 0.0,
            "sessions_to_watch": watch,
            "watch_days": days,
        },
    )
