"""The one declaration of a course's fields (issue 28): spelled once in
``fields.COURSE_FIELDS``, the webhook payload and the table held to it."""

from __future__ import annotations

from ridercrm.courses.models import Asset
from ridercrm.courses.schemas import CourseItem
from ridercrm.events.schemas import CourseState
from ridercrm.fields import COURSE_FIELDS, COURSE_STATE_FIELDS


def test_a_course_field_is_spelled_once() -> None:
    assert COURSE_STATE_FIELDS[3:] == COURSE_FIELDS
    assert list(CourseState.model_fields) == ["id", "person_id", "product_id", *COURSE_STATE_FIELDS]
    assert set(COURSE_STATE_FIELDS) <= set(CourseItem.model_fields)
    assert set(COURSE_STATE_FIELDS) <= set(Asset.__table__.c.keys())
