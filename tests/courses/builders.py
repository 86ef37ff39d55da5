"""Stored people, products and courses for service tests, made through the services."""

from __future__ import annotations

import itertools
from decimal import Decimal
from typing import Any

from sqlalchemy.orm import Session
from testkit.factories import new_booking, person_body

from ridercrm.courses import service as courses
from ridercrm.ids import RecordKind, new_id
from ridercrm.people import service as people
from ridercrm.people.models import CONTACT
from ridercrm.people.schemas import PersonCreate
from ridercrm.products import service as products
from ridercrm.products.schemas import ProductCreate

_numbers = itertools.count(1)


def product(session: Session, code: str = "LAP-SOM", name: str = "Learner Approved") -> str:
    data = ProductCreate(name=name, code=code, price=Decimal("249.00"))
    return products.create_product(session, data=data).id


def person(session: Session, **overrides: Any) -> str:
    data = PersonCreate.model_validate(person_body(**overrides))
    return people.create_person(session, kind=CONTACT, data=data).id


def course(session: Session, person_id: str, product_id: str, **overrides: Any) -> str:
    """Book a course through operation 1's service; return its id."""
    item = new_booking(person_id, product_id, booking_number=f"T-{next(_numbers)}")
    item.update(overrides)
    results = courses.book_courses(session, items=[item], audit_id=new_id(RecordKind.AUDIT))
    assert results[0].delivery, results[0].receipt
    return results[0].asset_id
