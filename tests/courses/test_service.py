"""The booking service's receipt rules, called directly (no HTTP): operation 1's items
go to ``courses.service.book_courses`` and come back as one result per item.

The wire tests (tests/courses/test_http.py) pin the same receipts in the response
bytes; these pin the service's own contract, so a change of rule shows here first.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import new_booking, person_body

from ridercrm.courses import service
from ridercrm.courses.models import Asset
from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT, LEAD
from ridercrm.people.schemas import PersonCreate
from ridercrm.products import service as products
from ridercrm.products.schemas import ProductCreate


class Store:
    """A contact, a lead and a product, stored; book() runs items in one transaction."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        with session_scope(sessions, write=True) as session:
            self.contact = people.create_person(
                session, kind=CONTACT, data=PersonCreate.model_validate(person_body())
            ).id
            lead = person_body(first_name="Lena", last_name="Lead", email="lena@example.com")
            self.lead = people.create_person(
                session, kind=LEAD, data=PersonCreate.model_validate(lead)
            ).id
            self.product = products.create_product(
                session,
                data=ProductCreate.model_validate(
                    {"name": "Learner Approved Pre-Licence", "code": "LAP-SOM", "price": "249.00"}
                ),
            ).id

    def book(self, *items: Any) -> list[service.ItemResult]:
        with session_scope(self.sessions, write=True) as session:
            return service.book_courses(
                session, items=list(items), audit_id=new_id(RecordKind.AUDIT)
            )

    def one(self, item: Any) -> service.ItemResult:
        (result,) = self.book(item)
        return result


@pytest.fixture
def store(sessions: sessionmaker[Session]) -> Store:
    return Store(sessions)


def test_a_lead_booked_is_converted_and_its_contact_named(store: Store) -> None:
    result = store.one(new_booking(store.lead, store.product))
    assert (result.delivery, result.receipt) == (True, "Course booked; lead converted to contact.")
    assert result.contact_id.startswith("003")
    assert result.contact_id != store.lead
    again = store.one(new_booking(store.lead, store.product, booking_number="HB-2"))
    assert (again.receipt, again.contact_id) == ("Course booked.", result.contact_id)


def test_resending_a_booking_updates_the_same_course(store: Store) -> None:
    first = store.one(new_booking(store.contact, store.product))
    again = store.one(new_booking(store.contact, store.product, rider_instructor_1="Alex Kim"))
    assert (again.receipt, again.asset_id) == ("Course updated.", first.asset_id)
    with session_scope(store.sessions) as session:
        asset = service.get_asset(session, first.asset_id)
        assert asset is not None
        assert asset.rider_instructor_1 == "Alex Kim"


def test_status_changes_follow_the_status_machine(store: Store) -> None:
    booked = store.one(new_booking(store.contact, store.product))
    cancelled = store.one({"asset_id": booked.asset_id, "course_status": "Cancelled"})
    assert cancelled.receipt == "Course status changed from booked to cancelled."
    refused = store.one(
        {"asset_id": booked.asset_id, "course_status": "completed - pass",
         "course_feedback": "pass A", "course_datetime": "2026-12-05 08:30:00"}
    )  # fmt: skip
    assert refused.delivery is False
    assert refused.receipt == "course_status: a cancelled course cannot become completed - pass."
    assert refused.asset_id == booked.asset_id


def test_unknown_records_fail_the_item_and_name_the_booking(store: Store) -> None:
    person, product, asset = store.book(
        new_booking("003000000000000AAA", store.product),
        new_booking(store.contact, "01t000000000000AAA"),
        {"asset_id": "02i000000000000AAA", "course_status": "cancelled"},
    )
    assert person.receipt == (
        "person_id: no contact or lead with id 003000000000000AAA (booking_number HB-102938)."
    )
    assert product.receipt == (
        "product_id: no product with id 01t000000000000AAA (booking_number HB-102938)."
    )
    assert asset.receipt == "asset_id: no course with id 02i000000000000AAA."
    assert not any(r.delivery for r in (person, product, asset))


def test_items_are_independent_and_a_bad_one_leaves_no_trace(store: Store) -> None:
    good, bad = store.book(
        new_booking(store.contact, store.product),
        new_booking(store.contact, store.product, booking_number="HB-BAD", opt_in="maybe"),
    )
    assert good.delivery is True
    assert bad.delivery is False
    assert bad.receipt.startswith("opt_in: must be true or false")
    with session_scope(store.sessions) as session:
        assert session.query(Asset).count() == 1


def test_an_item_that_is_not_an_object_is_refused_alone(store: Store) -> None:
    (result,) = store.book("not an item")
    assert result.delivery is False
    assert result.receipt == (
        "item: must be an object of fields (received text of 11 characters);"
        " send people_product[0][field]=... or people_product=<JSON array of objects>."
    )


def test_get_asset_reads_any_id_form_and_none_for_garbage(store: Store) -> None:
    booked = store.one(new_booking(store.contact, store.product))
    with session_scope(store.sessions) as session:
        asset = service.get_asset(session, booked.asset_id[:15])
        assert asset is not None
        assert asset.id == booked.asset_id
        assert service.get_asset(session, "not an id") is None
