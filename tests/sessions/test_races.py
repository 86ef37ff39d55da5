"""Seats and the waiting list under concurrent requests: a real server, threads released
together by a barrier, on each database (docs/decisions.md, "Course sessions").

Whatever order the requests land in, a user depends on the same things: never more
bookings than seats, every request answered (no 500), each freed seat held for exactly
one person waiting, nobody lost, nobody seated twice or seated and waiting at once, and
the session's stored counts equal to its rows.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import event, select, text, update
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.config import Settings
from ridercrm.courses.models import Asset
from ridercrm.courses.service import change_statuses
from ridercrm.db import session_scope
from ridercrm.notifications.models import Message
from ridercrm.people.models import Person
from ridercrm.sessions import waitlist
from ridercrm.sessions.models import IN_LINE, OFFERED, CourseSession, WaitlistEntry
from ridercrm.sessions.seats import SEAT_STATUSES, lapse_offers
from tests.live import live_server
from tests.sessions.helpers import PATH, Seats

FULL = "Course is full."


@pytest.fixture
def http(settings: Settings) -> Iterator[httpx.Client]:
    with live_server(settings) as base_url, httpx.Client(base_url=base_url, timeout=60) as client:
        yield client


def together(*calls: Callable[[], Any]) -> list[Any]:
    """Run the calls in threads released at once; their answers, in the calls' order.
    No HTTP answer is a server error."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], Any]) -> Any:
        barrier.wait(timeout=30)
        return call()

    with ThreadPoolExecutor(len(calls)) as pool:
        answers = list(pool.map(run, calls))
    failed = [a.text for a in answers if isinstance(a, httpx.Response) and a.status_code >= 500]
    assert failed == []
    return answers


class Racer:
    """Requests to the live server, one call each, for :func:`together`."""

    def __init__(self, http: httpx.Client, seats: Seats, session_id: str) -> None:
        self.http, self.seats, self.session_id = http, seats, session_id
        self.headers = seats.headers

    def book(self, person_id: str) -> Callable[[], httpx.Response]:
        item = self.seats.item(person_id)
        return lambda: self.http.post(PATH, json={"people_product": [item]}, headers=self.headers)

    def book_or_wait(self, person_id: str) -> Callable[[], httpx.Response]:
        """What the booking website does: book, and join the waiting list if full."""
        booking = self.book(person_id)

        def call() -> httpx.Response:
            booked = booking()
            if booked.status_code != 200 or receipt(booked) != FULL:
                return booked
            return self.http.post(
                f"/crm/sessions/{self.session_id}/waitlist",
                json={"person_id": person_id},
                headers=self.headers,
            )

        return call

    def join_when_full(self, person_id: str) -> Callable[[], httpx.Response]:
        """Join the waiting list, again while the session still has seats (at most 500
        tries): the join lands just as the last seat is taken."""
        path = f"/crm/sessions/{self.session_id}/waitlist"

        def call() -> httpx.Response:
            for _ in range(500):
                joined = self.http.post(path, json={"person_id": person_id}, headers=self.headers)
                if joined.status_code != 409 or "seats_left" not in joined.json()["detail"]:
                    break
            return joined

        return call

    def cancel(self, asset_id: str) -> Callable[[], httpx.Response]:
        item = {"asset_id": asset_id, "course_status": "cancelled"}
        return lambda: self.http.post(PATH, json={"people_product": [item]}, headers=self.headers)

    def leave(self, person_id: str) -> Callable[[], httpx.Response]:
        path = f"/crm/sessions/{self.session_id}/waitlist/{person_id}"
        return lambda: self.http.delete(path, headers=self.headers)

    def merge(self, people: list[str], survivor: str) -> Callable[[], httpx.Response]:
        body = {"people": people, "survivor": survivor}
        return lambda: self.http.post("/admin/people/merge", json=body, headers=self.headers)


def receipt(answer: httpx.Response) -> str:
    assert answer.status_code == 200, answer.text
    [detail] = answer.json()["details"]
    return str(detail["receipt"])


def delivered(answer: httpx.Response) -> bool:
    assert answer.status_code == 200, answer.text
    [detail] = answer.json()["details"]
    return bool(detail["delivery"] == "true")


def stored(sessions: sessionmaker[Session], session_id: str) -> dict[str, Any]:
    """The session as its rows say, checked against its counts: seated people, the line
    in order, everyone who left it, and the counts."""
    with sessions() as session:
        row = session.get(CourseSession, session_id)
        assert row is not None
        survivor = {
            p.id: p.merged_into or p.id for p in session.scalars(select(Person))
        }  # one hop: enough for these tests
        seated = [
            survivor[a.person_id]
            for a in session.scalars(
                select(Asset).where(
                    Asset.product_id == row.product_id,
                    Asset.course_location == row.location,
                    Asset.course_datetime == row.course_datetime,
                    Asset.course_status.in_(SEAT_STATUSES),
                )
            )
        ]
        entries = list(
            session.scalars(
                select(WaitlistEntry)
                .where(WaitlistEntry.session_id == session_id)
                .order_by(WaitlistEntry.rank, WaitlistEntry.id)
            )
        )
        messages = list(
            session.scalars(
                select(Message).where(
                    Message.kind == "waitlist_offer",
                    Message.channel == "email",
                    Message.product_id == row.product_id,
                    Message.location == row.location,
                    Message.course_datetime == row.course_datetime,
                )
            )
        )
        counts = (row.seats, row.booked, row.held)
    offers = Counter(m.person_id for m in messages)
    line = [e for e in entries if e.state in IN_LINE]
    in_line = [survivor[e.person_id] for e in line]
    seats_on_sale, booked, held = counts
    assert seats_on_sale is not None
    assert booked == len(seated), (booked, seated)
    assert held == sum(e.state == OFFERED for e in line), (held, line)
    assert booked + held <= seats_on_sale, counts
    assert len(set(seated)) == len(seated), f"seated twice: {seated}"
    assert len(set(in_line)) == len(in_line), f"in line twice: {in_line}"
    assert not set(seated) & set(in_line), f"seated and waiting: {set(seated) & set(in_line)}"
    assert len({e.rank for e in line}) == len(line), [(e.person_id, e.rank) for e in line]
    # The rider hears of a held seat while it is held, and only then.
    told = Counter(survivor[m.person_id] for m in messages if m.status != "superseded")
    assert told == Counter(survivor[e.person_id] for e in line if e.state == OFFERED), [
        (m.person_id, m.status, m.reason) for m in messages
    ]
    return {
        "seated": set(seated),
        "line": [(e.person_id, e.state) for e in line],
        "left": {e.person_id: e.state for e in entries if e.state not in IN_LINE},
        "booked": booked,
        "held": held,
        "offers": offers,
    }


def test_concurrent_bookings_fill_the_seats_and_the_rest_wait_in_one_line(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """Twelve people book three seats at once, each joining the waiting list when told
    the course is full: three are seated, nine wait, each at the position they were told."""
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=3)
    people = [seats.person() for _ in range(12)]
    racer = Racer(http, seats, created["id"])

    answers = together(*(racer.book_or_wait(p) for p in people))

    booked = {p for p, a in zip(people, answers, strict=True) if a.status_code == 200}
    assert all(delivered(a) for a in answers if a.status_code == 200)
    joined = {p: a for p, a in zip(people, answers, strict=True) if a.status_code != 200}
    assert {a.status_code for a in joined.values()} == {201}, [a.text for a in joined.values()]
    assert len(booked) == 3
    told = sorted((a.json()["position"], p) for p, a in joined.items())
    assert [position for position, _ in told] == list(range(1, 10))
    after = stored(sessions, created["id"])
    assert after["seated"] == booked
    assert after["line"] == [(p, "waiting") for _, p in told]
    assert (after["booked"], after["held"]) == (3, 0)
    read = seats.read(created["id"])
    assert (read["booked"], read["held"], read["seats_left"], read["waitlist"]) == (3, 0, 0, 9)


def test_seats_freed_while_others_book_are_held_each_for_one_person_waiting(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """Riders cancel and leave the line while strangers book: every freed seat is held
    for the first person still waiting (never sold to a stranger, never held twice), a
    held seat taken or given up passes on, and strangers queue behind."""
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=3)
    session_id = created["id"]
    racer = Racer(http, seats, session_id)
    s1, s2, s3 = (seats.book() for _ in range(3))
    w1, w2, w3, w4, w5 = (seats.person() for _ in range(5))
    for person in (w1, w2, w3, w4, w5):
        assert seats.join(session_id, person).status_code == 201

    # Two cancel and the third in line leaves, while four strangers book.
    strangers = [seats.person() for _ in range(4)]
    answers = together(
        racer.cancel(s1["asset_id"]),
        racer.cancel(s2["asset_id"]),
        racer.leave(w3),
        *(racer.book_or_wait(x) for x in strangers),
    )
    assert [delivered(a) for a in answers[:2]] == [True, True]
    assert answers[2].status_code == 200, answers[2].text
    assert [a.status_code for a in answers[3:]] == [201] * 4, [a.text for a in answers[3:]]
    after = stored(sessions, session_id)
    assert after["line"][:4] == [(w1, OFFERED), (w2, OFFERED), (w4, "waiting"), (w5, "waiting")]
    assert sorted(p for p, _ in after["line"][4:]) == sorted(strangers)
    assert after["left"] == {w3: "removed"}
    assert (after["booked"], after["held"]) == (1, 2)
    assert after["offers"] == {w1: 1, w2: 1}

    # The first takes the seat held for them, the second gives theirs up, the last
    # seated rider cancels, and three more strangers book: both freed seats are held
    # for the next two waiting.
    more = [seats.person() for _ in range(3)]
    answers = together(
        racer.book(w1),
        racer.leave(w2),
        racer.cancel(s3["asset_id"]),
        *(racer.book_or_wait(y) for y in more),
    )
    assert delivered(answers[0]), answers[0].text
    assert answers[1].status_code == 200, answers[1].text
    assert delivered(answers[2]), answers[2].text
    assert [a.status_code for a in answers[3:]] == [201] * 3, [a.text for a in answers[3:]]
    after = stored(sessions, session_id)
    assert after["seated"] == {w1}
    assert after["line"][:2] == [(w4, OFFERED), (w5, OFFERED)]
    assert sorted(p for p, _ in after["line"][2:6]) == sorted(strangers)
    assert sorted(p for p, _ in after["line"][6:]) == sorted(more)
    assert after["left"] == {w1: "booked", w2: "removed", w3: "removed"}
    assert (after["booked"], after["held"]) == (1, 2)
    assert after["offers"] == {w1: 1, w2: 1, w4: 1, w5: 1}

    # Both take their seats while everyone behind them tries to book: the session is
    # full with the three who were offered seats, and nobody behind moved.
    behind = [p for p, _ in after["line"][2:]]
    answers = together(racer.book(w4), racer.book(w5), *(racer.book(p) for p in behind))
    assert [delivered(a) for a in answers[:2]] == [True, True]
    assert {receipt(a) for a in answers[2:]} == {FULL}
    final = stored(sessions, session_id)
    assert final["seated"] == {w1, w4, w5}
    assert final["line"] == after["line"][2:]
    assert (final["booked"], final["held"]) == (3, 0)
    assert final["offers"] == {w1: 1, w2: 1, w4: 1, w5: 1}


def test_a_merge_of_two_people_in_line_while_seats_free_and_strangers_book(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """One record was offered a seat and the other waits behind it; they are merged
    while the last seat frees and strangers book. The person keeps one place (the
    offer), the freed seat is held for the next other person, nothing is held twice."""
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=2)
    session_id = created["id"]
    racer = Racer(http, seats, session_id)
    s1, s2 = seats.book(), seats.book()
    a, b, c, d = (seats.person() for _ in range(4))
    for person in (a, b, c, d):
        assert seats.join(session_id, person).status_code == 201
    assert delivered(racer.cancel(s1["asset_id"])())
    strangers = [seats.person() for _ in range(3)]

    answers = together(
        racer.merge([a, b], b),
        racer.cancel(s2["asset_id"]),
        *(racer.book_or_wait(x) for x in strangers),
    )
    assert answers[0].status_code == 200, answers[0].text
    assert delivered(answers[1]), answers[1].text
    assert [a.status_code for a in answers[2:]] == [201] * 3, [a.text for a in answers[2:]]
    after = stored(sessions, session_id)
    assert after["line"][:3] == [(a, OFFERED), (c, OFFERED), (d, "waiting")]
    assert sorted(p for p, _ in after["line"][3:]) == sorted(strangers)
    assert after["left"] == {b: "removed"}
    assert (after["booked"], after["held"]) == (0, 2)

    # The survivor takes the seat held for its merged record while everyone else books.
    answers = together(racer.book(b), *(racer.book(p) for p in (d, *strangers)))
    assert delivered(answers[0]), answers[0].text
    assert {receipt(a) for a in answers[1:]} == {FULL}
    final = stored(sessions, session_id)
    assert final["seated"] == {b}
    assert final["line"][0] == (c, OFFERED)
    assert (final["booked"], final["held"]) == (1, 1)


@pytest.mark.parametrize("survivor_is", ["seated", "waiting"])
def test_a_merge_of_a_seated_and_a_waiting_person_while_a_seat_frees(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
    survivor_is: str,
) -> None:
    """One record holds a seat and the other waits first in line; they are merged while
    another rider cancels and strangers book. The person keeps their seat and leaves the
    line, so the freed seat is held for the next person waiting, not for them."""
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=2)
    session_id = created["id"]
    racer = Racer(http, seats, session_id)
    seated, other = seats.book(), seats.book()
    holder = seated["contact_id"]
    waiting, next_in_line = seats.person(), seats.person()
    for person in (waiting, next_in_line):
        assert seats.join(session_id, person).status_code == 201
    survivor = holder if survivor_is == "seated" else waiting
    strangers = [seats.person() for _ in range(3)]

    answers = together(
        racer.merge([holder, waiting], survivor),
        racer.cancel(other["asset_id"]),
        *(racer.book_or_wait(x) for x in strangers),
    )
    assert answers[0].status_code == 200, answers[0].text
    assert delivered(answers[1]), answers[1].text
    assert [a.status_code for a in answers[2:]] == [201] * 3, [a.text for a in answers[2:]]
    after = stored(sessions, session_id)
    assert after["seated"] == {survivor}
    assert after["line"][0] == (next_in_line, OFFERED)
    assert sorted(p for p, _ in after["line"][1:]) == sorted(strangers)
    assert (after["booked"], after["held"]) == (1, 1)
    assert after["left"] == {waiting: "booked"}


def test_a_rider_booking_and_joining_the_line_at_once_is_never_seated_and_waiting(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """A rider books a session's last seat while their own join of its waiting list is
    retried until the session is full (a second tab, a client that polls): the join must
    see the seat and be refused. On PostgreSQL the join read the rider's seats before it
    queued behind the booking on the session's row, so the rider waited in line beside
    their own seat and the next freed seat was held for them as well."""
    seats = Seats(client, admin_headers)
    calls: list[Callable[[], httpx.Response]] = []
    made = []
    for day in range(5, 21):
        start, end = f"2026-12-{day:02d} 08:30:00", f"2026-12-{day:02d} 16:30:00"
        session_id = seats.create(capacity=1, course_datetime=start)["id"]
        made.append(session_id)
        rider = seats.person()
        racer = Racer(http, seats, session_id)
        item = seats.item(rider, course_datetime=start, course_date_end=end)
        calls.append(
            lambda item=item: http.post(
                PATH, json={"people_product": [item]}, headers=admin_headers
            )
        )
        calls.append(racer.join_when_full(rider))

    answers = together(*calls)

    assert all(delivered(a) for a in answers[::2])
    joins = answers[1::2]
    assert [a.status_code for a in joins] == [409] * len(joins), [a.text for a in joins]
    assert all("already has a seat" in a.json()["detail"] for a in joins), [a.text for a in joins]
    for session_id in made:
        after = stored(sessions, session_id)
        assert (after["booked"], after["line"]) == (1, [])


def test_offers_lapsing_while_their_riders_book_go_each_to_one_of_them(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """The lapse timer ends held seats' offers one after the other just as their riders
    book them, while strangers book: each seat is either its rider's or held for the next
    in line, never both, never lost, never sold to a stranger."""
    seats = Seats(client, admin_headers)
    racers, riders, nexts = [], [], []
    for day in range(5, 11):
        start, end = f"2026-12-{day:02d} 08:30:00", f"2026-12-{day:02d} 16:30:00"
        session_id = seats.create(capacity=1, course_datetime=start)["id"]
        seated = seats.book(course_datetime=start, course_date_end=end)
        rider, after_them = seats.person(), seats.person()
        for person in (rider, after_them):
            assert seats.join(session_id, person).status_code == 201
        seats.send({"asset_id": seated["asset_id"], "course_status": "cancelled"})
        racers.append((Racer(http, seats, session_id), start, end))
        riders.append(rider)
        nexts.append(after_them)
    with sessions() as session:
        due = sorted(
            session.scalars(
                select(WaitlistEntry.offered_until).where(WaitlistEntry.state == OFFERED)
            )
        )
    assert len(due) == len(riders)

    def lapse() -> list[tuple[str, str]]:
        """The offers lapse one by one, as each one's time comes."""
        lapsed = []
        for until in due:
            with session_scope(sessions, write=True) as session:
                lapsed += lapse_offers(session, now=until)
        return lapsed

    def book(racer: Racer, rider: str, start: str, end: str) -> Callable[[], httpx.Response]:
        item = racer.seats.item(rider, course_datetime=start, course_date_end=end)
        body = {"people_product": [item]}
        return lambda: http.post(PATH, json=body, headers=admin_headers)

    calls = [book(r, rider, s, e) for (r, s, e), rider in zip(racers, riders, strict=True)]
    strangers = [book(r, seats.person(), s, e) for (r, s, e) in racers for _ in range(2)]
    answers = together(lapse, *calls, *strangers)

    lapsed = dict(answers[0])
    assert {receipt(a) for a in answers[1 + len(calls) :]} == {FULL}
    for (racer, _, _), rider, after_them, answer in zip(
        racers, riders, nexts, answers[1 : 1 + len(calls)], strict=True
    ):
        after = stored(sessions, racer.session_id)
        if delivered(answer):
            assert racer.session_id not in lapsed
            assert after["seated"] == {rider}
            assert after["line"] == [(after_them, "waiting")]
            assert (after["booked"], after["held"]) == (1, 0)
        else:
            assert receipt(answer) == FULL
            assert lapsed[racer.session_id] == rider
            assert after["seated"] == set()
            assert after["line"] == [(after_them, OFFERED)]
            assert (after["booked"], after["held"]) == (0, 1)


def test_more_capacity_while_strangers_book_is_held_for_those_waiting(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """Staff add two seats while strangers book and the third in line leaves: both new
    seats are held for the first two waiting, the strangers queue behind."""
    seats = Seats(client, admin_headers)
    created = seats.create(capacity=2)
    session_id = created["id"]
    racer = Racer(http, seats, session_id)
    seats.book(), seats.book()
    w1, w2, w3 = (seats.person() for _ in range(3))
    for person in (w1, w2, w3):
        assert seats.join(session_id, person).status_code == 201
    strangers = [seats.person() for _ in range(4)]

    def grow() -> httpx.Response:
        body = {"capacity": 4}
        return http.patch(f"/admin/sessions/{session_id}", json=body, headers=admin_headers)

    answers = together(grow, racer.leave(w3), *(racer.book_or_wait(x) for x in strangers))

    assert answers[0].status_code == 200, answers[0].text
    assert answers[1].status_code == 200, answers[1].text
    assert [a.status_code for a in answers[2:]] == [201] * 4, [a.text for a in answers[2:]]
    after = stored(sessions, session_id)
    assert after["line"][:2] == [(w1, OFFERED), (w2, OFFERED)]
    assert sorted(p for p, _ in after["line"][2:]) == sorted(strangers)
    assert (after["booked"], after["held"]) == (2, 2)
    assert after["offers"] == {w1: 1, w2: 1}


@contextmanager
def retries_counted() -> Iterator[list[logging.LogRecord]]:
    """The transactions the server ran again (a PostgreSQL deadlock or serialisation
    failure: ``web.runtime``'s "transaction retried"), as they are logged."""
    retried: list[logging.LogRecord] = []

    class Counting(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage() == "transaction retried":
                retried.append(record)

    handler = Counting(logging.WARNING)
    logger = logging.getLogger("ridercrm.http")
    logger.addHandler(handler)
    try:
        yield retried
    finally:
        logger.removeHandler(handler)


class Pause:
    """Hold the transaction that sends a statement containing ``marker`` just after it,
    once, until :meth:`go`: the test lands other requests in that gap."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.reached, self.released = threading.Event(), threading.Event()

    def __call__(self, _conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if self.marker in statement and not self.reached.is_set():
            self.reached.set()
            self.released.wait(timeout=30)

    def go(self) -> None:
        self.released.set()


@contextmanager
def paused_after(marker: str) -> Iterator[Pause]:
    pause = Pause(marker)
    event.listen(Engine, "after_cursor_execute", pause)
    try:
        yield pause
    finally:
        pause.go()
        event.remove(Engine, "after_cursor_execute", pause)


def wait_until_queued(
    sessions: sessionmaker[Session], waiting: int, *calls: Future[Any], seconds: float = 5.0
) -> None:
    """Until ``waiting`` transactions of this database wait for a row lock (PostgreSQL)
    or the calls are answered, at most ``seconds``; on SQLite (writers take turns, not
    row locks) a moment for the calls to reach their turn."""
    with sessions() as session:
        if session.get_bind().dialect.name == "sqlite":
            time.sleep(0.5)
            return
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline and not all(c.done() for c in calls):
            locked = session.scalar(
                text(
                    "SELECT count(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND wait_event_type = 'Lock'"
                )
            )
            session.rollback()
            if int(locked or 0) >= waiting:
                return
            time.sleep(0.02)


def offered_seat(seats: Seats, capacity: int = 1) -> tuple[str, str, str]:
    """A full session whose freed seat is held for a rider, someone waiting behind them:
    the session, the rider, the one behind."""
    session_id = seats.create(capacity=capacity)["id"]
    seated = [seats.book() for _ in range(capacity)]
    rider, behind = seats.person(), seats.person()
    for person in (rider, behind):
        assert seats.join(session_id, person).status_code == 201
    seats.send({"asset_id": seated[0]["asset_id"], "course_status": "cancelled"})
    assert seats.states(session_id) == {rider: OFFERED, behind: "waiting"}
    return session_id, rider, behind


def test_a_rider_booking_their_held_seat_while_leaving_the_line_and_a_stranger_joins(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """A rider books the seat held for them while (another tab) they leave the line and
    a stranger joins it; the leave and the join land while the booking is between its
    statements. Every path locks the session's row first, so they queue behind the
    booking: the rider is seated, their leave finds them off the line, the stranger
    waits behind the next person. Until 2026-11-29 the booking locked the rider's entry
    before the row and the leave the row before the entry: on PostgreSQL a deadlock,
    one of them ended and run again ("transaction retried")."""
    seats = Seats(client, admin_headers)
    session_id, rider, behind = offered_seat(seats)
    racer = Racer(http, seats, session_id)
    stranger = seats.person()

    # The booking's statement that turns the held seat into a booked one.
    with (
        retries_counted() as retried,
        paused_after("offered_until >") as pause,
        ThreadPoolExecutor(3) as pool,
    ):
        booking = pool.submit(racer.book(rider))
        assert pause.reached.wait(timeout=30)
        leave = pool.submit(racer.leave(rider))
        wait_until_queued(sessions, 1, leave)
        join = pool.submit(racer.join_when_full(stranger))
        wait_until_queued(sessions, 2, join)
        pause.go()
        answers = [booking.result(timeout=60), leave.result(timeout=60), join.result(timeout=60)]

    assert delivered(answers[0]), answers[0].text
    assert answers[1].status_code == 404, answers[1].text
    assert answers[2].status_code == 201, answers[2].text
    after = stored(sessions, session_id)
    assert after["seated"] == {rider}
    assert after["line"] == [(behind, "waiting"), (stranger, "waiting")]
    assert after["left"] == {rider: "booked"}
    assert (after["booked"], after["held"]) == (1, 0)
    assert [r.__dict__.get("attempt") for r in retried] == []


def test_a_seat_offered_by_hand_while_its_rider_leaves_the_line_is_not_held_for_them(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """Staff offer a free seat by hand (``waitlist.offer_by_hand``, called without a
    lock of the caller's own) while the rider leaves the line: the offer locks the
    session's row itself, so the leave queues behind it and passes the held seat on.
    Until 2026-11-29 only the console's caller took that lock: on PostgreSQL the leave
    landed between the offer's read of the entry and its writes, and the rider who had
    left was offered the seat again, held for them."""
    seats = Seats(client, admin_headers)
    session_id = seats.create(capacity=1)["id"]
    seats.book()
    rider, behind = seats.person(), seats.person()
    for person in (rider, behind):
        assert seats.join(session_id, person).status_code == 201
    with session_scope(sessions, write=True) as session:
        # A seat on sale that nobody was offered yet (staff raise the limit by hand).
        session.execute(update(CourseSession).where(CourseSession.id == session_id).values(seats=2))
    racer = Racer(http, seats, session_id)

    def offer() -> bool:
        with session_scope(sessions, write=True) as session:
            row = session.get(CourseSession, session_id)
            assert row is not None
            return waitlist.offer_by_hand(session, row, raw_person_id=rider)

    # The offer's read of the entry's state, just before it holds the seat.
    with (
        paused_after(
            "session_waitlist.state \nFROM session_waitlist \nWHERE session_waitlist.id"
        ) as pause,
        ThreadPoolExecutor(2) as pool,
    ):
        offering = pool.submit(offer)
        assert pause.reached.wait(timeout=30)
        leave = pool.submit(racer.leave(rider))
        wait_until_queued(sessions, 1, leave)
        pause.go()
        offered, left = offering.result(timeout=60), leave.result(timeout=60)

    assert offered is True
    assert left.status_code == 200, left.text
    after = stored(sessions, session_id)
    assert after["left"] == {rider: "removed"}
    assert after["line"] == [(behind, OFFERED)]
    assert (after["booked"], after["held"]) == (1, 1)


def test_an_offer_lapsing_while_its_rider_leaves_the_line_passes_the_seat_on_once(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """The lapse timer ends a held seat's offer while its rider leaves the line; the leave
    lands between the lapse's statements. The lapse locks the session's row before the
    entry, as the leave does, so the leave queues behind it: the offer lapsed, the seat is
    held for the next person, the leave finds the rider off the line. Until 2026-11-29
    the lapse ended the entry before it locked the row: on PostgreSQL a deadlock with the
    leave (one of them ended: the timer's round failed, or the leave ran again)."""
    seats = Seats(client, admin_headers)
    session_id, rider, behind = offered_seat(seats)
    racer = Racer(http, seats, session_id)
    with sessions() as session:
        due = session.scalar(
            select(WaitlistEntry.offered_until).where(WaitlistEntry.person_id == rider)
        )

    def lapse() -> list[tuple[str, str]]:
        with session_scope(sessions, write=True) as session:
            return lapse_offers(session, now=due)

    # The lapse's statement that ends the offer.
    with (
        retries_counted() as retried,
        paused_after("UPDATE session_waitlist SET state=") as pause,
        ThreadPoolExecutor(2) as pool,
    ):
        lapsing = pool.submit(lapse)
        assert pause.reached.wait(timeout=30)
        leave = pool.submit(racer.leave(rider))
        wait_until_queued(sessions, 1, leave)
        pause.go()
        lapsed, left = lapsing.result(timeout=60), leave.result(timeout=60)

    assert lapsed == [(session_id, rider)]
    assert left.status_code == 404, left.text
    after = stored(sessions, session_id)
    assert after["left"] == {rider: "lapsed"}
    assert after["line"] == [(behind, OFFERED)]
    assert (after["booked"], after["held"]) == (0, 1)
    assert [r.__dict__.get("attempt") for r in retried] == []


def test_two_bookings_naming_two_sessions_in_opposite_orders_queue_not_deadlock(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """Two operation-1 requests, each booking one rider into each of two sessions, name
    the sessions in opposite orders; the second lands while the first is between its
    seats. A request's sessions are locked at once, in id order, before any seat: the
    second queues behind the first. Until 2026-11-29 each item locked its session as it
    took the seat, in the items' order: on PostgreSQL a deadlock, one request run again
    ("transaction retried")."""
    seats = Seats(client, admin_headers)
    later = {"course_datetime": "2026-12-06 08:30:00", "course_date_end": "2026-12-06 16:30:00"}
    first, second = seats.create()["id"], seats.create(**later)["id"]
    low, high = sorted((first, second))
    at = {first: {}, second: later}

    def booking(order: list[str]) -> Callable[[], httpx.Response]:
        items = [seats.item(seats.person(), **at[session_id]) for session_id in order]
        body = {"people_product": items}
        return lambda: http.post(PATH, json=body, headers=seats.headers)

    high_first, low_first = booking([high, low]), booking([low, high])
    with (
        retries_counted() as retried,
        paused_after("SET booked=") as pause,
        ThreadPoolExecutor(2) as pool,
    ):
        one = pool.submit(high_first)
        assert pause.reached.wait(timeout=30)
        other = pool.submit(low_first)
        wait_until_queued(sessions, 1, other)
        pause.go()
        answers = [one.result(timeout=60), other.result(timeout=60)]

    for answer in answers:
        assert answer.status_code == 200, answer.text
        assert all(d["delivery"] == "true" for d in answer.json()["details"]), answer.text
    assert [stored(sessions, s)["booked"] for s in (low, high)] == [2, 2]
    assert [r.__dict__.get("attempt") for r in retried] == []


def test_the_day_sheet_cancelling_in_two_sessions_while_a_booking_takes_both_queue(
    client: TestClient,
    admin_headers: dict[str, str],
    http: httpx.Client,
    sessions: sessionmaker[Session],
) -> None:
    """Staff cancel a course in each of two sessions at once (the day sheet's status
    changes, higher session first) while an operation-1 request books a rider into each:
    the status changes lock both sessions' rows at once, in id order, as the booking
    does, so the booking queues behind them. Until 2026-11-29 each cancellation locked
    its session as it freed the seat: on PostgreSQL a deadlock."""
    seats = Seats(client, admin_headers)
    later = {"course_datetime": "2026-12-06 08:30:00", "course_date_end": "2026-12-06 16:30:00"}
    first, second = seats.create()["id"], seats.create(**later)["id"]
    low, high = sorted((first, second))
    at = {first: {}, second: later}
    in_high, in_low = (seats.book(**at[s])["asset_id"] for s in (high, low))
    body = {"people_product": [seats.item(seats.person(), **at[s]) for s in (low, high)]}
    cancel = [
        {"asset_id": asset_id, "course_status": "cancelled"} for asset_id in (in_high, in_low)
    ]

    def day_sheet() -> list[Any]:
        with session_scope(sessions, write=True) as session:
            return change_statuses(session, items=cancel, audit_id="a0L000000000000AAA")

    with (
        retries_counted() as retried,
        paused_after("SET booked=") as pause,
        ThreadPoolExecutor(2) as pool,
    ):
        sheet = pool.submit(day_sheet)
        assert pause.reached.wait(timeout=30)
        booking = pool.submit(lambda: http.post(PATH, json=body, headers=seats.headers))
        wait_until_queued(sessions, 1, booking)
        pause.go()
        cancelled, answer = sheet.result(timeout=60), booking.result(timeout=60)

    assert [r.delivery for r in cancelled] == [True, True]
    assert answer.status_code == 200, answer.text
    assert all(d["delivery"] == "true" for d in answer.json()["details"]), answer.text
    assert [stored(sessions, s)["booked"] for s in (low, high)] == [1, 1]
    assert [r.__dict__.get("attempt") for r in retried] == []
