"""Sustained mixed load, short form: 10 s per database, no error allowed (bench/load_bench.py).

The figures in bench/README.md come from the long form; this only proves that the
match-heavy mix runs against `ridercrm serve --workers 2` on SQLite and PostgreSQL
without a single transport error, non-2xx answer or failed receipt.
"""

from __future__ import annotations

import shutil

import pytest
from testkit.bench import run_bench
from testkit.databases import postgres_url

pytestmark = pytest.mark.load


def test_mixed_load_runs_without_errors() -> None:
    if shutil.which("wrk") is None:
        pytest.skip("needs wrk (apt-get install -y wrk)")
    db = "both" if postgres_url() is not None else "sqlite"
    assert run_bench("load_bench.py", "--short", "--db", db) == 0
