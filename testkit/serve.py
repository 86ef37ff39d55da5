"""One `ridercrm serve` (one worker) as a child process on 127.0.0.1, for the scripts that
need nothing more: bench/operations_bench.py and the matching harness (bench/matching).

Start it, wait until /healthz answers (a bounded wait; the tail of the server's log if it
exits first), stop it with SIGINT (SIGKILL after a bounded wait) on the way out.

Only the standard library and httpx: importing this module imports no ridercrm code.
The crash, concurrency and load scripts use bench/harness.py's ``Server`` instead (its own
process group, several workers, SIGKILL, a /readyz wait).
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0


class BenchError(Exception):
    """Something failed; the benchmark's figures would be meaningless."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ridercrm_command() -> str:
    script = Path(sys.executable).with_name("ridercrm")
    if not script.exists():
        raise BenchError(f"no ridercrm command next to {sys.executable}; install the project")
    return str(script)


def run_cli(
    args: list[str], env: dict[str, str], *, timeout: float, command: str | None = None
) -> str:
    """Run ``ridercrm ARGS`` (``command``: another build's ridercrm); its standard output,
    or BenchError with the output's tail."""
    done = subprocess.run(
        [command or ridercrm_command(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise BenchError(
            f"ridercrm {' '.join(args)} failed (exit {done.returncode}):\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
    return done.stdout


@contextmanager
def running_server(
    env: dict[str, str],
    port: int,
    log_path: Path,
    command: str | None = None,
    workers: int = 1,
) -> Iterator[tuple[str, int]]:
    """Start `ridercrm serve` (``command``: another build's ridercrm; ``workers`` worker
    processes) on ``port`` with exactly ``env``, its output in ``log_path``; wait for
    /healthz, yield its URL and pid, stop it at the end."""
    base_url = f"http://127.0.0.1:{port}"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                command or ridercrm_command(),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                *(["--workers", str(workers)] if workers > 1 else []),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # A first start writes its credentials files in its working directory: the
            # log's, never the directory the caller happens to run in (the checkout).
            cwd=log_path.parent,
        )
        try:
            _wait_until_healthy(process, base_url, log_path)
            yield base_url, process.pid
        finally:
            _stop(process)


def _wait_until_healthy(process: subprocess.Popen[bytes], base_url: str, log_path: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    with httpx.Client(trust_env=False, timeout=2.0) as client:
        while time.monotonic() < deadline:
            if process.poll() is not None:
                raise BenchError(f"the server exited at start:\n{tail(log_path)}")
            try:
                if client.get(f"{base_url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
    raise BenchError(f"the server did not answer /healthz in {START_TIMEOUT_S:g} s")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=STOP_TIMEOUT_S)


def tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of the server's log."""
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no server log)"
