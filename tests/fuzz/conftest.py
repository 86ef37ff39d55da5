"""Collect the fuzz tests only when they are selected (``-m fuzz``), and sum them up.

Importing tests/fuzz/test_schemathesis.py builds an app and loads its OpenAPI
document, which configures logging; the default run (``-m 'not fuzz'``) should not.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    expression = config.option.markexpr or ""
    selected = "fuzz" in expression and "not fuzz" not in expression
    if collection_path.name.startswith("test_") and not selected:
        return True
    return None


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """How many calls the fuzzing made, per operation and per status, and how long it took."""
    calls: Counter[str] = Counter()
    statuses: Counter[int] = Counter()
    seconds = 0.0
    for outcome in ("passed", "failed"):
        for report in terminalreporter.stats.get(outcome, []):
            if getattr(report, "when", None) != "call":
                continue
            counted = [value for name, value in report.user_properties if name == "fuzz"]
            if counted:
                seconds += report.duration
            for label, status in counted:
                calls[label] += 1
                statuses[status] += 1
    if not calls:
        return
    terminalreporter.write_sep("-", "schema fuzzing")
    terminalreporter.write_line(
        f"{sum(calls.values())} calls over {len(calls)} operations in {seconds:.0f} s of test"
        f" time; statuses: {', '.join(f'{s}: {n}' for s, n in sorted(statuses.items()))}"
    )
    for label, count in sorted(calls.items()):
        terminalreporter.write_line(f"{count:7d}  {label}")
