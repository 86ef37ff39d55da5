"""The one declaration of a person's identity, and what is derived from it (issue 28):
the list is spelled once, the rest follows it (a course's fields:
tests/courses/test_fields.py)."""

from __future__ import annotations

import datetime as dt
from types import SimpleNamespace

from ridercrm.events.schemas import PersonState
from ridercrm.fields import PERSON_FIELDS
from ridercrm.matching.repository import CANDIDATE_COLUMNS
from ridercrm.matching.schemas import LeadsMatchQuery, PeopleMatchQuery
from ridercrm.people.identity import IDENTITY_COLUMNS, IDENTITY_FIELDS, Identity
from ridercrm.people.models import Person
from ridercrm.people.schemas import PersonCreate, PersonModify, PersonRead

ANN = {
    "first_name": "Ann",
    "last_name": "Nguyen",
    "date_of_birth": dt.date(1999, 4, 12),
    "email": " Ann.Nguyen@Example.com",
    "mobile_phone": "0412 345 678",
    "home_phone": "(03) 9123 4567",
    "drivers_license": "l1234567",
    "street": "12 Main St",
    "postcode": 3064,
    "city": "Craigieburn",
}


def test_the_identity_is_read_from_person_fields_the_matcher_reads() -> None:
    assert set(IDENTITY_COLUMNS) <= set(PERSON_FIELDS)
    assert set(IDENTITY_COLUMNS) <= set(Person.__table__.c.keys())
    assert CANDIDATE_COLUMNS[-len(IDENTITY_COLUMNS) :] == IDENTITY_COLUMNS
    assert [value for value, _, _ in IDENTITY_FIELDS] == [
        name for name in Identity.__dataclass_fields__
    ]


def test_every_person_shaped_schema_carries_the_identity() -> None:
    """Not derived from the declaration (their order is the OpenAPI document's), so held
    to it here: a new matching field fails this until each shape has it. A query and
    operation 2 have one phone, ``mobile_phone``."""
    for stored in (PersonCreate, PersonRead, PersonState):
        assert set(IDENTITY_COLUMNS) <= set(stored.model_fields), stored
    for asked in (PeopleMatchQuery, LeadsMatchQuery, PersonModify):
        assert set(IDENTITY_COLUMNS) - {"home_phone"} <= set(asked.model_fields), asked


def test_one_constructor_reads_a_mapping_an_object_or_keywords_alike() -> None:
    from_mapping = Identity.of(ANN)
    from_object = Identity.of(SimpleNamespace(**ANN))
    values = {k: v for k, v in ANN.items() if k not in ("mobile_phone", "home_phone")}
    from_keywords = Identity.of(**values, phones=(ANN["mobile_phone"], ANN["home_phone"]))
    from_values = Identity.of_values(tuple(ANN[name] for name in IDENTITY_COLUMNS))
    assert from_mapping == from_object == from_keywords == from_values
    assert from_mapping.email == "ann.nguyen@example.com"
    assert from_mapping.postcode == "3064"
    assert len(from_mapping.phones) == 2
    # A query has no home phone: what an object lacks is empty.
    query = Identity.of(SimpleNamespace(first_name="Ann"))
    assert query.phones == frozenset()
    assert query.email is None
