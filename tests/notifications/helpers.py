"""Builders for the notification tests: courses at times relative to now, in a site's zone."""

from __future__ import annotations

import datetime as dt
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses import service as courses
from ridercrm.db import session_scope
from ridercrm.events.manage import create_endpoint
from ridercrm.ids import RecordKind, new_id
from ridercrm.netsafety import AllowList
from ridercrm.notifications.models import Message
from ridercrm.notifications.timing import WALL_TIME, site_zone
from ridercrm.products.models import Product
from tests.courses import builders


def wall_time(from_now: dt.timedelta, site: str = "somerton") -> str:
    """The site's local wall time ``from_now`` from now, as the interface writes it."""
    moment = dt.datetime.now(dt.UTC) + from_now
    return moment.astimezone(site_zone(site)).strftime(WALL_TIME)


def book(
    sessions: sessionmaker[Session],
    *,
    starts_in: dt.timedelta,
    site: str = "somerton",
    person: dict[str, Any] | None = None,
    reminders: str | None = None,
) -> tuple[str, str]:
    """Book a course through operation 1's service; return (person id, course id)."""
    with session_scope(sessions, write=True) as session:
        if reminders is not None:
            session.info["ridercrm.notify_reminders"] = reminders
        product = session.scalar(select(Product.id).where(Product.code == "LAP-SOM"))
        product = product or builders.product(session)
        person_id = builders.person(session, **(person or {}))
        start = wall_time(starts_in, site)
        mobile = (person or {}).get("mobile_phone", "0412 345 678")
        asset_id = builders.course(
            session,
            person_id,
            product,
            course_datetime=start,
            course_date_end=wall_time(starts_in + dt.timedelta(hours=8), site),
            course_location=site,
            # The booking item carries the person's phones too (and would set them); a
            # booking needs one of them.
            mobile_phone=mobile or "",
            home_phone="" if mobile else "03 9876 5432",
        )
    return person_id, asset_id


def change(
    sessions: sessionmaker[Session], asset_id: str, reminders: str | None = None, **fields: Any
) -> None:
    """Send an operation-1 item that changes a stored course."""
    with session_scope(sessions, write=True) as session:
        if reminders is not None:
            session.info["ridercrm.notify_reminders"] = reminders
        results = courses.book_courses(
            session,
            items=[{"asset_id": asset_id, **fields}],
            audit_id=new_id(RecordKind.AUDIT),
        )
        assert results[0].delivery, results[0].receipt


def messages(sessions: sessionmaker[Session], **where: Any) -> list[Message]:
    with session_scope(sessions) as session:
        query = select(Message).order_by(Message.id)
        for name, value in where.items():
            query = query.where(getattr(Message, name) == value)
        return list(session.scalars(query))


def listen(sessions: sessionmaker[Session], *event_types: str) -> None:
    """Register an endpoint for these event types: events are stored only for the types
    an endpoint lists (docs/decisions.md, "Events (webhooks)")."""
    with session_scope(sessions, write=True) as session:
        create_endpoint(
            session,
            url="http://127.0.0.1:9/hook",
            event_types=list(event_types),
            description="the messages' events",
            allow=AllowList.parse("127.0.0.1"),
        )
