"""Run a benchmark script of bench/ as its own process, as an operator would.

The proofs in tests/proof run the benchmarks' short forms this way rather than importing
them, so tests/ and bench/ stay apart; the script's output goes to the test's captured
output and is shown when the test fails.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run_bench(script: str, *args: str) -> int:
    """Run ``bench/<script>`` with ``args`` from the repository root; return its exit code."""
    command = [sys.executable, str(ROOT / "bench" / script), *args]
    return subprocess.run(command, cwd=ROOT, check=False).returncode
