"""`ridercrm serve` as an operator starts it: the port, and the first admin key."""

from __future__ import annotations

import os
import pty
import select
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from testkit.serve import running_server

from tests.live import free_port

RIDERCRM = str(Path(sys.executable).with_name("ridercrm"))


def environment(directory: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RIDERCRM_")}
    return {**clean, "RIDERCRM_DATABASE_URL": f"sqlite:///{directory / 'crm.db'}"}


def wait_healthy(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        assert process.poll() is None, "serve exited"
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError("serve did not start")


def stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=20)


def test_a_port_in_use_is_one_error_line_and_never_serving(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run(
            [RIDERCRM, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment(tmp_path),
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert done.returncode != 0
    assert "serving" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: cannot listen on 127.0.0.1:")
    assert "in use" in lines[0]


def test_the_first_admin_key_goes_to_an_owner_only_file_when_no_terminal(tmp_path: Path) -> None:
    port = free_port()
    with (tmp_path / "out").open("w+b") as out, (tmp_path / "err").open("w+b") as err:
        process = subprocess.Popen(
            [RIDERCRM, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment(tmp_path),
            stdout=out,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        try:
            wait_healthy(port, process)
        finally:
            stop(process)
    stdout = (tmp_path / "out").read_text()
    stderr = (tmp_path / "err").read_text()
    key_file = tmp_path / "ridercrm-admin-key.txt"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key = key_file.read_text().strip()
    assert key.startswith("rcrm_")
    assert key not in stdout
    assert key not in stderr
    assert str(key_file) in stderr
    assert f"serving on http://127.0.0.1:{port}" in stdout
    # The key in the file is the admin key: a second start creates none and it works.
    process = subprocess.Popen(
        [RIDERCRM, "serve", "--port", str(port)],
        cwd=tmp_path,
        env=environment(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_healthy(port, process)
        products = httpx.get(
            f"http://127.0.0.1:{port}/admin/audit", headers={"X-API-Key": key}, timeout=10
        )
        assert products.status_code == 200
    finally:
        stop(process)


def test_the_first_admin_key_is_shown_on_a_terminal(tmp_path: Path) -> None:
    """As `make run` in a terminal: the key on the terminal, not on standard output."""
    port = free_port()
    controller, terminal = pty.openpty()
    process = subprocess.Popen(
        [RIDERCRM, "serve", "--port", str(port)],
        cwd=tmp_path,
        env=environment(tmp_path),
        stdout=subprocess.PIPE,
        stderr=terminal,
        stdin=subprocess.DEVNULL,
    )
    os.close(terminal)
    try:
        wait_healthy(port, process)
        shown = b""
        while select.select([controller], [], [], 1)[0]:
            try:
                shown += os.read(controller, 65536)
            except OSError:
                break
    finally:
        stop(process)
        os.close(controller)
    assert process.stdout is not None
    stdout = process.stdout.read().decode()
    text = shown.decode()
    keys = [line.strip() for line in text.splitlines() if line.strip().startswith("rcrm_")]
    assert len(keys) == 1, text
    assert keys[0] not in stdout
    assert not (tmp_path / "ridercrm-admin-key.txt").exists()


def test_a_first_start_never_overwrites_a_credentials_file(tmp_path: Path) -> None:
    """A credentials file left by an earlier first start (not collected yet) is kept; the
    new secret goes to a new file, and the output names it."""
    earlier_key = tmp_path / "ridercrm-admin-key.txt"
    earlier_sign_in = tmp_path / "ridercrm-console-admin.txt"
    earlier_key.write_text("rcrm_earlier\n")
    earlier_sign_in.write_text("password: earlier\n")
    port = free_port()
    with (tmp_path / "err").open("w+b") as err:
        process = subprocess.Popen(
            [RIDERCRM, "serve", "--port", str(port)],
            cwd=tmp_path,
            env=environment(tmp_path),
            stdout=subprocess.DEVNULL,
            stderr=err,
            stdin=subprocess.DEVNULL,
        )
        try:
            wait_healthy(port, process)
        finally:
            stop(process)
    stderr = (tmp_path / "err").read_text()
    assert earlier_key.read_text() == "rcrm_earlier\n"
    assert earlier_sign_in.read_text() == "password: earlier\n"
    new_key = tmp_path / "ridercrm-admin-key-2.txt"
    new_sign_in = tmp_path / "ridercrm-console-admin-2.txt"
    assert new_key.read_text().startswith("rcrm_")
    assert "password: " in new_sign_in.read_text()
    assert stat.S_IMODE(new_sign_in.stat().st_mode) == 0o600
    assert str(new_key) in stderr
    assert str(new_sign_in) in stderr


def test_the_testkit_server_writes_nothing_where_its_caller_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """testkit's `serve` (benchmarks, the matching harness) starts in its log's directory:
    run from a checkout, its first start's credentials never land in the checkout."""
    checkout = tmp_path / "checkout"
    checkout.mkdir()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.chdir(checkout)
    with running_server(environment(scratch), free_port(), scratch / "server.log"):
        pass
    assert list(checkout.iterdir()) == []
    assert (scratch / "ridercrm-console-admin.txt").exists()
