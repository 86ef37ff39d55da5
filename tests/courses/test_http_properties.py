"""Random sequences of status updates never break the status machine."""

from __future__ import annotations

import itertools

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.courses import rules
from ridercrm.courses.models import Asset
from ridercrm.courses.service import book_courses
from ridercrm.db import session_scope
from ridercrm.fields import COURSE_FEEDBACK, COURSE_STATUSES
from ridercrm.ids import RecordKind, new_id
from ridercrm.people.models import CONTACT
from ridercrm.people.schemas import PersonCreate
from ridercrm.people.service import create_person
from ridercrm.products.schemas import ProductCreate
from ridercrm.products.service import create_product
from tests.courses.helpers import new_booking

updates = st.lists(
    st.tuples(st.sampled_from(COURSE_STATUSES), st.sampled_from([None, "", *COURSE_FEEDBACK])),
    max_size=12,
)
counter = itertools.count()


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=st.sampled_from(COURSE_STATUSES), steps=updates)
def test_history_replays_to_the_stored_status(
    sessions: sessionmaker[Session], first: str, steps: list[tuple[str, str | None]]
) -> None:
    with session_scope(sessions, write=True) as session:
        person = create_person(
            session, kind=CONTACT, data=PersonCreate(first_name="P", last_name="Q")
        )
        product = create_product(
            session, data=ProductCreate(name="C", code=f"C-{next(counter)}", price="1.00")
        )
        feedback = {"completed - pass": "pass A", "completed - fail": "fail 1"}.get(first, "")
        item = new_booking(
            person.id, product.id, booking_number=new_id(RecordKind.ASSET),
            course_status=first, course_feedback=feedback,
        )  # fmt: skip
        [booked] = book_courses(session, items=[item], audit_id="a0A000000000000AAA")
        assert booked.delivery, booked.receipt
        asset_id = booked.asset_id

    for status, feedback_value in steps:
        with session_scope(sessions, write=True) as session:
            before = session.get(Asset, asset_id)
            assert before is not None
            current = before.course_status
            step = {"asset_id": asset_id, "course_status": status}
            if feedback_value is not None:
                step["course_feedback"] = feedback_value
            [result] = book_courses(session, items=[step], audit_id="a0A000000000000AAA")
            if rules.transition_error(current, status):
                assert not result.delivery
        with sessions() as session:
            asset = session.get(Asset, asset_id)
            assert asset is not None
            history = [(h.from_status, h.to_status) for h in asset.status_history]
            assert rules.replay(history) == asset.course_status
            assert rules.feedback_error(asset.course_status, asset.course_feedback) is None
