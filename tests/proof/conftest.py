"""The slow proofs (crash safety, concurrency, load): run only when selected by marker.

``pytest -m crash``, ``-m concurrency`` or ``-m load`` selects them (``.ci/run`` runs
all three in their short forms); any other run, the default one included, reports
them as skipped with the command that runs them.
"""

from __future__ import annotations

import pytest

SLOW = {
    "crash": "SIGKILL the server mid-load and check what is stored (bench/crash_safety.py)",
    "concurrency": "many clients on the same records, PostgreSQL, 3 workers (bench/concurrency_pg.py)",
    "load": "sustained mixed load, no errors allowed (bench/load_bench.py --short)",
}


def pytest_configure(config: pytest.Config) -> None:
    for name, text in SLOW.items():
        config.addinivalue_line("markers", f"{name}: {text}; slow, run only with -m {name}")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    selected = config.getoption("markexpr") or ""
    for item in items:
        for name in SLOW:
            if item.get_closest_marker(name) is not None and name not in selected:
                item.add_marker(pytest.mark.skip(reason=f"slow: run with -m {name} (.ci/run does)"))
