"""The one declaration of a course's fields (issue 28): spelled once in the courses
feature (``courses.schemas.COURSE_FIELDS``); the item and the table are held to it, the
webhook payload (``CourseState``) and the events' state are derived from it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from types import SimpleNamespace

from ridercrm.courses.models import Asset
from ridercrm.courses.schemas import (
    COURSE_EVENT_MODELS,
    COURSE_FIELDS,
    COURSE_STATE_FIELDS,
    BookedCourse,
    CourseItem,
    CourseState,
    course_state,
)
from ridercrm.events.service import EVENT_TYPES
from ridercrm.web.routes.events import EVENT_MODELS


def test_a_course_field_is_spelled_once() -> None:
    assert COURSE_STATE_FIELDS[3:] == COURSE_FIELDS
    assert list(CourseState.model_fields) == ["id", "person_id", "product_id", *COURSE_STATE_FIELDS]
    assert set(COURSE_STATE_FIELDS) <= set(CourseItem.model_fields)
    assert set(COURSE_STATE_FIELDS) <= set(Asset.__table__.c.keys())
    read = list(BookedCourse.model_fields)
    assert read == ["id", "person_id", "product_id", *COURSE_STATE_FIELDS, *read[-3:]]


def test_the_events_course_state_is_the_documented_one() -> None:
    values = {name: None for name in COURSE_FIELDS}
    values.update(course_price=Decimal("249.5"), course_datetime="2026-12-05 08:30:00")
    asset = SimpleNamespace(
        id="02i5g00000LmNoPEAW",
        person_id="0035g00000AbCdEEAU",
        product_id="01t5g00000PqRsTEAV",
        booking_number="HB-1",
        course_status="booked",
        course_feedback=None,
        created_at=dt.datetime(2026, 1, 1, tzinfo=dt.UTC),
        **values,
    )
    state = course_state(asset)
    assert list(state) == list(CourseState.model_fields)
    assert CourseState.model_validate(state).model_dump() == state
    assert state["course_price"] == "249.50"


def test_every_event_type_is_documented_once_in_order() -> None:
    assert list(EVENT_MODELS) == list(EVENT_TYPES)
    for name, model in COURSE_EVENT_MODELS.items():
        assert EVENT_MODELS[name] is model
