"""The dashboard's SVG charts: well-formed, labelled for assistive technology, escaped."""

from __future__ import annotations

import datetime as dt
import xml.etree.ElementTree as ET

from ridercrm.reports import charts
from ridercrm.reports.service import PassRate, WeeklySeries

SVG = "{http://www.w3.org/2000/svg}"
WEEKS = [dt.date(2026, 11, 2), dt.date(2026, 11, 9), dt.date(2026, 11, 16)]


def parse(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output


def test_stacked_weeks_is_a_labelled_image_with_a_bar_per_count() -> None:
    data = WeeklySeries(WEEKS, {"somerton": [3, 0, 1], "<b>x</b>": [2, 6, 0]})
    root = parse(
        charts.stacked_weeks(chart_id="loc", title="Bookings & more", data=data, unit="courses")
    )
    assert root.get("role") == "img"
    assert root.get("aria-labelledby") == "loc-title"
    assert root.get("aria-describedby") == "loc-desc"
    assert root.find(f"{SVG}title").text == "Bookings & more"  # type: ignore[union-attr]
    desc = root.find(f"{SVG}desc").text  # type: ignore[union-attr]
    assert desc.startswith(
        "12 courses in 3 weeks from 2026-11-02; the most, 6, in the week of 2026-11-09"
    )  # type: ignore[union-attr]
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    tips = [r.find(f"{SVG}title").text for r in bars]  # type: ignore[union-attr]
    assert len(bars) == 4  # zero counts draw nothing
    assert "<b>x</b>, week of 2026-11-09: 6 courses" in tips
    legend = [t.text for t in root.iter(f"{SVG}text")]
    assert "<b>x</b>" in legend
    assert "somerton" in legend


def test_stacked_weeks_of_nothing() -> None:
    root = parse(
        charts.stacked_weeks(chart_id="e", title="t", data=WeeklySeries(WEEKS, {}), unit="courses")
    )
    assert root.find(f"{SVG}desc").text.startswith("0 courses in 3 weeks")  # type: ignore[union-attr]


def test_rate_bars_scale_to_a_hundred_percent_and_cut_long_lists() -> None:
    rates = [PassRate(f"instructor {i}", i, 10 - i) for i in range(10)]
    root = parse(charts.rate_bars(chart_id="r", title="Pass rate", rates=rates, limit=4))
    bars = [r for r in root.iter(f"{SVG}rect") if r.find(f"{SVG}title") is not None]
    assert len(bars) == 4
    widths = [float(r.get("width", "")) for r in bars]
    assert widths == [0.0, 30.0, 60.0, 90.0]
    desc = root.find(f"{SVG}desc").text  # type: ignore[union-attr]
    assert "the highest, 30%, is instructor 3" in desc  # type: ignore[operator]
    assert "shows the 4 with the most" in desc  # type: ignore[operator]
    empty = parse(charts.rate_bars(chart_id="n", title="t", rates=[]))
    assert empty.find(f"{SVG}desc").text.startswith("No completed courses")  # type: ignore[union-attr]


def test_nice_ceiling() -> None:
    assert [charts.nice_ceiling(v) for v in (0, 1, 3, 7, 12, 101, 2000)] == [
        1,
        1,
        5,
        10,
        20,
        200,
        2000,
    ]
