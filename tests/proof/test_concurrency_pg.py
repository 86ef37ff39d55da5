"""Concurrency on PostgreSQL with 3 workers, short form (bench/concurrency_pg.py).

16 clients book, update, modify and match the same 6 people and 8 courses at once:
every request answered, one course per booking number, every status change recorded
once, no person field group mixed from two requests, person_keys in step, and no
deadlock left unresolved.
"""

from __future__ import annotations

import pytest
from testkit.bench import run_bench
from testkit.databases import postgres_url

pytestmark = [pytest.mark.concurrency, pytest.mark.postgresql]


def test_many_clients_on_the_same_records_lose_nothing() -> None:
    if postgres_url() is None:
        pytest.skip("needs RIDERCRM_TEST_POSTGRES_URL")
    assert run_bench("concurrency_pg.py", "--short") == 0
