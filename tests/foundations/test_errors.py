"""One family of feature errors (issue 28): every feature's refusal is a DomainError,
carrying its kind, message and field; the web layer maps it once for the API."""

from __future__ import annotations

import pytest

from ridercrm.courses.daysheet import SheetError
from ridercrm.courses.service import ItemRejected
from ridercrm.duplicates.merge import MergeError
from ridercrm.errors import CONFLICT, NOT_FOUND, STATUS_OF_KIND, DomainError
from ridercrm.events.manage import EndpointProblem, NoSuchEndpoint
from ridercrm.keys.service import KeyProblem
from ridercrm.notifications.templates import TemplateProblem
from ridercrm.people.service import NotConvertible, UnresolvableId
from ridercrm.products.service import DuplicateCode
from ridercrm.reports.service import PeriodError
from ridercrm.sessions.seats import NoSeat
from ridercrm.sessions.service import SessionProblem
from ridercrm.staff.service import StaffProblem
from ridercrm.transfer.checks import ImportFailed
from ridercrm.transfer.columns import HeaderProblem
from ridercrm.web.runtime import api_error

FEATURE_ERRORS = (
    SheetError, ItemRejected, MergeError, EndpointProblem, NoSuchEndpoint, KeyProblem,
    TemplateProblem, NotConvertible, UnresolvableId, DuplicateCode, PeriodError, NoSeat,
    SessionProblem, StaffProblem, ImportFailed, HeaderProblem,
)  # fmt: skip


@pytest.mark.parametrize("error", FEATURE_ERRORS)
def test_every_feature_error_is_a_domain_error(error: type[DomainError]) -> None:
    assert issubclass(error, DomainError)
    assert error.kind in STATUS_OF_KIND


def test_the_api_answers_a_refusal_by_its_kind_and_says_what_its_feature_said() -> None:
    missing = api_error(NoSuchEndpoint("ep_1"))
    assert (missing.status, missing.reason, missing.errors) == (
        404, "no webhook endpoint with id ep_1", []
    )  # fmt: skip
    busy = api_error(SessionProblem(CONFLICT, "status: session s1 is cancelled"))
    assert (busy.status, busy.errors) == (409, ["status: session s1 is cancelled"])
    taken = api_error(DuplicateCode("LAP"))
    assert (taken.status, taken.reason, taken.errors) == (
        409, "code: LAP is already used by another product", []
    )  # fmt: skip
    gone = MergeError(NOT_FOUND, "no merge with id 7")
    assert (gone.kind, gone.message, gone.status) == (NOT_FOUND, "no merge with id 7", 404)
    assert DuplicateCode("LAP").field == "code"
