"""How many processes check a large file's rows: two on a machine with a CPU to spare,
none when the load average says every CPU is busy or the file is small."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ridercrm.transfer import checks


@pytest.fixture
def large_file(tmp_path: Path) -> Path:
    path = tmp_path / "large.csv"
    with path.open("wb") as handle:
        handle.truncate(checks.PARALLEL_MIN_BYTES)  # sparse: only its size matters
    return path


@pytest.mark.skipif(sys.platform != "linux", reason="workers are forked on Linux only")
@pytest.mark.parametrize(
    ("cpus", "load", "workers"),
    [
        (2, 0.2, checks.WORKERS),  # a quiet machine
        (2, 1.1, checks.WORKERS),  # one CPU busy (a benchmark's previous run): one to spare
        (2, 2.0, 0),  # every CPU busy
        (2, 5.5, 0),
        (8, 6.5, checks.WORKERS),
        (1, 0.0, 0),  # nothing to run them on
    ],
)
def test_workers_only_with_a_cpu_to_spare(
    large_file: Path, monkeypatch: pytest.MonkeyPatch, cpus: int, load: float, workers: int
) -> None:
    monkeypatch.setattr(checks.os, "cpu_count", lambda: cpus)
    monkeypatch.setattr(checks.os, "getloadavg", lambda: (load, load, load))
    assert checks.default_workers(large_file) == workers


def test_a_small_file_is_checked_in_process(tmp_path: Path) -> None:
    small = tmp_path / "small.csv"
    small.write_text("first_name,last_name\nAnn,Lee\n")
    assert checks.default_workers(small) == 0
    assert checks.default_workers(tmp_path / "missing.csv") == 0
