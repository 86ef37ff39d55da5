"""A newcomer's `make test`: the slow tests are skipped (make test-all runs them) and
everything skipped is summed up on one line, not one line a test."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

CHECKOUT = Path(__file__).resolve().parent.parent


def pytest_run(*args: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "RIDERCRM_TEST_POSTGRES_URL"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-p", "no:cacheprovider", *args],
        cwd=CHECKOUT, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def test_make_test_skips_the_slow_tests_and_says_so_on_one_line() -> None:
    output = pytest_run(
        "-q",
        "tests/security/test_serve_limits.py",
        "tests/keys/test_http.py::test_wrong_key_is_401",
    )
    assert "SKIPPED [" not in output
    summary = [line for line in output.splitlines() if line.startswith("skipped: ")]
    assert len(summary) == 1, output
    assert "slow: make test-all runs it" in summary[0]
    assert "PostgreSQL: set RIDERCRM_TEST_POSTGRES_URL" in summary[0]
    assert " passed" in output


def test_the_slow_tests_are_marked_by_path_for_make_test_all() -> None:
    output = pytest_run(
        "-q",
        "--run-slow",
        "--collect-only",
        "-m",
        "slow",
        "tests/security",
        "tests/foundations/test_ids.py",
    )
    listed = [line for line in output.splitlines() if "::" in line]
    assert listed
    assert all(line.startswith("tests/security/test_serve_limits.py::") for line in listed), listed
