"""Crash safety, short form: 2 SIGKILLs per database (bench/crash_safety.py).

Every answered request must be stored whole after the restart, an unanswered one whole
or not at all, and nothing may be half-written; at every kill, no stored course, status
change or person change may lack its audit record (it is committed with the work), and
every answered request's audit record must exist. The script prints what it checked and
every violation; its output is shown when a test fails.
"""

from __future__ import annotations

import pytest
from testkit.bench import run_bench
from testkit.databases import postgres_url

pytestmark = pytest.mark.crash


@pytest.mark.parametrize("db", ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgresql)])
def test_answered_requests_survive_sigkill_and_nothing_is_half_written(db: str) -> None:
    if db == "postgresql" and postgres_url() is None:
        pytest.skip("needs RIDERCRM_TEST_POSTGRES_URL")
    assert run_bench("crash_safety.py", "--db", db, "--short") == 0


def test_the_checks_report_damage_planted_in_the_database() -> None:
    """The checks have teeth: a lost status change, a lost field change, a lost audit
    record, a lost matching key and a course without history are all reported."""
    assert run_bench("crash_safety.py", "--db", "sqlite", "--kills", "1", "--tamper") == 0
