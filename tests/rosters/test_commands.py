"""`ridercrm sessions create|schedule|list|cancel|backfill` on the real database."""

from __future__ import annotations

import json

from click.testing import Result
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ridercrm.cli import app
from tests.sessions.helpers import START, Seats

runner = CliRunner()


def ridercrm(db_url: str, *args: str) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url})


def test_create_list_and_cancel_with_its_bookings(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created = ridercrm(
        db_url, "sessions", "create", "--product", seats.product, "--location", "Kilsyth",
        "--start", "2026-12-07 09:00:00", "--hours", "3", "--capacity", "6", "--instructors", "2",
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    made = json.loads(created.stdout)
    assert (made["location"], made["course_date_end"], made["seats_left"]) == (
        "kilsyth",
        "2026-12-07 12:00:00",
        6,
    )
    booked = seats.book(course_location="kilsyth", course_datetime="2026-12-07 09:00:00")
    assert booked["delivery"] == "true"
    listed = ridercrm(db_url, "sessions", "list", "--location", "kilsyth")
    assert listed.exit_code == 0
    assert made["id"] in listed.stdout
    # piped, the header stays one line of tab-separated names over the session's line
    header, line = [row.split("\t") for row in listed.stdout.splitlines() if "\t" in row]
    assert header == [
        "id", "product", "site", "start", "status", "capacity", "seats", "booked", "left", "waiting"
    ]  # fmt: skip
    assert line[0] == made["id"]
    assert len(line) == len(header)
    cancelled = ridercrm(db_url, "sessions", "cancel", made["id"])
    assert cancelled.exit_code == 0, cancelled.output
    assert "1 booking(s)" in cancelled.stdout
    asset = client.get(f"/admin/assets/{booked['asset_id']}", headers=admin_headers).json()
    assert asset["course_status"] == "cancelled"
    audit = client.get(
        "/admin/audit", params={"operation": "cli.sessions_cancel"}, headers=admin_headers
    )
    assert audit.status_code == 200
    # The create's record holds every option it was given, not only some.
    found = client.get(
        "/admin/audit", params={"operation": "cli.sessions_create"}, headers=admin_headers
    ).json()
    [record] = found["records"]
    arguments = json.loads(record["request_body"])
    assert {k: arguments[k] for k in ("hours", "capacity", "minimum", "instructors")} == {
        "hours": 3.0,
        "capacity": 6,
        "minimum": 0,
        "instructors": 2,
    }
    refused = ridercrm(
        db_url,
        "sessions",
        "create",
        "--product",
        seats.product,
        "--location",
        "mars",
        "--start",
        START,
    )
    assert refused.exit_code == 1
    assert "location" in refused.output


def test_create_with_hours_0_leaves_the_end_unset(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    """`--help` says so: 0 hours is a session whose end is not known, not one that ends
    as it starts."""
    seats = Seats(client, admin_headers)
    created = ridercrm(
        db_url, "sessions", "create", "--product", seats.product, "--location", "kilsyth",
        "--start", "2026-12-07 09:00:00", "--hours", "0", "--capacity", "4",
    )  # fmt: skip
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["course_date_end"] is None
    shown = ridercrm(db_url, "sessions", "create", "--help")
    words = " ".join(shown.stdout.replace("│", " ").split())  # rich's box, lines wrapped
    assert "0 leaves the end unset" in words


def test_schedule_makes_a_weekly_pattern_and_skips_what_exists(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    args = ("sessions", "schedule", "--product", seats.product, "--location", "somerton",
            "--first", "2026-12-05 08:30:00", "--weeks", "3", "--days", "sat,sun", "--capacity", "8")  # fmt: skip
    first = ridercrm(db_url, *args)
    assert first.exit_code == 0, first.output
    assert "created 6 session(s); skipped 0" in first.stdout
    again = ridercrm(db_url, *args)
    assert "created 0 session(s); skipped 6" in again.stdout
    listed = client.get(
        "/crm/sessions", params={"location": "somerton"}, headers=admin_headers
    ).json()
    assert [s["course_datetime"][:10] for s in listed] == [
        "2026-12-05", "2026-12-06", "2026-12-12", "2026-12-13", "2026-12-19", "2026-12-20",
    ]  # fmt: skip
    assert {s["capacity"] for s in listed} == {8}


def test_backfill_makes_sessions_without_capacity_from_the_courses(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    seats.book()
    seats.book()
    seats.book(course_datetime="2026-12-06 08:30:00")
    done = ridercrm(db_url, "sessions", "backfill")
    assert done.exit_code == 0, done.output
    assert "created 2 session(s)" in done.stdout
    listed = client.get("/crm/sessions", headers=admin_headers).json()
    assert [
        (s["course_datetime"], s["booked"], s["capacity"], s["seats_left"]) for s in listed
    ] == [
        (START, 2, None, None),
        ("2026-12-06 08:30:00", 1, None, None),
    ]
    assert "created 0 session(s)" in ridercrm(db_url, "sessions", "backfill").stdout


def test_impossible_days_and_times_are_refused_clearly(
    db_url: str, client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    for option in ("--from", "--to"):
        for day in ("2026-02-30", "0001-01-01", "soon"):
            listed = ridercrm(db_url, "sessions", "list", option, day)
            assert listed.exit_code == 1, listed.output
            assert listed.exception is None or isinstance(listed.exception, SystemExit)
            assert option in listed.output
            assert "YYYY-MM-DD" in listed.output or "years" in listed.output
    for start, hours in (
        ("2026-02-30 09:00:00", "3"),
        ("0001-01-01 00:00:00", "3"),
        ("9998-12-31 23:00:00", "3"),  # ends in the year 9999
        ("2026-12-07 09:00:00", "1e12"),
    ):
        made = ridercrm(
            db_url, "sessions", "create", "--product", seats.product, "--location", "kilsyth",
            "--start", start, "--hours", hours,
        )  # fmt: skip
        assert made.exit_code == 1, (start, made.output)
        assert made.exception is None or isinstance(made.exception, SystemExit), made.exception
    for first, hours, weeks, reason in (
        ("9999-12-30 08:30:00", "3", "1", "must be in the years 1900 to 9998"),
        ("9998-06-01 08:30:00", "3", "260", "must be in the years 1900 to 9998"),
        ("1899-12-30 08:30:00", "3", "1", "must be in the years 1900 to 9998"),
        ("2026-12-07 09:00:00", "nan", "1", "--hours: must be a number of hours"),
        ("2026-12-07 09:00:00", "inf", "1", "--hours: must be a number of hours"),
    ):
        made = ridercrm(
            db_url, "sessions", "schedule", "--product", seats.product, "--location", "kilsyth",
            "--first", first, "--hours", hours, "--weeks", weeks,
        )  # fmt: skip
        assert made.exit_code == 1, (first, hours, made.output)
        assert made.exception is None or isinstance(made.exception, SystemExit), made.exception
        assert reason in made.output, made.output
        assert "Error:" not in made.output.replace("error:", "")  # no exception's name
    assert client.get("/admin/sessions", headers=admin_headers).json() == []
