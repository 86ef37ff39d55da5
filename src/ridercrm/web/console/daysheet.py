"""Console page: a training site's day sheet, and its results recorded in bulk."""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm import fields
from ridercrm.courses import daysheet, rules
from ridercrm.courses.daysheet import Entry
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit

router = ConsoleRouter()

FIELD = "result-"
"""A row's field is ``result-<course id>``; its value one of RESULTS' (empty: no change)."""

RESULTS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Passed", tuple((value, fields.RESULT_LABELS[value]) for value in rules.PASS_FEEDBACK)),
    ("Failed", tuple((value, fields.RESULT_LABELS[value]) for value in rules.FAIL_FEEDBACK)),
    (
        "Other",
        (
            (rules.CANCELLED, "Cancelled (or did not attend)"),
            (rules.BOOKED, "Booked (undo a cancellation)"),
        ),
    ),
)


def entry_for(asset_id: str, result: str) -> Entry:
    """The row a form's result means: a grade or reason names its status."""
    if result in rules.PASS_FEEDBACK:
        return daysheet.entry_of(asset_id, rules.PASSED, result)
    if result in rules.FAIL_FEEDBACK:
        return daysheet.entry_of(asset_id, rules.FAILED, result)
    # A status (or anything else, which the row's rules refuse with its reason).
    return daysheet.entry_of(asset_id, result)


CONFIRM = "confirm_future"
"""A form for a day after the site's today needs this field ("yes") to be recorded."""


def site_today(site: str) -> dt.date:
    """Today in the site's own calendar (its zone, fields.SITE_ZONES)."""
    return dt.datetime.now(ZoneInfo(fields.SITE_ZONES.get(site, "UTC"))).date()


def _choice(visit: Visit, form: dict[str, str] | None = None) -> tuple[str, dt.date]:
    """The sheet's site and day, from the form or the query; errors as a 400 page."""
    source = form if form is not None else visit.request.query_params
    site = daysheet.site_of(source.get("site") or daysheet.SITES[0])
    day = daysheet.parse_day(source.get("date"), today=site_today(site))
    return site, day


async def _page(
    visit: Visit,
    site: str,
    day: dt.date,
    *,
    done: Done | None = None,
    entered: dict[str, str] | None = None,
    unconfirmed: bool = False,
) -> Response:
    sheet = await visit.read(lambda session: daysheet.day_sheet(session, site=site, day=day))
    rows: dict[str, dict[str, Any]] = {}
    if done is not None and done.ok and isinstance(done.body, dict):
        rows = {row["asset_id"]: row for row in done.body.get("rows", [])}
    failed = [asset_id for asset_id, row in rows.items() if not row["saved"]]
    return visit.render(
        "daysheet.html",
        {
            "sheet": sheet,
            "sites": daysheet.SITES,
            "site": site,
            "site_zone": fields.SITE_ZONES.get(site, ""),
            "codes_explained": fields.RESULT_CODES_EXPLAINED,
            "day": day,
            "previous": day - dt.timedelta(days=1),
            "following": day + dt.timedelta(days=1),
            "results": RESULTS,
            "field": FIELD,
            "done": done,
            "rows": rows,
            "failed": failed,
            # A broken row keeps what was chosen, so it can be corrected and sent again;
            # an unconfirmed future day keeps every row's.
            "entered": (entered or {})
            if unconfirmed
            else {a: (entered or {}).get(a, "") for a in failed},
            "future": day > site_today(site),
            "unconfirmed": unconfirmed,
            "confirm": CONFIRM,
        },
        status=done.status if done else 200,
    )


@router.page("/daysheet", role="viewer", name="daysheet")
async def day_sheet(visit: Visit) -> Response:
    """A site's courses of a day (today by default), grouped by start time and product."""
    site, day = _choice(visit)
    return await _page(visit, site, day)


@router.form("/daysheet", role="staff", audit="console.daysheet")
async def record(posted: Posted) -> Response:
    """Record attendance and results for the sheet's riders; each row alone."""
    form = posted.form
    site, day = _choice(posted, form)
    chosen = {
        name.removeprefix(FIELD): value.strip()
        for name, value in form.items()
        if name.startswith(FIELD) and value.strip()
    }
    entries = [entry_for(asset_id, result) for asset_id, result in chosen.items()]
    if entries and day > site_today(site) and form.get(CONFIRM) != "yes":
        # A result for a course that has not run yet is most likely the wrong day: ask,
        # change nothing, and keep every choice for the confirmed submission.
        return await _page(posted, site, day, entered=chosen, unconfirmed=True)

    def work(session: Session) -> Any:
        if not entries:
            raise frame.ConsoleProblem("no row has a result chosen; nothing was recorded")
        submission = daysheet.record_results(
            session, site=site, day=day, entries=entries, audit_id=frame.change_audit_id()
        )
        return submission.summary()

    done = await posted.change(
        asked={"site": site, "date": day.isoformat(), **{FIELD + a: r for a, r in chosen.items()}},
        work=work,
    )
    return await _page(posted, site, day, done=done, entered=chosen)
