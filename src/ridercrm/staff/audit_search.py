"""The console's audit search: filters on top of the audit records (framework-free)."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.orm import Session, aliased

from ridercrm.audit import subjects
from ridercrm.audit.models import AuditRecord, AuditSubject, failed, succeeded, who
from ridercrm.ids import RecordKind, canonical_id

PAGE = 50


@dataclass(frozen=True)
class Filters:
    operation: str = ""
    since: dt.date | None = None
    until: dt.date | None = None  # inclusive
    who: str = ""  # an API key's name or a staff user's
    person: str = ""  # a contact or lead id (15 or 18 characters)
    booking: str = ""  # a booking number
    outcome: str = ""  # "", "success" or "failure"
    before: str = ""  # the id of the last record of the previous page
    zone: dt.tzinfo = dt.UTC  # whose days since and until are (RIDERCRM_TIMEZONE)


def _date(text: str) -> dt.date | None:
    try:
        return dt.date.fromisoformat(text.strip()) if text.strip() else None
    except ValueError:
        return None


def read_filters(params: dict[str, str], zone: dt.tzinfo = dt.UTC) -> tuple[Filters, list[str]]:
    """Filters from a query string, and what could not be used (shown to the person)."""
    problems: list[str] = []
    since, until = _date(params.get("since", "")), _date(params.get("until", ""))
    for name, value in (("since", since), ("until", until)):
        if params.get(name, "").strip() and value is None:
            problems.append(f"{name}: not a date (write YYYY-MM-DD)")
    outcome = params.get("outcome", "")
    if outcome not in ("", "success", "failure"):
        problems.append("outcome: success or failure")
        outcome = ""
    person = params.get("person", "").strip()[:40]
    if person and canonical_id(person) is None:
        problems.append(f"person: {person} is not a record id")
        person = ""
    return (
        Filters(
            operation=params.get("operation", "").strip()[:40],
            since=since,
            until=until,
            who=params.get("who", "").strip()[:120],
            person=canonical_id(person) or "" if person else "",
            booking=params.get("booking", "").strip()[:80],
            outcome=outcome,
            before=params.get("before", "").strip()[:40],
            zone=zone,
        ),
        problems,
    )


def _start_of(day: dt.date, zone: dt.tzinfo) -> dt.datetime:
    """When a day of the business's calendar starts, in UTC (as the records are stored).

    The calendar's first and last days have no UTC start within ``datetime``'s range
    whichever way the zone lies; they are taken as the earliest and latest time there is.
    """
    try:
        return dt.datetime.combine(day, dt.time(), tzinfo=zone).astimezone(dt.UTC)
    except OverflowError:
        edge = dt.datetime.min if day.year == dt.MINYEAR else dt.datetime.max
        return edge.replace(tzinfo=dt.UTC)


def search(session: Session, filters: Filters) -> tuple[list[AuditRecord], str | None]:
    """One page of matching records, newest first, and the id to page on from (or None)."""
    records = list(session.scalars(statement(session, filters)))
    if len(records) > PAGE:
        return records[:PAGE], records[PAGE - 1].id
    return records, None


def statement(session: Session, filters: Filters) -> Select[AuditRecord]:
    """The query of one page (and one record more) of matching records, newest first.

    A person or booking filter walks that subject's records (``audit_subjects``, newest
    first) and joins them to the records; the other filters then apply to few rows. An
    operation, an outcome or who is a range of its own index, in the page's order
    (ridercrm.audit.models): their conditions are written as those indexes' are.
    """
    statement = select(AuditRecord)
    named = [
        subject
        for subject in (
            subjects.person(filters.person) if filters.person else "",
            subjects.booking(filters.booking) if filters.booking else "",
        )
        if subject
    ]
    order: tuple[Any, Any] = (AuditRecord.created_at, AuditRecord.id)
    for index, subject in enumerate(named):
        about = aliased(AuditSubject)
        statement = statement.join(about, about.audit_id == AuditRecord.id).where(
            about.subject == subject
        )
        if index == 0:
            order = (about.created_at, about.audit_id)  # the same values, in its index
    if filters.operation:
        statement = statement.where(AuditRecord.operation == filters.operation)
    if filters.since:
        start = _start_of(filters.since, filters.zone)
        statement = statement.where(AuditRecord.created_at >= start)
    if filters.until and filters.until < dt.date.max:  # the calendar's last day: no bound
        end = _start_of(filters.until + dt.timedelta(days=1), filters.zone)
        statement = statement.where(AuditRecord.created_at < end)
    if filters.who:
        statement = statement.where(who(AuditRecord) == filters.who)
    if filters.outcome == "success":
        statement = statement.where(succeeded(AuditRecord))
    elif filters.outcome == "failure":
        statement = statement.where(failed(AuditRecord))
    after = canonical_id(filters.before, RecordKind.AUDIT) if filters.before else None
    last = session.get(AuditRecord, after) if after else None
    created, ident = order
    if last is not None:
        statement = statement.where(
            or_(created < last.created_at, and_(created == last.created_at, ident < last.id))
        )
    return statement.order_by(created.desc(), ident.desc()).limit(PAGE + 1)


def record(session: Session, raw_id: str) -> AuditRecord | None:
    audit_id = canonical_id(raw_id, RecordKind.AUDIT)
    return session.get(AuditRecord, audit_id) if audit_id else None


def pretty(body: str | None) -> str:
    """A stored body for reading: JSON indented, anything else as stored."""
    if body is None:
        return ""
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body
