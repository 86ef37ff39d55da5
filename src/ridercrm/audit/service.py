"""Write, read, search and purge audit records (docs/decisions.md, "Audit")."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from sqlalchemy import (
    ARRAY,
    Connection,
    String,
    Table,
    and_,
    any_,
    bindparam,
    column,
    delete,
    or_,
    select,
    table,
)
from sqlalchemy.orm import Session

from ridercrm.audit import subjects
from ridercrm.audit.call import Call
from ridercrm.audit.models import AuditRecord, AuditSubject
from ridercrm.audit.redact import Redaction
from ridercrm.audit.subjects import subjects_of
from ridercrm.db import Reads, bulk_insert, utcnow
from ridercrm.ids import RecordKind, canonical_id, checksum

MAX_STORED_BODY = 2 * 1024 * 1024


def _text(body: bytes | None) -> str | None:
    if body is None:
        return None
    # Invalid bytes are kept visible as escapes rather than lost.
    return body[:MAX_STORED_BODY].decode("utf-8", errors="backslashreplace")


def _fit(column: str, value: str | None) -> str | None:
    """Text that every backend can store, so whatever a client sends gets recorded.

    PostgreSQL refuses NUL characters in text: they are kept as a visible escape, like
    the invalid bytes in :func:`_text`. Values longer than their column are cut.
    """
    if value is None:
        return None
    value = value.replace("\x00", "\\x00")
    length = getattr(AuditRecord.__table__.c[column].type, "length", None)
    return value[:length] if length else value


def _storable(value: Any) -> Any:
    """A JSON value that PostgreSQL's jsonb accepts: NUL in strings kept as an escape."""
    if isinstance(value, str):
        return value.replace("\x00", "\\x00")
    if isinstance(value, list):
        return [_storable(item) for item in value]
    if isinstance(value, dict):
        return {_storable(key): _storable(item) for key, item in value.items()}
    return value


# A webhook signing secret is shown once, to the caller that made or rotated it, and kept
# nowhere readable: not in the audit trail either, whatever RIDERCRM_AUDIT_REDACT says
# (whoever reads the audit could otherwise sign events that receivers trust).
_SIGNING_SECRET = re.compile(r"whsec_[A-Za-z0-9+/=_-]+")


def _without_secrets(text: str | None) -> str | None:
    return None if text is None else _SIGNING_SECRET.sub("whsec_[not stored]", text)


@dataclass(frozen=True)
class Finished:
    """A finished request, as the audit trail needs it."""

    call: Call
    status: int
    response_body: bytes
    duration_ms: float


RECORDS = cast(Table, AuditRecord.__table__)
SUBJECTS = cast(Table, AuditSubject.__table__)
RECORD_COLUMNS = (
    "id",
    "operation",
    "method",
    "path",
    "api_key_id",
    "api_key_name",
    "content_type",
    "request_body",
    "response_status",
    "response_body",
    "duration_ms",
    "failure_reason",
    "outcomes",
    "idempotency_key",
    "replay_of",
    "created_at",
)
"""The columns :func:`_values` gives, in its order."""
SUBJECT_COLUMNS = ("subject", "created_at", "audit_id")


def _values(finished: Finished, *, redact: bool) -> dict[str, Any]:
    """The column values of a finished request's record (see :func:`record_call`)."""
    call = finished.call
    outcomes, failure_reason = call.outcomes, call.failure_reason
    if redact:
        redaction = Redaction()  # the request first: it learns the values to look for
        request_text = (
            None
            if call.request_body is None
            else redaction.request(call.request_body, call.content_type)[:MAX_STORED_BODY]
        )
        response_text: str | None = redaction.response(finished.response_body)[:MAX_STORED_BODY]
        outcomes = redaction.value(outcomes)
        failure_reason = redaction.text(failure_reason)
    else:
        request_text, response_text = _text(call.request_body), _text(finished.response_body)
    if call.request_body is None and call.request_note is not None:
        request_text = call.request_note
    response_text = _without_secrets(response_text)
    return {
        "id": call.audit_id,
        "operation": _fit("operation", call.operation),
        "method": _fit("method", call.method),
        "path": _fit("path", call.path),
        "api_key_id": call.caller.key_id if call.caller else None,
        "api_key_name": _fit("api_key_name", call.caller.name) if call.caller else None,
        "content_type": _fit("content_type", call.content_type),
        "request_body": _fit("request_body", request_text),
        "response_status": finished.status,
        "response_body": _fit("response_body", response_text),
        "duration_ms": round(finished.duration_ms, 3),
        "failure_reason": _fit("failure_reason", failure_reason),
        "outcomes": _storable(outcomes),
        "idempotency_key": _fit("idempotency_key", call.idempotency_key),
        "replay_of": call.replay_of,
        "created_at": utcnow(),
    }


def record_call(
    session: Session,
    *,
    call: Call,
    status: int,
    response_body: bytes,
    duration_ms: float,
    redact: bool = False,
) -> AuditRecord:
    """Add the audit record of a finished request to the session.

    ``redact`` (RIDERCRM_AUDIT_REDACT) stores both bodies, the outcomes and the failure
    reason with personal values replaced, see :mod:`ridercrm.audit.redact`.
    """
    values = _values(Finished(call, status, response_body, duration_ms), redact=redact)
    record = AuditRecord(**values)
    session.add(record)
    # What the record names, as stored, and the people and booking numbers of the courses
    # it names (and the reverse), whatever wrote it: a day sheet's form names only courses.
    named = subjects_of(record.path, record.request_body, record.response_body)
    named |= related_subjects(session, named)
    for subject in sorted(named):
        session.add(AuditSubject(subject=subject, created_at=record.created_at, audit_id=record.id))
    return record


# The courses' table as the audit trail reads it (the audit layer sits below the courses
# feature, so it names the three columns it needs rather than importing the model).
_ASSETS = table("assets", column("id"), column("person_id"), column("booking_number"))
RELATED_LOOKUP = 200  # courses looked up per record at most (one batch names up to 200)


def related_subjects(session: Session | Connection, named: set[str]) -> set[str]:
    """The person and the booking number of every course ``named`` names (by id or by
    booking number), as subjects, so that a record is found by each of them."""
    courses, numbers = _related_wanted(named)
    if not courses and not numbers:
        return set()
    clauses = []
    if courses:
        clauses.append(_ASSETS.c.id.in_(courses))
    if numbers:
        clauses.append(_ASSETS.c.booking_number.in_(numbers))
    return _related_found(session.execute(select(_ASSETS).where(or_(*clauses))))


# The same look-up as one statement of plain parameters (arrays: PostgreSQL only), as
# ``db.Reads`` run them.
_RELATED = select(_ASSETS).where(
    or_(
        _ASSETS.c.id == any_(bindparam("courses", type_=ARRAY(String))),
        _ASSETS.c.booking_number == any_(bindparam("numbers", type_=ARRAY(String))),
    )
)


def related_subjects_read(reads: Reads, named: set[str]) -> set[str]:
    """:func:`related_subjects` with a PostgreSQL connection's ``reads``."""
    courses, numbers = _related_wanted(named)
    if not courses and not numbers:
        return set()
    return _related_found(reads.all(_RELATED, {"courses": courses, "numbers": numbers}))


def _related_wanted(named: set[str]) -> tuple[list[str], list[str]]:
    """The course ids and the booking numbers ``named`` names (at most ``RELATED_LOOKUP``
    of each)."""
    courses = sorted(
        s.removeprefix(subjects.COURSE) + checksum(s.removeprefix(subjects.COURSE))
        for s in named
        if s.startswith(subjects.COURSE)
    )[:RELATED_LOOKUP]
    numbers = sorted(
        s.removeprefix(subjects.BOOKING) for s in named if s.startswith(subjects.BOOKING)
    )
    return courses, numbers[:RELATED_LOOKUP]


def _related_found(rows: Iterable[Any]) -> set[str]:
    found: set[str] = set()
    for asset_id, person_id, number in rows:
        found.add(subjects.course(asset_id))
        found.add(subjects.person(person_id))
        if number:
            found.add(subjects.booking(number))
    return found


def record_calls(
    session: Session | Connection, finished: Sequence[Finished], *, redact: bool = False
) -> None:
    """Insert the records of many finished requests at once (two bulk INSERTs), in the
    transaction of ``session`` (a writing request's) or of a Core connection (the batched
    writer's, web.audit_batch, which has no use for a session).

    The same records, column for column, as :func:`record_call` adds one by one.
    """
    rows, subject_rows = record_rows(
        finished, redact=redact, related=lambda named: related_subjects(session, named)
    )
    # The same rows as the models' (no defaults are left to them), without the ORM's
    # bookkeeping nor Core's per-row parameter handling (db.bulk_insert).
    bulk_insert(session, RECORDS, RECORD_COLUMNS, rows)
    bulk_insert(session, SUBJECTS, SUBJECT_COLUMNS, subject_rows)


def record_rows(
    finished: Sequence[Finished], *, redact: bool, related: Callable[[set[str]], set[str]]
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """The rows of ``finished``'s records (``RECORD_COLUMNS``) and of their subjects
    (``SUBJECT_COLUMNS``); ``related`` looks up the subjects related to those a record
    names (``related_subjects``, or ``related_subjects_read`` on other connections)."""
    records: list[dict[str, Any]] = []
    subject_rows: list[tuple[Any, ...]] = []
    for item in finished:
        values = _values(item, redact=redact)
        records.append(values)
        named = subjects_of(values["path"], values["request_body"], values["response_body"])
        named |= related(named)
        subject_rows.extend(
            (subject, values["created_at"], values["id"]) for subject in sorted(named)
        )
    rows = [tuple(record[name] for name in RECORD_COLUMNS) for record in records]
    return rows, subject_rows


def get_record(session: Session, audit_id: str) -> AuditRecord | None:
    """The record with this (canonical) id, or None."""
    return session.get(AuditRecord, audit_id)


def find_record(session: Session, audit_id: str) -> AuditRecord | None:
    """The record an id in any accepted form (15 or 18 characters) names, or None."""
    canonical = canonical_id(audit_id, RecordKind.AUDIT)
    return get_record(session, canonical) if canonical else None


PAGE_BODY_BUDGET = 8 * 1024 * 1024
"""Characters of stored bodies one page of search results carries at most (a record
keeps up to 2 MiB of each body, so 1,000 of them could make a 4 GB answer)."""


@dataclass
class Page:
    records: list[AuditRecord]
    next_before: str | None
    """The id to ask ``before`` for the next page; None when there are no more."""


def search_records(
    session: Session,
    *,
    operation: str | None,
    since: dt.datetime | None,
    limit: int,
    before: AuditRecord | None = None,
) -> Page:
    """Read one page of records, newest first.

    Optionally of one operation, no older than ``since`` and older than ``before``; at
    most ``limit`` records and, past the first, ``PAGE_BODY_BUDGET`` characters of
    bodies. Records are read a few at a time, never all at once.
    """
    query = select(AuditRecord)
    if operation:
        query = query.where(AuditRecord.operation == operation)
    if since is not None:
        query = query.where(AuditRecord.created_at >= since)
    if before is not None:
        query = query.where(
            or_(
                AuditRecord.created_at < before.created_at,
                and_(AuditRecord.created_at == before.created_at, AuditRecord.id < before.id),
            )
        )
    query = query.order_by(AuditRecord.created_at.desc(), AuditRecord.id.desc())
    records: list[AuditRecord] = []
    size = 0
    # One more than the limit tells whether another page exists.
    rows = session.scalars(query.limit(limit + 1).execution_options(yield_per=20))
    for record in rows:
        size += len(record.request_body or "") + len(record.response_body or "")
        if len(records) == limit or (records and size > PAGE_BODY_BUDGET):
            rows.close()
            return Page(records, next_before=records[-1].id)
        records.append(record)
    return Page(records, next_before=None)


def purge_records(session: Session, *, older_than_days: float) -> int:
    """Delete records older than the given age; return how many went."""
    try:
        cutoff = utcnow() - dt.timedelta(days=older_than_days)
    except OverflowError:
        return 0  # an age beyond the calendar: no record is that old
    session.execute(delete(AuditSubject).where(AuditSubject.created_at < cutoff))
    result = session.execute(delete(AuditRecord).where(AuditRecord.created_at < cutoff))
    return int(getattr(result, "rowcount", 0) or 0)
