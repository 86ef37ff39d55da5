"""`ridercrm sessions create|schedule|list|cancel|backfill` (docs/decisions.md, "Course sessions").

Each command that writes is recorded in the audit trail as an admin API request is
(method CLI, the command as its path), in the same transaction as its changes.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import time
from collections.abc import Callable
from typing import Annotated, Any

import typer
from pydantic import ValidationError
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.audit.call import Call
from ridercrm.audit.service import record_call
from ridercrm.config import Settings
from ridercrm.db import session_factory, session_scope
from ridercrm.errors import CONFLICT, INVALID, NOT_FOUND
from ridercrm.fields import error_messages
from ridercrm.ids import RecordKind, new_id
from ridercrm.rosters import service as rosters
from ridercrm.sessions import seats, values
from ridercrm.sessions import service as sessions
from ridercrm.sessions.schemas import SessionCreate, SessionRead
from ridercrm.sessions.timer import policy_of
from ridercrm.startup import open_database

sessions_app = typer.Typer(
    help="Course sessions: seats, schedules, cancelling.", no_args_is_help=True
)
console = Console(markup=False)
errors = Console(stderr=True, markup=False)


def _sessions(settings: Settings) -> sessionmaker[Session]:
    """Sessions on the configured database; a missing one is refused, never created."""
    return session_factory(open_database(settings, may_create=False))


def _audited(command: str, arguments: dict[str, Any], action: Callable[[Session, str], Any]) -> Any:
    """Run ``action(session, audit_id)`` in one transaction with its audit record; a
    refusal (SessionProblem, bad values) prints its reason and exits 1, writing nothing."""
    settings = Settings()
    started = time.perf_counter()
    audit_id = new_id(RecordKind.AUDIT)
    try:
        with session_scope(_sessions(settings), write=True) as session:
            seats.use_policy(session, policy_of(settings))
            result = action(session, audit_id)
            call = Call(method="CLI", path=f"sessions {command}", started=started)
            call.audit_id = audit_id
            call.operation = f"cli.sessions_{command}"
            call.content_type = "application/json"
            call.request_body = json.dumps(arguments, default=str).encode()
            record_call(
                session,
                call=call,
                status=200,
                response_body=json.dumps(result, default=str).encode(),
                duration_ms=(time.perf_counter() - started) * 1000,
                redact=settings.audit_redact,
            )
    except sessions.SessionProblem as problem:
        errors.print(problem.reason)
        raise typer.Exit(1) from None
    except ValidationError as exc:
        errors.print("; ".join(error_messages(exc)))
        raise typer.Exit(1) from None
    return result


def _show(rows: list[SessionRead]) -> None:
    """One line a session (tab-separated; "-": no limit), so it reads and greps alike:
    plain text, tabs kept, never wrapped to a terminal's width."""
    typer.echo("id\tproduct\tsite\tstart\tstatus\tcapacity\tseats\tbooked\tleft\twaiting")
    for row in rows:
        shown = [row.capacity, row.seats, row.booked, row.seats_left, row.waitlist]
        values = [row.id, row.product_id, row.location, row.course_datetime, row.status]
        values += ["-" if value is None else str(value) for value in shown]
        typer.echo("\t".join(values))


Product = Annotated[str, typer.Option("--product", help="Product id (01t...).")]
Location = Annotated[str, typer.Option("--location", help="Site, e.g. somerton.")]
Capacity = Annotated[int | None, typer.Option(help="Seats (absent: no limit).", min=0)]
Minimum = Annotated[int, typer.Option(help="Fewest riders to run it.", min=0)]
Instructors = Annotated[int | None, typer.Option(help="Instructors rostered.", min=0)]
Hours = Annotated[
    float,
    typer.Option(help="Length in hours (sets course_date_end; 0 leaves the end unset).", min=0),
]


def _end(start: str, hours: float) -> str | None:
    if not hours:
        return None
    if not math.isfinite(hours):
        raise sessions.SessionProblem(
            INVALID, f"--hours: must be a number of hours (received {hours})"
        )
    try:
        begin = dt.datetime.strptime(start, "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None  # the start is refused with its reason (SessionCreate)
    try:
        moment = begin + dt.timedelta(hours=hours)
    except OverflowError:
        raise sessions.SessionProblem(
            INVALID, f"--hours: {hours:g} hours after {start} is no date"
        ) from None
    return moment.strftime("%Y-%m-%d %H:%M:%S")


def _day(option: str, value: str | None) -> dt.date | None:
    """A --from or --to day; a text that names no calendar day is refused (exit 1)."""
    if not value:
        return None
    try:
        day = dt.date.fromisoformat(value.strip())
    except ValueError:
        errors.print(
            f"{option}: must be a real calendar day written YYYY-MM-DD (received {value!r})"
        )
        raise typer.Exit(1) from None
    if not values.FIRST_YEAR <= day.year <= values.LAST_YEAR:
        errors.print(f"{option}: must be in the years {values.FIRST_YEAR} to {values.LAST_YEAR}")
        raise typer.Exit(1)
    return day


@sessions_app.command("create")
def create_command(
    product: Product,
    location: Location,
    start: Annotated[str, typer.Option(help='Start, local time: "YYYY-MM-DD HH:MM:SS".')],
    hours: Hours = 8.0,
    capacity: Capacity = None,
    minimum: Minimum = 0,
    instructors: Instructors = None,
) -> None:
    """Create one session; prints it."""

    def action(session: Session, _audit_id: str) -> dict[str, Any]:
        data = SessionCreate(
            product_id=product,
            location=location,
            course_datetime=start,
            course_date_end=_end(start, hours) if len(start) == 19 else None,
            capacity=capacity,
            minimum=minimum,
            instructors=instructors,
        )
        row = rosters.create_session(session, data=data)
        read = sessions.read_session(session, row.id)
        assert read is not None
        return read.model_dump(mode="json")

    arguments = {
        "product": product, "location": location, "start": start, "hours": hours,
        "capacity": capacity, "minimum": minimum, "instructors": instructors,
    }  # fmt: skip
    console.print(json.dumps(_audited("create", arguments, action), indent=2))


@sessions_app.command("schedule")
def schedule_command(
    product: Product,
    location: Location,
    first: Annotated[str, typer.Option(help='First start, local time: "YYYY-MM-DD HH:MM:SS".')],
    weeks: Annotated[int, typer.Option(help="How many weeks.", min=1, max=260)] = 4,
    days: Annotated[
        str, typer.Option(help="Weekdays, comma-separated (mon,tue,...); default: the first's.")
    ] = "",
    hours: Hours = 8.0,
    capacity: Capacity = None,
    minimum: Minimum = 0,
    instructors: Instructors = None,
) -> None:
    """Create a weekly pattern: the same time on the given weekdays for N weeks (a start
    that already has a session is skipped)."""
    names = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
    try:
        begin = dt.datetime.strptime(first, "%Y-%m-%d %H:%M:%S")
        wanted = (
            [names.index(d.strip().lower()[:3]) for d in days.split(",")]
            if days
            else [begin.weekday()]
        )
    except ValueError:
        errors.print('--first is "YYYY-MM-DD HH:MM:SS"; --days names weekdays such as mon,wed')
        raise typer.Exit(1) from None
    try:
        monday = begin - dt.timedelta(days=begin.weekday())
        moments = sorted(
            moment
            for week in range(weeks)
            for day in wanted
            if (moment := monday + dt.timedelta(weeks=week, days=day)) >= begin
        )
    except OverflowError:  # past 9999-12-31
        moments = [dt.datetime.max]
    if moments and not (
        moments[0].year >= values.FIRST_YEAR and moments[-1].year <= values.LAST_YEAR
    ):
        errors.print(
            f"--first, --weeks: the sessions must be in the years {values.FIRST_YEAR}"
            f" to {values.LAST_YEAR}"
        )
        raise typer.Exit(1)
    starts = [moment.strftime("%Y-%m-%d %H:%M:%S") for moment in moments]

    def action(session: Session, _audit_id: str) -> dict[str, Any]:
        made, skipped = [], []
        for start in starts:
            data = SessionCreate(
                product_id=product,
                location=location,
                course_datetime=start,
                course_date_end=_end(start, hours),
                capacity=capacity,
                minimum=minimum,
                instructors=instructors,
            )
            try:
                made.append(rosters.create_session(session, data=data).id)
            except sessions.SessionProblem as problem:
                if problem.kind != CONFLICT:
                    raise
                skipped.append(start)
        return {"created": made, "skipped": skipped}

    arguments = {
        "product": product, "location": location, "first": first, "weeks": weeks,
        "days": days, "hours": hours, "capacity": capacity, "minimum": minimum,
        "instructors": instructors,
    }  # fmt: skip
    result = _audited("schedule", arguments, action)
    console.print(
        f"created {len(result['created'])} session(s); skipped {len(result['skipped'])} (already there)"
    )


@sessions_app.command("list")
def list_command(
    location: Annotated[str | None, typer.Option(help="Only this site.")] = None,
    product: Annotated[str | None, typer.Option(help="Only this product.")] = None,
    from_: Annotated[str | None, typer.Option("--from", help="First day, YYYY-MM-DD.")] = None,
    to: Annotated[str | None, typer.Option(help="Last day, YYYY-MM-DD (included).")] = None,
) -> None:
    """List sessions with their seats and waiting lists."""
    first, last = _day("--from", from_), _day("--to", to)
    window = sessions.Window(
        product_id=product,
        location=location,
        start=f"{first} 00:00:00" if first else None,
        end=f"{last + dt.timedelta(days=1)} 00:00:00" if last else None,
    )
    with session_scope(_sessions(Settings())) as session:
        rows = sessions.list_sessions(session, window)
    _show(rows)


@sessions_app.command("cancel")
def cancel_command(
    session_id: Annotated[str, typer.Argument(help="The session (a0S...).")],
) -> None:
    """Cancel a session and its bookings (history and events); move riders first to keep them."""

    def action(session: Session, audit_id: str) -> dict[str, Any]:
        row = sessions.find_session(session, session_id, lock=True)
        if row is None:
            raise sessions.SessionProblem(NOT_FOUND, f"no course session with id {session_id}")
        cancelled = rosters.cancel_session(session, row, audit_id=audit_id)
        return {"session": row.id, "cancelled_courses": cancelled}

    result = _audited("cancel", {"session": session_id}, action)
    console.print(
        f"cancelled session {result['session']} and {len(result['cancelled_courses'])} booking(s)"
    )


@sessions_app.command("backfill")
def backfill_command() -> None:
    """Make sessions, without capacity, for the product, site and start of every stored course."""

    def action(session: Session, _audit_id: str) -> dict[str, Any]:
        return {"created": [row.id for row in rosters.backfill(session)]}

    result = _audited("backfill", {}, action)
    console.print(f"created {len(result['created'])} session(s) from the stored courses")
