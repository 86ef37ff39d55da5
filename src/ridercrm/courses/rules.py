"""The course status machine and the feedback rule (docs/decisions.md, "Operation 1 (rider courses)"). Plain Python."""

from __future__ import annotations

from collections.abc import Iterable

from ridercrm.fields import COURSE_FEEDBACK

BOOKED = "booked"
CANCELLED = "cancelled"
PASSED = "completed - pass"
FAILED = "completed - fail"

# Staying in the same status is always allowed (other fields change).
TRANSITIONS: dict[str | None, frozenset[str]] = {
    None: frozenset({BOOKED, CANCELLED, PASSED, FAILED}),
    BOOKED: frozenset({BOOKED, CANCELLED, PASSED, FAILED}),
    CANCELLED: frozenset({CANCELLED, BOOKED}),
    PASSED: frozenset({PASSED, FAILED}),
    FAILED: frozenset({FAILED, PASSED}),
}

PASS_FEEDBACK = tuple(value for value in COURSE_FEEDBACK if value.startswith("pass"))
FAIL_FEEDBACK = tuple(value for value in COURSE_FEEDBACK if value.startswith("fail"))


def transition_error(current: str | None, target: str) -> str | None:
    """Why ``current`` may not become ``target``, or None when it may."""
    if target in TRANSITIONS[current]:
        return None
    return f"course_status: a {current} course cannot become {target}"


def feedback_error(status: str, feedback: str | None) -> str | None:
    """Why ``feedback`` does not fit ``status``, or None when it does."""
    if status == PASSED and feedback not in PASS_FEEDBACK:
        return f"course_feedback: completed - pass needs one of {', '.join(PASS_FEEDBACK)}"
    if status == FAILED and feedback not in FAIL_FEEDBACK:
        return f"course_feedback: completed - fail needs one of {', '.join(FAIL_FEEDBACK)}"
    if status in (BOOKED, CANCELLED) and feedback:
        return f"course_feedback: a {status} course takes no feedback"
    return None


def replay(changes: Iterable[tuple[str | None, str]]) -> str | None:
    """Follow a status history from the start; raise ValueError if it breaks the machine."""
    status: str | None = None
    for before, after in changes:
        if before != status:
            raise ValueError(f"history jumps from {status} to a change starting at {before}")
        if transition_error(status, after):
            raise ValueError(f"history holds a forbidden change {before} -> {after}")
        status = after
    return status
