"""Console page: a training site's day sheet, and its results recorded in bulk."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi.responses import Response
from sqlalchemy.orm import Session

from ridercrm.courses import daysheet, rules
from ridercrm.courses.daysheet import Entry, SheetError
from ridercrm.web.console import frame
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit

router = ConsoleRouter()

FIELD = "result-"
"""A row's field is ``result-<course id>``; its value one of RESULTS' (empty: no change)."""

RESULTS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("Passed", tuple((value, f"Pass, grade {value[-1]}") for value in rules.PASS_FEEDBACK)),
    ("Failed", tuple((value, f"Fail, reason {value[-1]}") for value in rules.FAIL_FEEDBACK)),
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


def _choice(visit: Visit, form: dict[str, str] | None = None) -> tuple[str, dt.date]:
    """The sheet's site and day, from the form or the query; errors as a 400 page."""
    source = form if form is not None else visit.request.query_params
    try:
        site = daysheet.site_of(source.get("site") or daysheet.SITES[0])
        day = daysheet.parse_day(source.get("date"), today=dt.date.today())
    except SheetError as problem:
        raise frame.ConsoleRefusal(400, str(problem)) from None
    return site, day


async def _page(
    visit: Visit,
    site: str,
    day: dt.date,
    *,
    done: Done | None = None,
    entered: dict[str, str] | None = None,
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
            "day": day,
            "previous": day - dt.timedelta(days=1),
            "following": day + dt.timedelta(days=1),
            "results": RESULTS,
            "field": FIELD,
            "done": done,
            "rows": rows,
            "failed": failed,
            # A broken row keeps what was chosen, so it can be corrected and sent again.
            "entered": {a: (entered or {}).get(a, "") for a in failed},
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

    def work(session: Session) -> Any:
        if not entries:
            raise frame.ConsoleProblem("no row has a result chosen; nothing was recorded")
        try:
            submission = daysheet.record_results(
                session, site=site, day=day, entries=entries, audit_id=frame.change_audit_id()
            )
        except SheetError as problem:
            raise frame.ConsoleProblem(str(problem)) from None
        return submission.summary()

    done = await posted.change(
        asked={"site": site, "date": day.isoformat(), **{FIELD + a: r for a, r in chosen.items()}},
        work=work,
    )
    return await _page(posted, site, day, done=done, entered=chosen)
