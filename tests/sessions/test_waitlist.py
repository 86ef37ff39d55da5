"""The waiting list (docs/decisions.md, "Course sessions"): join a full session, a freed seat held for the first
in line, their booking takes it, an offer that lapses passes on by itself."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person
from testkit.receiver import Receiver

from ridercrm.config import Settings
from ridercrm.events.delivery import Deliverer
from ridercrm.events.models import Event
from ridercrm.events.service import EVENT_TYPES
from ridercrm.sessions.timer import start_waitlist_timer
from ridercrm.web.routes.events import EVENT_MODELS
from tests.events.conftest import register
from tests.sessions.helpers import START, Seats


def full_session(seats: Seats, capacity: int = 1) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    created = seats.create(capacity=capacity)
    booked = [seats.book() for _ in range(capacity)]
    assert all(b["delivery"] == "true" for b in booked)
    return created, booked


def two_seats_freed(seats: Seats, waiting: int) -> tuple[dict[str, Any], list[str]]:
    """A full session of two seats, ``waiting`` people in its line, then both its
    bookings cancelled: the first two in line are offered the seats."""
    created, booked = full_session(seats, capacity=2)
    people = [seats.person() for _ in range(waiting)]
    for person in people:
        assert seats.join(created["id"], person).status_code == 201
    for course in booked:
        seats.send({"asset_id": course["asset_id"], "course_status": "cancelled"})
    return created, people


def test_only_a_full_session_has_a_waiting_list(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=2)
    seats.book()
    refused = seats.join(created["id"], seats.person())
    assert refused.status_code == 409
    assert "seats_left: 1" in refused.json()["detail"]
    seats.book()
    a, b = seats.person(), seats.person()
    first = seats.join(created["id"], a)
    assert first.status_code == 201, first.text
    assert first.json() == {
        "session_id": created["id"],
        "person_id": a,
        "position": 1,
        "state": "waiting",
        "offered_until": None,
    }
    assert seats.join(created["id"], b).json()["position"] == 2
    again = seats.join(created["id"], a)
    assert again.status_code == 409
    assert "position 1" in again.json()["detail"]
    assert [(e["person_id"], e["position"], e["state"]) for e in seats.waitlist(created["id"])] == [
        (a, 1, "waiting"),
        (b, 2, "waiting"),
    ]
    assert seats.read(created["id"])["waitlist"] == 2
    unknown_person = seats.join(created["id"], "003000000000000AAA")
    assert unknown_person.status_code == 422
    assert seats.join("a0S000000000000AAA", a).status_code == 404
    bad_body = client.post(
        f"/crm/sessions/{created['id']}/waitlist", json={"who": a}, headers=admin_headers
    )
    assert bad_body.status_code == 400


def test_a_freed_seat_is_held_for_the_first_in_line(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    a, b = seats.person(), seats.person()
    seats.join(created["id"], a)
    seats.join(created["id"], b)
    cancelled = seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})[0]
    assert cancelled["delivery"] == "true"
    line = seats.waitlist(created["id"])
    assert (line[0]["person_id"], line[0]["state"]) == (a, "offered")
    assert line[0]["offered_until"] is not None
    assert (line[1]["person_id"], line[1]["state"]) == (b, "waiting")
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats_left"]) == (0, 1, 0)
    # Anyone else sees the seat as taken; the person it is held for takes it.
    assert seats.book(b)["receipt"] == "Course is full."
    assert seats.book()["receipt"] == "Course is full."
    taken = seats.book(a)
    assert taken["delivery"] == "true", taken
    assert [e["state"] for e in seats.waitlist(created["id"])] == ["waiting", "booked"]
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats_left"], read["waitlist"]) == (1, 0, 0, 1)


def test_leaving_the_line_passes_a_held_seat_on(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    a, b = seats.person(), seats.person()
    seats.join(created["id"], a)
    seats.join(created["id"], b)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    left = client.delete(f"/crm/sessions/{created['id']}/waitlist/{a}", headers=admin_headers)
    assert left.status_code == 200, left.text
    assert left.json()["state"] == "removed"
    states = seats.states(created["id"])
    assert states == {a: "removed", b: "offered"}
    gone = client.delete(f"/crm/sessions/{created['id']}/waitlist/{a}", headers=admin_headers)
    assert gone.status_code == 404
    # An id with NUL is nobody on the line (PostgreSQL refuses NUL in a query: was a 500).
    nul = client.delete(f"/crm/sessions/{created['id']}/waitlist/a%00b", headers=admin_headers)
    assert nul.status_code == 404, nul.text
    assert "not on the waiting list" in nul.json()["detail"]


def test_more_capacity_is_offered_at_once(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created, _ = full_session(seats)
    a = seats.person()
    seats.join(created["id"], a)
    grown = client.patch(
        f"/admin/sessions/{created['id']}", json={"capacity": 3}, headers=admin_headers
    )
    assert grown.status_code == 200, grown.text
    assert (grown.json()["held"], grown.json()["seats_left"]) == (1, 1)
    assert seats.waitlist(created["id"])[0]["state"] == "offered"


def test_capacity_cannot_drop_below_the_seats_booked_and_held(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """A held seat is promised: cutting the capacity under it was taken (200), and the
    offer's booking then made 2 bookings of 1 seat."""
    seats = Seats(client, admin_headers)
    created, [booked, _] = full_session(seats, capacity=2)
    a = seats.person()
    seats.join(created["id"], a)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    for capacity in (1, 0):
        cut = client.patch(
            f"/admin/sessions/{created['id']}", json={"capacity": capacity}, headers=admin_headers
        )
        assert cut.status_code == 409, cut.text
        assert "1 seats are held for the waiting list" in cut.json()["detail"]
    assert seats.read(created["id"])["capacity"] == 2
    assert seats.book(a)["delivery"] == "true"
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats"]) == (2, 0, 2)


def test_a_held_seat_cut_by_fewer_instructors_is_not_booked(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Instructors may drop below the booked seats (a sick instructor is a fact); the seat
    held for an offer is then no longer on sale, and its booking would overbook."""
    seats = Seats(client, admin_headers, code="CBT", trainees_per_instructor=2)
    created = seats.create(capacity=4, instructors=2)
    booked = [seats.book() for _ in range(4)]
    a = seats.person()
    assert seats.join(created["id"], a).status_code == 201
    seats.send({"asset_id": booked[0]["asset_id"], "course_status": "cancelled"})
    assert seats.waitlist(created["id"])[0]["state"] == "offered"
    cut = client.patch(
        f"/admin/sessions/{created['id']}", json={"instructors": 1}, headers=admin_headers
    )
    assert cut.status_code == 200, cut.text
    assert seats.book(a)["receipt"] == "Course is full."
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats"]) == (3, 1, 2)
    assert seats.waitlist(created["id"])[0]["state"] == "offered"


def _wait_for(check: Callable[[], bool], limit_s: float = 30.0) -> None:
    deadline = time.monotonic() + limit_s
    while not check():
        assert time.monotonic() < deadline, "the timer never acted"
        time.sleep(0.05)


def test_a_lapsed_offer_passes_to_the_next_without_anyone_acting(
    make_client: Callable[..., TestClient],
    admin_headers: dict[str, str],
    settings: Settings,
    sessions: sessionmaker[Session],
    receiver: Receiver,
) -> None:
    quick = {"waitlist_hold_hours": 0.0002, "waitlist_timer_seconds": 0.05}  # 0.72 s holds
    client = make_client(**quick)
    # Events are stored only for types an endpoint lists (docs/decisions.md): the trail
    # below is read from the outbox, so an endpoint lists the two types it reads.
    register(client, admin_headers, receiver.url, "session.seat_offered", "waitlist.lapsed")
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    a, b = seats.person(), seats.person()
    seats.join(created["id"], a)
    seats.join(created["id"], b)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    stop = start_waitlist_timer(Settings(**{**settings.model_dump(), **quick}))
    try:

        def lapsed() -> bool:
            return seats.states(created["id"])[a] == "lapsed"

        _wait_for(lapsed)
    finally:
        stop()
    # B's own hold may have lapsed too by now (a loaded machine polls slowly): the trail
    # says what happened, in order.
    with sessions() as session:
        trail = [
            (row.type, row.payload["data"]["person_id"])
            for row in session.scalars(
                select(Event)
                .where(Event.type.in_(("session.seat_offered", "waitlist.lapsed")))
                .order_by(Event.id)
            )
        ]
    assert trail[:3] == [
        ("session.seat_offered", a),
        ("waitlist.lapsed", a),
        ("session.seat_offered", b),
    ]
    from ridercrm.notifications.models import Message

    with sessions() as session:
        stale = {
            (m.status, m.reason)
            for m in session.scalars(
                select(Message).where(Message.kind == "waitlist_offer", Message.person_id == a)
            )
        }
    assert stale == {("superseded", "the offer lapsed")}  # no deliverer ran: none went


def test_session_and_waitlist_events_are_delivered_with_their_schemas(
    client: TestClient,
    admin_headers: dict[str, str],
    receiver: Receiver,
    deliverer: Deliverer,
) -> None:
    _endpoint, secret = register(client, admin_headers, receiver.url, *EVENT_TYPES)
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    a = seats.person()
    seats.join(created["id"], a)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    updated = client.patch(
        f"/admin/sessions/{created['id']}", json={"minimum": 1}, headers=admin_headers
    )
    assert updated.status_code == 200, updated.text
    client.patch(
        f"/admin/sessions/{created['id']}", json={"status": "cancelled"}, headers=admin_headers
    )
    deliverer.run_until_idle()
    got = [r for r in receiver.delivered() if r.type.startswith(("session.", "waitlist."))]
    assert all(r.verifies_with(secret) for r in got)
    for request in got:
        EVENT_MODELS[request.type].model_validate(request.payload)
    assert [r.type for r in got] == [
        "session.created",
        "waitlist.joined",
        "session.seat_offered",
        "session.updated",
        "session.cancelled",
    ]
    offered = got[2].payload["data"]
    assert {
        k: offered[k]
        for k in ("session_id", "person_id", "product_id", "location", "course_datetime")
    } == {
        "session_id": created["id"],
        "person_id": a,
        "product_id": seats.product,
        "location": "somerton",
        "course_datetime": START,
    }
    assert offered["offered_until"]


def test_the_first_in_line_is_sent_the_offer_in_the_transaction_that_holds_the_seat(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    from ridercrm.notifications.models import Message

    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    a, b = seats.person(), seats.person()
    seats.join(created["id"], a)
    seats.join(created["id"], b)

    def offers() -> list[Message]:
        with sessions() as session:
            return list(
                session.scalars(
                    select(Message).where(
                        Message.kind == "waitlist_offer", Message.channel == "email"
                    )
                )
            )

    assert offers() == []
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    [offer] = offers()
    assert offer.person_id == a
    assert (offer.product_id, offer.course_datetime) == (
        created["product_id"],
        created["course_datetime"],
    )


def test_an_offer_that_ended_is_not_sent_later(
    client: TestClient, admin_headers: dict[str, str], sessions: sessionmaker[Session]
) -> None:
    """An offer's messages still queued (an SMS kept back by the quiet hours) are
    superseded when the offer ends: a rider taken off the line was later sent "a place
    is held for you"."""
    from ridercrm.notifications.models import Message

    def offer_messages(person: str) -> set[tuple[str, str | None]]:
        with sessions() as session:
            found = session.scalars(
                select(Message).where(Message.kind == "waitlist_offer", Message.person_id == person)
            )
            return {(m.status, m.reason) for m in found}

    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    a, b = seats.person(), seats.person()
    seats.join(created["id"], a)
    seats.join(created["id"], b)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert offer_messages(a) == {("pending", None)}
    removed = client.delete(f"/crm/sessions/{created['id']}/waitlist/{a}", headers=admin_headers)
    assert removed.status_code == 200
    assert offer_messages(a) == {("superseded", "taken off the waiting list")}
    assert offer_messages(b) == {("pending", None)}  # the seat passed on
    assert seats.book(b)["delivery"] == "true"
    assert offer_messages(b) == {("superseded", "the seat was booked")}
    # A cancelled session's offers go with it.
    other = seats.create(capacity=1, course_datetime="2026-12-19 08:30:00")
    [held] = [seats.book(course_datetime="2026-12-19 08:30:00")]
    c = seats.person()
    seats.join(other["id"], c)
    seats.send({"asset_id": held["asset_id"], "course_status": "cancelled"})
    assert offer_messages(c) == {("pending", None)}
    cancelled = client.patch(
        f"/admin/sessions/{other['id']}", json={"status": "cancelled"}, headers=admin_headers
    )
    assert cancelled.status_code == 200, cancelled.text
    assert offer_messages(c) == {("superseded", "the session was cancelled")}


@pytest.mark.parametrize("books_with", ["lead", "contact"])
def test_a_seat_offered_to_a_lead_since_converted_is_taken_by_its_contact(
    client: TestClient, admin_headers: dict[str, str], books_with: str
) -> None:
    """The lead waits, then becomes a contact by a booking elsewhere: the seat held for
    the lead is the contact's, booked with either id (a lead's id works on its
    contact)."""
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    lead = create_person(client, admin_headers, kind="leads", email="waiting.lead@example.com")
    assert seats.join(created["id"], lead).status_code == 201
    elsewhere = seats.book(lead, course_datetime="2027-02-06 08:30:00")
    assert elsewhere["receipt"] == "Course booked; lead converted to contact.", elsewhere
    contact = elsewhere["contact_id"]
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert [e["state"] for e in seats.waitlist(created["id"])] == ["offered"]
    assert seats.book()["receipt"] == "Course is full."  # held for the lead's contact
    taken = seats.book(lead if books_with == "lead" else contact)
    assert taken["delivery"] == "true", taken
    assert taken["contact_id"] == contact
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats_left"]) == (1, 0, 0)


def test_a_seat_offered_to_a_record_since_merged_is_taken_by_the_survivor(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    waiting, survivor = seats.person(), seats.person()
    assert seats.join(created["id"], waiting).status_code == 201
    _merge(client, admin_headers, [waiting, survivor], survivor)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert [e["state"] for e in seats.waitlist(created["id"])] == ["offered"]
    taken = seats.book(survivor)
    assert taken["delivery"] == "true", taken
    assert seats.read(created["id"])["held"] == 0


def test_two_offers_merged_into_one_person_free_the_second_seat_when_booked(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Both records of one person were offered a seat before they were merged: the merge
    keeps one offer and passes the other seat to the next in line at once, rather than
    holding it for no one for good."""
    seats = Seats(client, admin_headers)
    created, [waiting, survivor, next_in_line] = two_seats_freed(seats, waiting=3)
    assert [e["state"] for e in seats.waitlist(created["id"])] == ["offered", "offered", "waiting"]
    _merge(client, admin_headers, [waiting, survivor], survivor)
    line = seats.states(created["id"])
    assert line == {waiting: "offered", survivor: "removed", next_in_line: "offered"}
    taken = seats.book(survivor)
    assert taken["delivery"] == "true", taken
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats_left"]) == (1, 1, 0)
    line = seats.states(created["id"])
    assert line == {waiting: "booked", survivor: "removed", next_in_line: "offered"}


def test_a_merged_record_still_waiting_leaves_the_line_when_its_survivor_takes_an_offer(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """One record was offered the seat, the other still waited, and they were merged:
    the merge keeps the offer and takes the other place out of line, so no second seat
    is ever held for them."""
    seats = Seats(client, admin_headers)
    created, booked = full_session(seats, capacity=2)
    survivor, waiting, next_in_line = seats.person(), seats.person(), seats.person()
    for person in (survivor, waiting, next_in_line):
        assert seats.join(created["id"], person).status_code == 201
    seats.send({"asset_id": booked[0]["asset_id"], "course_status": "cancelled"})
    _merge(client, admin_headers, [waiting, survivor], survivor)
    assert seats.book(survivor)["delivery"] == "true"
    seats.send({"asset_id": booked[1]["asset_id"], "course_status": "cancelled"})
    line = seats.states(created["id"])
    assert line == {survivor: "booked", waiting: "removed", next_in_line: "offered"}


def test_someone_with_a_seat_in_the_session_cannot_join_its_line(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """A later offer would hold them a second seat; a rider whose course there was
    cancelled may join."""
    seats = Seats(client, admin_headers)
    created, [booked, _other] = full_session(seats, capacity=2)
    seated = booked["contact_id"]
    refused = seats.join(created["id"], seated)
    assert refused.status_code == 409, refused.text
    assert refused.json()["detail"] == (
        f"person_id: {seated} already has a seat in session {created['id']}"
        f" (course {booked['asset_id']})"
    )
    assert seats.waitlist(created["id"]) == []
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert seats.book()["delivery"] == "true"  # the freed seat, to someone else
    joined = seats.join(created["id"], seated)
    assert joined.status_code == 201, joined.text


def _merge(client: TestClient, headers: dict[str, str], people: list[str], survivor: str) -> int:
    merged = client.post(
        "/admin/people/merge", json={"people": people, "survivor": survivor}, headers=headers
    )
    assert merged.status_code == 200, merged.text
    return int(merged.json()["merge_id"])


def test_a_merge_ends_the_waiting_of_a_record_whose_survivor_has_a_seat(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """The survivor is booked in the session and the merged record was waiting for it:
    the merge takes the record out of the line, so a freed seat goes to someone else
    rather than being held for a person who already has one. The undo puts it back."""
    seats = Seats(client, admin_headers)
    created, [seated, other] = full_session(seats, capacity=2)
    survivor = seated["contact_id"]
    waiting, next_in_line = seats.person(), seats.person()
    for person in (waiting, next_in_line):
        assert seats.join(created["id"], person).status_code == 201
    merge_id = _merge(client, admin_headers, [waiting, survivor], survivor)
    line = {e["person_id"]: (e["state"], e["position"]) for e in seats.waitlist(created["id"])}
    assert line == {next_in_line: ("waiting", 1), waiting: ("booked", None)}
    seats.send({"asset_id": other["asset_id"], "course_status": "cancelled"})
    line = seats.states(created["id"])
    assert line == {next_in_line: "offered", waiting: "booked"}
    assert seats.book(next_in_line)["delivery"] == "true"

    undone = client.post(f"/admin/people/merge/{merge_id}/undo", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    line = {e["person_id"]: (e["state"], e["position"]) for e in seats.waitlist(created["id"])}
    assert line == {waiting: ("waiting", 1), next_in_line: ("booked", None)}


def test_a_merge_keeps_one_place_in_line_for_its_person(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Both records waited in one line: the earlier place stays, the later one leaves,
    and the survivor cannot join again beside the merged record's place."""
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    first, between, survivor = seats.person(), seats.person(), seats.person()
    for person in (first, between, survivor):
        assert seats.join(created["id"], person).status_code == 201
    _merge(client, admin_headers, [first, survivor], survivor)
    line = [(e["person_id"], e["position"], e["state"]) for e in seats.waitlist(created["id"])]
    assert line == [(first, 1, "waiting"), (between, 2, "waiting"), (survivor, None, "removed")]
    again = seats.join(created["id"], survivor)
    assert again.status_code == 409, again.text
    assert "already on the waiting list at position 1" in again.json()["detail"]
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert seats.book(survivor)["delivery"] == "true"
    read = seats.read(created["id"])
    assert (read["booked"], read["held"]) == (1, 0)


def test_a_merged_record_offered_a_seat_leaves_the_line_by_its_own_id(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """The survivor had left the line earlier (a removed entry of its own); leaving by
    the merged record's id ends the merged record's offer, not the survivor's old entry."""
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    survivor, waiting, next_in_line = seats.person(), seats.person(), seats.person()
    assert seats.join(created["id"], survivor).status_code == 201
    path = f"/crm/sessions/{created['id']}/waitlist"
    assert client.delete(f"{path}/{survivor}", headers=admin_headers).status_code == 200
    for person in (waiting, next_in_line):
        assert seats.join(created["id"], person).status_code == 201
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    _merge(client, admin_headers, [waiting, survivor], survivor)
    left = client.delete(f"{path}/{waiting}", headers=admin_headers)
    assert left.status_code == 200, left.text
    assert left.json()["state"] == "removed"
    line = seats.states(created["id"])
    assert line == {next_in_line: "offered", waiting: "removed", survivor: "removed"}


def test_a_seat_offered_three_hops_back_is_taken_by_the_live_record(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """A lead merged into a lead, that lead converted, its contact merged into another:
    the seat offered to the first lead is the live contact's."""
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    first = create_person(client, admin_headers, kind="leads", email="hop.one@example.com")
    second = create_person(client, admin_headers, kind="leads", email="hop.two@example.com")
    assert seats.join(created["id"], first).status_code == 201
    _merge(client, admin_headers, [first, second], second)
    converted = seats.book(second, course_datetime="2027-02-06 08:30:00")
    contact = converted["contact_id"]
    live = seats.person()
    _merge(client, admin_headers, [contact, live], live)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    assert [e["state"] for e in seats.waitlist(created["id"])] == ["offered"]
    taken = seats.book(live)
    assert taken["delivery"] == "true", taken
    read = seats.read(created["id"])
    assert (read["booked"], read["held"]) == (1, 0)


def test_a_merge_of_three_passes_a_freed_seat_to_someone_else_and_undoes_cleanly(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Two records of one person were offered the two free seats and a third waited
    behind them: the merge keeps one offer and passes the other seat to the next person
    waiting, not to the person's own third record about to leave the line. Held seats
    always equal the offers standing, through the undo and a second merge."""
    seats = Seats(client, admin_headers)
    created, [first, second, third, other] = two_seats_freed(seats, waiting=4)

    def held_and_line() -> tuple[int, dict[str, str]]:
        line = seats.states(created["id"])
        held = seats.read(created["id"])["held"]
        assert held == sum(state == "offered" for state in line.values()), line
        return held, line

    merge_id = _merge(client, admin_headers, [first, second, third], third)
    assert held_and_line() == (
        2, {first: "offered", second: "removed", third: "removed", other: "offered"}
    )  # fmt: skip
    undone = client.post(f"/admin/people/merge/{merge_id}/undo", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    assert held_and_line() == (
        2, {first: "offered", second: "waiting", third: "waiting", other: "offered"}
    )  # fmt: skip
    _merge(client, admin_headers, [first, second, third], first)
    assert seats.book(second)["delivery"] == "true"
    assert held_and_line() == (
        1, {first: "booked", second: "removed", third: "removed", other: "offered"}
    )  # fmt: skip


def test_the_undo_puts_no_one_back_in_a_line_where_they_have_a_seat(
    client: TestClient, admin_headers: dict[str, str]
) -> None:
    """Both records waited; after the merge the survivor booked the seat offered to the
    merged record's place. Undone, the survivor holds that seat: its old place does not
    wait again, so no second seat is ever held for it."""
    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    merged_record, survivor = seats.person(), seats.person()
    for person in (merged_record, survivor):
        assert seats.join(created["id"], person).status_code == 201
    merge_id = _merge(client, admin_headers, [merged_record, survivor], survivor)
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    stored = client.get(f"/admin/people/{survivor}", headers=admin_headers).json()
    same = {name: stored[name] for name in ("opt_in", "mobile_phone", "drivers_license")}
    assert seats.book(survivor, **same)["delivery"] == "true"  # the person left as merged
    undone = client.post(f"/admin/people/merge/{merge_id}/undo", headers=admin_headers)
    assert undone.status_code == 200, undone.text
    line = seats.states(created["id"])
    assert line[survivor] != "waiting", line
    changed = client.patch(
        f"/admin/sessions/{created['id']}", json={"capacity": 2}, headers=admin_headers
    )
    assert changed.status_code == 200, changed.text
    line = seats.states(created["id"])
    assert line[survivor] not in ("waiting", "offered"), line


def test_a_seat_a_merge_passes_on_is_held_as_the_setting_says(
    make_client: Callable[..., TestClient], admin_headers: dict[str, str]
) -> None:
    """RIDERCRM_WAITLIST_HOLD_HOURS holds the seats a merge and its undo pass on too,
    not the built-in 24 hours."""
    import datetime as dt

    client = make_client(waitlist_hold_hours=2)
    seats = Seats(client, admin_headers)
    created, [first, second, other] = two_seats_freed(seats, waiting=3)
    _merge(client, admin_headers, [first, second], first)
    [offer] = [e for e in seats.waitlist(created["id"]) if e["person_id"] == other]
    assert offer["state"] == "offered"
    until = dt.datetime.fromisoformat(offer["offered_until"])
    left = until - dt.datetime.now(dt.UTC)
    assert dt.timedelta(hours=1.9) < left <= dt.timedelta(hours=2), left


@pytest.mark.parametrize("ended_by", ["booking", "leaving", "lapse"])
def test_an_offer_made_before_a_merge_is_not_sent_after_it_ended(
    client: TestClient,
    admin_headers: dict[str, str],
    sessions: sessionmaker[Session],
    ended_by: str,
) -> None:
    """The merge moves the offer's queued message to the survivor while the line entry
    stays the merged record's: when the offer ended (the survivor booked the seat, left
    the line, or the hold lapsed) the message stayed pending, and would be sent."""
    import datetime as dt

    from ridercrm.db import session_scope
    from ridercrm.notifications.models import Message
    from ridercrm.sessions import seats as seat_rules

    seats = Seats(client, admin_headers)
    created, [booked] = full_session(seats)
    waiting, survivor = seats.person(), seats.person()
    assert seats.join(created["id"], waiting).status_code == 201
    seats.send({"asset_id": booked["asset_id"], "course_status": "cancelled"})
    _merge(client, admin_headers, [waiting, survivor], survivor)
    if ended_by == "booking":
        assert seats.book(survivor)["delivery"] == "true"
    elif ended_by == "leaving":
        path = f"/crm/sessions/{created['id']}/waitlist/{survivor}"
        assert client.delete(path, headers=admin_headers).status_code == 200
    else:
        later = dt.datetime.now(dt.UTC) + dt.timedelta(days=2)
        with session_scope(sessions, write=True) as session:
            assert seat_rules.lapse_offers(session, now=later) == [(created["id"], waiting)]
    with sessions() as session:
        pending = session.scalars(
            select(Message.id).where(Message.kind == "waitlist_offer", Message.status == "pending")
        ).all()
    assert pending == []
