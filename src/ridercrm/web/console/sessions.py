"""Console pages: sessions per site and week (seats, waiting list, cover), a session's
roster and waiting list, moving riders, and the sessions to worry about (issue 25)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from fastapi.responses import Response
from sqlalchemy import select
from sqlalchemy.orm import Session

from ridercrm import fields
from ridercrm.courses import daysheet
from ridercrm.people.models import Person
from ridercrm.reports.repository import product_names
from ridercrm.rosters import service as rosters
from ridercrm.sessions import seats, waitlist
from ridercrm.sessions import service as sessions
from ridercrm.sessions.models import CourseSession
from ridercrm.sessions.timer import policy_of
from ridercrm.web.console import frame
from ridercrm.web.console.daysheet import site_today
from ridercrm.web.console.frame import ConsoleRouter, Done, Posted, Visit

router = ConsoleRouter()


def _monday(day: dt.date) -> dt.date:
    return day - dt.timedelta(days=day.weekday())


def _week(visit: Visit) -> tuple[str, dt.date]:
    try:
        site = daysheet.site_of(visit.query("site") or daysheet.SITES[0])
        raw = visit.query("week", 10)
        day = dt.date.fromisoformat(raw) if raw else site_today(site)
        if not daysheet.FIRST_YEAR <= day.year <= daysheet.LAST_YEAR:
            raise ValueError  # a week links to the week before and after
    except (daysheet.SheetError, ValueError):
        raise frame.ConsoleRefusal(
            400,
            "site: one of the training sites; week: a date YYYY-MM-DD"
            f" in the years {daysheet.FIRST_YEAR} to {daysheet.LAST_YEAR}",
        ) from None
    return site, _monday(day)


@router.page("/sessions", role="viewer", name="sessions")
async def week_of_sessions(visit: Visit) -> Response:
    """A site's sessions of a week: seats, waiting list, instructor cover; and the sessions
    short of cover or under their minimum in the days ahead, at every site."""
    site, monday = _week(visit)
    settings = frame.services_of(visit.request).settings
    today = frame.business_today(visit.request)
    window = sessions.Window(
        location=site,
        start=f"{monday} 00:00:00",
        end=f"{monday + dt.timedelta(days=7)} 00:00:00",
    )

    def read(
        session: Session,
    ) -> tuple[list[rosters.Flagged], list[rosters.Flagged], dict[str, str]]:
        week = [rosters.flag(row) for row in sessions.list_sessions(session, window)]
        ahead = rosters.flagged(session, today=today, days=settings.sessions_flag_days)
        named = product_names(session, (f.session.product_id for f in week))
        return week, ahead, named

    week, ahead, named = await visit.read(read)
    return visit.render(
        "sessions.html",
        {
            "site": site,
            "sites": daysheet.SITES,
            "monday": monday,
            "previous": monday - dt.timedelta(days=7),
            "following": monday + dt.timedelta(days=7),
            "week": week,
            "ahead": ahead,
            "days": settings.sessions_flag_days,
            "products": named,
            "site_zone": fields.SITE_ZONES.get(site, ""),
        },
    )


async def _session_page(visit: Visit, session_id: str, *, done: Done | None = None) -> Response:
    def read(session: Session) -> dict[str, Any]:
        row = sessions.find_session(session, session_id)
        if row is None:
            raise frame.ConsoleRefusal(404, f"no course session with id {session_id}")
        found = sessions.read_session(session, row.id)
        assert found is not None
        window = sessions.Window(
            product_id=row.product_id,
            start=f"{site_today(row.location)} 00:00:00",
            include_cancelled=False,
            limit=200,
        )
        others = [s for s in sessions.list_sessions(session, window) if s.id != row.id]
        roster = list(rosters.roster(session, row))
        line = waitlist.entries(session, row.id)
        return {
            "flagged": rosters.flag(found),
            "roster": roster,
            "line": line,
            "others": others,
            # Staff move riders by name, not by id.
            "names": _names(session, [a.person_id for a in roster] + [e.person_id for e in line]),
            "product": product_names(session, [row.product_id]).get(row.product_id, row.product_id),
            "site_zone": fields.SITE_ZONES.get(row.location, ""),
        }

    page = await visit.read(read)
    return visit.render("session.html", {**page, "done": done}, status=done.status if done else 200)


@router.page("/sessions/{session_id}", role="viewer", name="session")
async def one_session(visit: Visit, session_id: str) -> Response:
    """A session's roster (its day sheet), waiting list and seats."""
    return await _session_page(visit, session_id)


def _names(session: Session, person_ids: list[str]) -> dict[str, str]:
    """Each person's name as staff read it, by id."""
    if not person_ids:
        return {}
    found = session.execute(
        select(Person.id, Person.first_name, Person.last_name).where(Person.id.in_(person_ids))
    )
    return {pid: " ".join(filter(None, (first, last))) for pid, first, last in found}


def _locked(session: Session, session_id: str) -> CourseSession:
    row = sessions.find_session(session, session_id, lock=True)
    if row is None:
        raise frame.ConsoleProblem(f"no course session with id {session_id}")
    return row


@router.form("/sessions/{session_id}/move", role="staff", audit="console.sessions.move")
async def move(posted: Posted, session_id: str) -> Response:
    """Move one rider (or the whole roster) to another session of the product, in one step."""
    target_id = posted.form.get("target", "").strip()
    chosen = posted.lists.get("asset", [])
    policy = policy_of(frame.services_of(posted.request).settings)

    def work(session: Session) -> Any:
        seats.use_policy(session, policy)
        source = _locked(session, session_id)
        target = sessions.find_session(session, target_id)
        if target is None:
            raise frame.ConsoleProblem("choose the session to move to")
        assets = chosen or [
            a.id for a in rosters.roster(session, source) if a.course_status == "booked"
        ]
        if not assets:
            raise frame.ConsoleProblem("nobody is booked in this session")
        moved = rosters.move_riders(
            session,
            asset_ids=assets,
            source=source,
            target=target,
            audit_id=frame.change_audit_id(),
        )
        if moved.refusal:
            raise frame.ConsoleProblem(f"nobody was moved: {moved.refusal}")
        return {"moved": moved.moved, "to": target.id}

    done = await posted.change(asked={"target": target_id, "asset": chosen}, work=work)
    return await _session_page(posted, session_id, done=done)


@router.form("/sessions/{session_id}/waitlist", role="staff", audit="console.sessions.waitlist")
async def line(posted: Posted, session_id: str) -> Response:
    """Reorder the waiting list, offer a seat by hand, or take someone off it."""
    action = posted.form.get("action", "")
    person = posted.form.get("person", "").strip()
    position = posted.form.get("position", "").strip()
    policy = policy_of(frame.services_of(posted.request).settings)

    def work(session: Session) -> Any:
        seats.use_policy(session, policy)
        row = _locked(session, session_id)
        if action == "move":
            if not position.isdecimal() or int(position) < 1:  # "²" is a digit int() refuses
                raise frame.ConsoleProblem("position: a whole number from 1")
            waitlist.move_to(session, row, raw_person_id=person, position=int(position))
        elif action == "offer":
            if not waitlist.offer_by_hand(session, row, raw_person_id=person):
                raise frame.ConsoleProblem("no seat is free, or the person is not waiting")
        elif action == "remove":
            waitlist.remove(session, row, raw_person_id=person)
        else:
            raise frame.ConsoleProblem("action: move, offer or remove")
        return {"action": action, "person": person}

    done = await posted.change(
        asked={"action": action, "person": person, "position": position}, work=work
    )
    return await _session_page(posted, session_id, done=done)
