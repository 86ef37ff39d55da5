import itertools

import pytest

from ridercrm.courses import rules
from ridercrm.fields import COURSE_FEEDBACK, COURSE_STATUSES

ALLOWED = {
    (None, "booked"), (None, "cancelled"), (None, "completed - pass"), (None, "completed - fail"),
    ("booked", "booked"), ("booked", "cancelled"), ("booked", "completed - pass"), ("booked", "completed - fail"),
    ("cancelled", "cancelled"), ("cancelled", "booked"),
    ("completed - pass", "completed - pass"), ("completed - pass", "completed - fail"),
    ("completed - fail", "completed - fail"), ("completed - fail", "completed - pass"),
}  # fmt: skip


@pytest.mark.parametrize(
    ("current", "target"), list(itertools.product([None, *COURSE_STATUSES], COURSE_STATUSES))
)
def test_every_transition_is_allowed_or_refused_by_name(current: str | None, target: str) -> None:
    error = rules.transition_error(current, target)
    if (current, target) in ALLOWED:
        assert error is None
    else:
        assert error == f"course_status: a {current} course cannot become {target}"


@pytest.mark.parametrize(
    ("status", "feedback"), list(itertools.product(COURSE_STATUSES, [None, *COURSE_FEEDBACK]))
)
def test_feedback_rule(status: str, feedback: str | None) -> None:
    error = rules.feedback_error(status, feedback)
    if status == "completed - pass":
        ok = feedback is not None and feedback.startswith("pass")
    elif status == "completed - fail":
        ok = feedback is not None and feedback.startswith("fail")
    else:
        ok = feedback is None
    assert (error is None) == ok
    if error:
        assert error.startswith("course_feedback: ")


def test_replay_follows_a_valid_history_and_refuses_a_broken_one() -> None:
    assert (
        rules.replay([(None, "booked"), ("booked", "cancelled"), ("cancelled", "booked")])
        == "booked"
    )
    with pytest.raises(ValueError, match="forbidden"):
        rules.replay([(None, "cancelled"), ("cancelled", "completed - pass")])
    with pytest.raises(ValueError, match="jumps"):
        rules.replay([(None, "booked"), ("cancelled", "booked")])
