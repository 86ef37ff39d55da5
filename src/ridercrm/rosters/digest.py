"""The staff digest of tomorrow's sessions, per site (docs/notifications.md, "Staff digest").

Once a day, when a site's own clock reaches RIDERCRM_DIGEST_AT (default 17:00), one
e-mail message is written to the site's staff address (RIDERCRM_DIGEST_TO) listing
tomorrow's sessions there with seats, booked and waiting list, or tomorrow's booked
courses when the site has no sessions. The deliverer sends it like any message. The
timer runs in the deliverer's process (``ridercrm deliver`` and ``serve``'s deliverer);
a digest's key is unique per site and day, so two deliverers or a restart never write
it twice.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from ridercrm import fields, periodic
from ridercrm.config import Settings, parse_digest_at, parse_digest_to
from ridercrm.courses.models import Asset
from ridercrm.db import build_engine, session_factory, session_scope
from ridercrm.notifications import compose, service, timing
from ridercrm.people.models import Person
from ridercrm.products.models import Product
from ridercrm.sessions.models import WAITING, CourseSession, WaitlistEntry

log = logging.getLogger("ridercrm.notifications")

BOOKED = "booked"


def _day_bounds(day: dt.date) -> tuple[str, str]:
    """The wall-time text range of a day, as course times are written: from the day's
    date (a course written as the date alone sorts first) to the next day's."""
    following = day + dt.timedelta(days=1)
    return day.isoformat(), following.isoformat()


def listing(session: Session, site: str, day: dt.date) -> dict[str, Any]:
    """What the digest of ``day`` at ``site`` lists: its sessions (with seats, booked,
    held and waiting), or its booked courses when it has no sessions."""
    first, after = _day_bounds(day)
    waiting = (
        select(func.count())
        .where(WaitlistEntry.session_id == CourseSession.id, WaitlistEntry.state == WAITING)
        .scalar_subquery()
    )
    rows = session.execute(
        select(CourseSession, Product.name, waiting)
        .join(Product, Product.id == CourseSession.product_id)
        .where(
            func.lower(CourseSession.location) == site.lower(),
            CourseSession.course_datetime >= first,
            CourseSession.course_datetime < after,
        )
        .order_by(CourseSession.course_datetime, Product.name)
    ).all()
    sessions = [
        compose.digest_session(
            product_name=name,
            location=site,
            course_datetime=row.course_datetime,
            course_date_end=row.course_date_end,
            seats=row.seats,
            booked=row.booked,
            held=row.held,
            waiting=int(count or 0),
            status=row.status,
        )
        for row, name, count in rows
    ]
    courses: list[dict[str, Any]] = []
    if not sessions:
        booked = session.execute(
            select(Asset.course_datetime, Product.name, Person.first_name, Person.last_name)
            .join(Product, Product.id == Asset.product_id)
            .join(Person, Person.id == Asset.person_id)
            .where(
                func.lower(Asset.course_location) == site.lower(),
                Asset.course_status == BOOKED,
                Asset.course_datetime >= first,
                Asset.course_datetime < after,
            )
            .order_by(Asset.course_datetime, Product.name, Person.last_name, Person.first_name)
        ).all()
        groups: dict[tuple[str, str], list[str]] = {}
        for start, name, first_name, last_name in booked:
            rider = " ".join(part for part in (first_name, last_name) if part) or "(no name)"
            groups.setdefault((start or "", name), []).append(rider)
        courses = [
            compose.digest_course(
                product_name=name, location=site, course_datetime=start, names=names
            )
            for (start, name), names in groups.items()
        ]
    return {
        "site": fields.display_name(site),
        "date": day.isoformat(),
        "day": compose.day_text(day),
        "sessions": sessions,
        "courses": courses,
    }


def write_due_digests(
    sessions: sessionmaker[Session],
    *,
    addresses: dict[str, str],
    at: dt.time,
    now: dt.datetime | None = None,
) -> int:
    """Write the digests due at ``now`` that are not written yet; return how many.

    Each site in its own short transaction: a look without the write lock first (an idle
    timer never queues behind writers), then the write, which a concurrent writer's
    digest (the same unique key) turns into a no-op.
    """
    now = now or dt.datetime.now(dt.UTC)
    written = 0
    for site, day in timing.digest_days(now, sorted(addresses), at):
        with session_scope(sessions) as session:
            if service.digest_written(session, site, day):
                continue
        try:
            with session_scope(sessions, write=True) as session:
                if service.digest_written(session, site, day):
                    continue
                service.queue_digest(
                    session,
                    site=site,
                    day=day,
                    recipient=addresses[site],
                    listing=listing(session, site, day),
                )
        except IntegrityError:
            continue  # another deliverer wrote it first
        log.info("staff digest written", extra={"site": site, "day": day.isoformat()})
        written += 1
    return written


def start_digest_timer(settings: Settings) -> Callable[[], None] | None:
    """Run the digest timer in a background thread of this process (None without
    RIDERCRM_DIGEST_TO); return what stops it."""
    addresses = parse_digest_to(settings.digest_to)
    if not addresses:
        return None
    at = parse_digest_at(settings.digest_at)
    engine = build_engine(settings)
    sessions = session_factory(engine)
    stop_rounds = periodic.every(
        settings.digest_timer_seconds,
        lambda _stop: write_due_digests(sessions, addresses=addresses, at=at),
        name="ridercrm-digest-timer",
        log=log,
        failure="staff digest timer failed",
    )

    def stop_it() -> None:
        stop_rounds()
        engine.dispose()

    return stop_it
