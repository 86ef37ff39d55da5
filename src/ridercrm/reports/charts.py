"""Small SVG charts, rendered by the service: no script, no font or style from elsewhere.

Each chart is an ``<svg role="img">`` named by its ``<title>`` and described by its
``<desc>`` (which states the figures in words), every bar carries its own ``<title>``
(a tooltip, and what a screen reader reads on it), colours come from the Okabe-Ito
palette (told apart with the common colour-vision deficiencies) and every text is
escaped. The page shows the numbers in a table beside each chart. See
docs/decisions.md (Dashboard) for why this is not a chart library.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from xml.sax.saxutils import escape, quoteattr

from ridercrm.reports.service import PassRate, WeeklySeries

PALETTE = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#009E73",  # bluish green
    "#CC79A7",  # reddish purple
    "#56B4E9",  # sky blue
    "#D55E00",  # vermillion
    "#000000",  # black
    "#F0E442",  # yellow (last: weakest contrast on white)
)
INK = "#1a1a1a"
GRID = "#c8c8c8"
# Presentation attributes, not a style attribute: the console's CSP allows no inline style.
FONT = 'font-family="system-ui, sans-serif" font-size="12"'


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def nice_ceiling(value: float) -> float:
    """A round upper bound for an axis: 1, 2 or 5 times a power of ten."""
    if value <= 0:
        return 1
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power  # pragma: no cover - the loop always returns


def _open(chart_id: str, title: str, desc: str, width: int, height: int, kind: str) -> list[str]:
    return [
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" height="{height}"'
        f' viewBox="0 0 {width} {height}" aria-labelledby="{chart_id}-title"'
        f' aria-describedby="{chart_id}-desc"'
        f' id="{chart_id}" class="chart {kind}" {FONT}>',
        f'<title id="{chart_id}-title">{escape(title)}</title>',
        f'<desc id="{chart_id}-desc">{escape(desc)}</desc>',
    ]


def _text(x: float, y: float, text: str, *, anchor: str = "start", extra: str = "") -> str:
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}" fill="{INK}"{extra}>'
        f"{escape(text)}</text>"
    )


def week_label(week: dt.date) -> str:
    return week.strftime("%d %b").lstrip("0")


def stacked_weeks(*, chart_id: str, title: str, data: WeeklySeries, unit: str) -> str:
    """Weekly counts as stacked bars, one colour per label, with a legend."""
    labels = list(data.series)
    totals = data.totals
    weeks = data.weeks
    top = nice_ceiling(max(totals, default=0))
    # The axis title sits below the week labels, and the legend below the axis title
    # with a line's gap, so they never overlap.
    left, right, upper, lower = 48, 12, 12, 68
    legend_rows = math.ceil(len(labels) / 4) if labels else 0
    plot_w = max(600, 34 * len(weeks))
    plot_h = 260
    width = left + plot_w + right
    height = upper + plot_h + lower + 18 * legend_rows
    busiest = max(range(len(weeks)), key=lambda i: totals[i]) if weeks else None
    desc = f"{data.total} {unit} in {len(weeks)} weeks from {weeks[0].isoformat()}" if weeks else ""
    if busiest is not None and data.total:
        desc += f"; the most, {totals[busiest]}, in the week of {weeks[busiest].isoformat()}"
    desc += ". The table beside the chart gives every figure."
    parts = _open(chart_id, title, desc, width, height, "weeks")
    for step in range(5):
        value = top * step / 4
        y = upper + plot_h - plot_h * step / 4
        parts.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="{GRID}"/>'
        )
        parts.append(_text(left - 6, y + 4, f"{value:g}", anchor="end"))
    slot = plot_w / max(len(weeks), 1)
    bar_w = max(4.0, slot * 0.7)
    label_every = max(1, math.ceil(len(weeks) / (plot_w / 48)))
    for i, week in enumerate(weeks):
        x = left + slot * i + (slot - bar_w) / 2
        base = float(upper + plot_h)
        for n, label in enumerate(labels):
            count = data.series[label][i]
            if not count:
                continue
            h = plot_h * count / top
            base -= h
            tip = f"{label}, week of {week.isoformat()}: {count} {unit}"
            parts.append(
                f'<rect x="{x:.1f}" y="{base:.1f}" width="{bar_w:.1f}" height="{h:.1f}"'
                f' fill="{colour(n)}"><title>{escape(tip)}</title></rect>'
            )
        if i % label_every == 0:
            parts.append(
                _text(x + bar_w / 2, upper + plot_h + 16, week_label(week), anchor="middle")
            )
    parts.append(_text(left, upper + plot_h + 36, "Week starting (Monday)"))
    for n, label in enumerate(labels):
        lx = left + (n % 4) * (plot_w / 4)
        ly = upper + plot_h + lower + 18 * (n // 4)
        parts.append(
            f'<rect x="{lx:.1f}" y="{ly - 10:.1f}" width="10" height="10" fill="{colour(n)}"/>'
        )
        parts.append(_text(lx + 14, ly, label))
    parts.append("</svg>")
    return "\n".join(parts)


def rate_bars(*, chart_id: str, title: str, rates: Sequence[PassRate], limit: int = 25) -> str:
    """Pass rates as horizontal bars from 0 to 100 %, each labelled with its count."""
    shown = list(rates[:limit])
    # Each group's whole name on its own line above its bar: names such as the products'
    # ("Learner Approved Pre-Licence Somerton", "... Tullamarine") differ at their ends,
    # so a name cut to fit beside the bar would read the same for all of them.
    label_w, right, upper, row = 0, 80, 24, 40
    plot_w = 300  # a phone's width at the chart's own scale
    width = 8 + plot_w + right
    height = upper + row * max(len(shown), 1) + 8
    if shown:
        best = max(shown, key=lambda r: (r.rate, r.completed))
        desc = (
            f"Pass rate of {len(rates)} groups; the highest, {best.rate:.0%}, is {best.label}"
            f" ({best.passed} of {best.completed})."
        )
        if len(rates) > len(shown):
            desc += f" The chart shows the {len(shown)} with the most completed courses."
    else:
        desc = "No completed courses in the period."
    desc += " The table beside the chart gives every figure."
    parts = _open(chart_id, title, desc, width, height, "rates")
    label_w = 8
    for step in range(5):
        x = label_w + plot_w * step / 4
        parts.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{upper - 4}" y2="{height - 8}" stroke="{GRID}"/>'
        )
        parts.append(_text(x, upper - 8, f"{step * 25}%", anchor="middle"))
    for i, rate in enumerate(shown):
        y = upper + row * i
        name = rate.label if len(rate.label) <= 80 else rate.label[:79] + "…"
        parts.append(_text(label_w, y + 13, name, extra=f" data-label={quoteattr(rate.label)}"))
        w = plot_w * rate.rate
        tip = f"{rate.label}: {rate.rate:.0%} passed ({rate.passed} of {rate.completed})"
        parts.append(
            f'<rect x="{label_w}" y="{y + 18}" width="{w:.1f}" height="{row - 24}"'
            f' fill="{colour(0)}"><title>{escape(tip)}</title></rect>'
        )
        parts.append(_text(label_w + w + 6, y + 30, f"{rate.rate:.0%} of {rate.completed}"))
    parts.append("</svg>")
    return "\n".join(parts)
