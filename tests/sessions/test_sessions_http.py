"""Sessions over HTTP: the admin API, operation 1's seats, availability (docs/decisions.md, "Course sessions")."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from tests.sessions.helpers import END, START, Seats


def test_created_session_answers_its_seats(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=12, minimum=4, instructors=3, location="Somerton")
    assert created["id"].startswith("a0S")
    assert len(created["id"]) == 18
    assert created["location"] == "somerton"
    assert created["course_datetime"] == START
    assert created["course_date_end"] == END
    assert (created["capacity"], created["booked"], created["seats_left"]) == (12, 0, 12)
    assert created["status"] == "scheduled"
    assert created["waitlist"] == 0
    assert seats.read(created["id"]) == created


def test_bad_session_bodies_are_refused_clearly(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    for body, field in [
        ({"location": "mars"}, "location"),
        ({"course_datetime": "2026-12-05"}, "course_datetime"),
        ({"capacity": -1}, "capacity"),
        ({"capacity": True}, "capacity"),
        ({"instructors": "2"}, "instructors"),
        ({"capacity": 5, "minimum": 100}, "minimum: must not exceed the capacity, 5"),
        ({"product_id": "01t000000000000AAA"}, "product_id"),
        ({"colour": "red"}, "colour"),
    ]:
        payload = {"product_id": seats.product, "location": "somerton", "course_datetime": START}
        payload.update(body)
        response = client.post("/admin/sessions", json=payload, headers=admin_headers)
        assert response.status_code in (400, 422), (body, response.text)
        assert field in response.json()["detail"]
    created = seats.create(capacity=5, minimum=2)
    again = client.post(
        "/admin/sessions",
        json={"product_id": seats.product, "location": "somerton", "course_datetime": START},
        headers=admin_headers,
    )
    assert again.status_code == 409
    for change, reason in [
        ({"minimum": 6}, "minimum: must not exceed the capacity, 5 (received 6)"),
        ({"capacity": 1}, "minimum: must not exceed the capacity, 1 (received 2)"),
        ({"capacity": False}, "capacity"),
    ]:
        patched = client.patch(
            f"/admin/sessions/{created['id']}", json=change, headers=admin_headers
        )
        assert patched.status_code in (400, 422), (change, patched.text)
        assert reason in patched.json()["detail"], patched.text
    assert seats.read(created["id"]) == created
    lifted = client.patch(
        f"/admin/sessions/{created['id']}", json={"capacity": None}, headers=admin_headers
    )
    assert lifted.status_code == 200, lifted.text  # no limit: any minimum


def test_impossible_session_times_are_refused_and_change_nothing(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    for body, field in [
        ({"course_date_end": "2026-12-05 07:00:00"}, "course_date_end"),  # before the start
        ({"course_date_end": START}, "course_date_end"),  # no length at all
        ({"course_datetime": "0001-01-01 00:00:00", "course_date_end": None}, "course_datetime"),
        ({"course_datetime": "9999-12-31 23:59:59", "course_date_end": None}, "course_datetime"),
        ({"course_date_end": "0001-01-01 00:00:00"}, "course_date_end"),
    ]:
        payload = {"product_id": seats.product, "location": "somerton", "course_datetime": START}
        payload.update(body)
        response = client.post("/admin/sessions", json=payload, headers=admin_headers)
        assert response.status_code == 400, (body, response.text)
        assert field in response.json()["detail"]
    assert client.get("/admin/sessions", headers=admin_headers).json() == []
    made = seats.create()
    for end in ("2026-12-05 07:00:00", "0001-01-01 00:00:00"):
        changed = client.patch(
            f"/admin/sessions/{made['id']}", json={"course_date_end": end}, headers=admin_headers
        )
        assert changed.status_code == 400, changed.text
        assert "course_date_end" in changed.json()["detail"]
    assert seats.read(made["id"])["course_date_end"] == made["course_date_end"]


def test_bookings_take_seats_until_the_session_is_full(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=2)
    first, second = seats.book(), seats.book(course_location="SOMERTON")
    assert first["delivery"] == second["delivery"] == "true"
    assert seats.read(created["id"])["seats_left"] == 0
    full = seats.book(booking_number="FULL-1")
    assert full == {**full, "delivery": "false", "receipt": "Course is full."}
    with sessions() as session:
        stored = session.scalar(
            select(func.count()).select_from(Asset).where(Asset.booking_number == "FULL-1")
        )
    assert stored == 0
    # Another session of the same product has seats: the full one blocks nothing else.
    seats.create(course_datetime="2026-12-06 08:30:00")
    other = seats.book(course_datetime="2026-12-06 08:30:00")
    assert other["delivery"] == "true"


def test_a_full_item_fails_alone_in_its_request(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    seats.create(capacity=1)
    a, b, c = seats.person(), seats.person(), seats.person()
    results = seats.send(
        seats.item(a),
        seats.item(b),
        seats.item(c, course_datetime="2026-12-09 08:30:00"),
    )
    assert [r["delivery"] for r in results] == ["true", "false", "true"]
    assert results[1]["receipt"] == "Course is full."


def test_cancelling_frees_a_seat_and_a_result_keeps_it(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=2)
    one, two = seats.book(), seats.book()
    cancel = seats.send({"asset_id": one["asset_id"], "course_status": "cancelled"})[0]
    assert cancel["delivery"] == "true", cancel
    assert seats.read(created["id"])["booked"] == 1
    passed = seats.send(
        {
            "asset_id": two["asset_id"],
            "course_status": "completed - pass",
            "course_feedback": "pass A",
        }
    )[0]
    assert passed["delivery"] == "true", passed
    assert seats.read(created["id"])["booked"] == 1
    # Re-booking the cancelled course takes a seat again.
    again = seats.send({"asset_id": one["asset_id"], "course_status": "booked"})[0]
    assert again["delivery"] == "true"
    assert seats.read(created["id"])["seats_left"] == 0
    third = seats.book()
    assert third["receipt"] == "Course is full."
    # ...and a cancelled course cannot come back into a full session.
    seats.send({"asset_id": one["asset_id"], "course_status": "cancelled"})
    seats.book()
    back = seats.send({"asset_id": one["asset_id"], "course_status": "booked"})[0]
    assert back["delivery"] == "false"
    assert back["receipt"] == "Course is full."


def test_moving_a_course_takes_a_seat_there_and_frees_one_here(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    here = seats.create(capacity=2)
    there = seats.create(capacity=1, course_datetime="2026-12-12 08:30:00")
    booked = seats.book()
    moved = seats.send({"asset_id": booked["asset_id"], "course_datetime": "2026-12-12 08:30:00"})[
        0
    ]
    assert moved["delivery"] == "true", moved
    assert seats.read(here["id"])["booked"] == 0
    assert seats.read(there["id"])["booked"] == 1
    other = seats.book()
    refused = seats.send({"asset_id": other["asset_id"], "course_datetime": "2026-12-12 08:30:00"})[
        0
    ]
    assert refused["receipt"] == "Course is full."
    assert seats.read(here["id"])["booked"] == 1
    moved_site = seats.send({"asset_id": other["asset_id"], "course_location": "kilsyth"})[0]
    assert moved_site["delivery"] == "true"  # no session there: as before sessions
    assert seats.read(here["id"])["booked"] == 0


def test_without_sessions_bookings_work_as_before(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    assert seats.book()["delivery"] == "true"


def test_sessions_required_refuses_a_booking_naming_none(
    make_client: Any, admin_headers: dict[str, str]
) -> None:
    client = make_client(sessions_required=True)
    seats = Seats(client, admin_headers)
    seats.create()
    missing = seats.book(course_datetime="2026-12-05 09:00:00")
    assert (missing["delivery"], missing["receipt"]) == ("false", "No such course session.")
    assert seats.book()["delivery"] == "true"


def test_availability_filters_and_scopes(
    client: TestClient, admin_headers: dict[str, str], make_key: Any
) -> None:
    seats = Seats(client, admin_headers)
    december = seats.create(capacity=5)
    seats.create(course_datetime="2027-01-09 08:30:00")
    seats.create(location="kilsyth")
    seats.book()
    for scope in ("products", "courses"):
        headers = {"Authorization": f"Bearer {make_key(scope)}"}
        response = client.get(
            "/crm/sessions",
            params={
                "product_id": seats.product,
                "location": "Somerton",
                "from": "2026-12-01",
                "to": "2026-12-31",
            },
            headers=headers,
        )
        assert response.status_code == 200, response.text
        [only] = response.json()
        assert only["id"] == december["id"]
        assert {k: only[k] for k in ("capacity", "booked", "seats_left", "waitlist", "status")} == {
            "capacity": 5,
            "booked": 1,
            "seats_left": 4,
            "waitlist": 0,
            "status": "scheduled",
        }
    assert len(client.get("/crm/sessions", headers=admin_headers).json()) == 3
    refused = client.get("/crm/sessions", headers={"Authorization": f"Bearer {make_key('match')}"})
    assert refused.status_code == 403
    bad = client.get(
        "/crm/sessions", params={"from": "soon", "location": "mars"}, headers=admin_headers
    )
    assert bad.status_code == 400
    assert "location" in bad.json()["detail"]


def test_availability_bounds_at_the_calendars_edges_are_refused_not_a_500(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """The day after 9999-12-31 is no date: a bound outside the years a course may fall in
    is a 400 naming it, on the booking website's listing and the operators' alike."""
    seats = Seats(client, admin_headers)
    seats.create()
    for path in ("/crm/sessions", "/admin/sessions"):
        for name, value in [
            ("to", "9999-12-31"),
            ("to", "9999-12-31 23:59:59"),
            ("from", "0001-01-01"),
            ("from", "1899-12-31 23:59:59"),
        ]:
            refused = client.get(path, params={name: value}, headers=admin_headers)
            assert refused.status_code == 400, (path, name, value, refused.text)
            assert f"{name}: must be in the years 1900 to 9998" in refused.json()["detail"]
        widest = client.get(
            path, params={"from": "1900-01-01", "to": "9998-12-31"}, headers=admin_headers
        )
        assert widest.status_code == 200, widest.text
        assert len(widest.json()) == 1


def test_instructor_cover_limits_the_seats_on_sale(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers, code="CBT", trainees_per_instructor=4)
    created = seats.create(capacity=12, instructors=2)
    assert (created["seats"], created["seats_left"]) == (8, 8)
    more = client.patch(
        f"/admin/sessions/{created['id']}", json={"instructors": 3}, headers=admin_headers
    )
    assert more.status_code == 200, more.text
    assert more.json()["seats_left"] == 12


def test_times_in_other_scripts_digits_are_refused_not_stored_as_written(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    """Arabic-Indic and full-width digits passed the form's \\d and strptime, and a time
    is kept as written: a session and a course were stored starting "٢٠٢٦-12-05
    08:30:00", a start no booking names that sorts after every day written in ASCII."""
    seats = Seats(client, admin_headers)
    arabic = "٢٠٢٦-12-05 08:30:00"
    wide = "\uff12\uff10\uff12\uff16-12-05 16:30:00"  # full-width 2026
    for body in ({"course_datetime": arabic, "course_date_end": None}, {"course_date_end": wide}):
        payload = {"product_id": seats.product, "location": "somerton", "course_datetime": START}
        created = client.post("/admin/sessions", json={**payload, **body}, headers=admin_headers)
        assert created.status_code == 400, created.text
        assert "YYYY-MM-DD HH:MM:SS" in created.json()["detail"]
    assert client.get("/admin/sessions", headers=admin_headers).json() == []
    made = seats.create()
    changed = client.patch(
        f"/admin/sessions/{made['id']}", json={"course_date_end": wide}, headers=admin_headers
    )
    assert changed.status_code == 400, changed.text
    assert seats.read(made["id"])["course_date_end"] == made["course_date_end"]
    [refused] = seats.send(seats.item(seats.person(), course_datetime=arabic))
    assert refused["delivery"] == "false"
    assert "course_datetime" in refused["receipt"]
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(Asset)) == 0


def test_trainees_per_instructor_of_superscript_digits_is_refused_in_plain_words(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """ "²" passed str.isdigit() and int() refused it: the answer quoted Python."""
    body = {"name": "CBT", "code": "CBT-2", "price": "10.00", "trainees_per_instructor": "²"}
    refused = client.post("/admin/products", json=body, headers=admin_headers)
    assert refused.status_code in (400, 422), refused.text
    assert "whole number from 1 to 100" in refused.text
    assert "invalid literal" not in refused.text


def test_a_session_created_after_its_bookings_counts_them(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    seats.book()
    seats.book()
    created = seats.create(capacity=2)
    assert (created["booked"], created["seats_left"]) == (2, 0)
    assert seats.book()["receipt"] == "Course is full."


def test_cancelling_a_session_cancels_its_bookings(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created = seats.create()
    booked = seats.book()
    response = client.patch(
        f"/admin/sessions/{created['id']}", json={"status": "cancelled"}, headers=admin_headers
    )
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "cancelled"
    assert response.json()["booked"] == 0
    asset = client.get(f"/admin/assets/{booked['asset_id']}", headers=admin_headers).json()
    assert asset["course_status"] == "cancelled"
    assert [h["to_status"] for h in asset["status_history"]] == ["booked", "cancelled"]
    assert seats.book()["delivery"] == "false"
    assert (
        client.patch(
            f"/admin/sessions/{created['id']}", json={"capacity": 9}, headers=admin_headers
        ).status_code
        == 409
    )


def test_capacity_below_the_bookings_is_refused(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created = seats.create()
    seats.book()
    seats.book()
    response = client.patch(
        f"/admin/sessions/{created['id']}", json={"capacity": 1}, headers=admin_headers
    )
    assert response.status_code == 409
    assert (
        client.patch(
            f"/admin/sessions/{created['id']}", json={"capacity": "many"}, headers=admin_headers
        ).status_code
        == 400
    )
    assert (
        client.patch(
            "/admin/sessions/a0S000000000000AAA", json={"capacity": 4}, headers=admin_headers
        ).status_code
        == 404
    )
