"""The README's shell examples run as written against `ridercrm serve --demo`.

Every ```sh block of README.md runs, in order, in one bash script in an empty
directory where a real server (a subprocess on a free port) serves the demo data,
with the virtualenv's bin on PATH, PORT (and HOOK_PORT, the webhook receiver's) set
and KEY an admin key. A block preceded by
``<!-- readme-test: skip (reason) -->`` is left out (starting a second server, a
PostgreSQL host). Any curl answer that is an error (status 400 or more, an item not
delivered, a record not modified) fails the test, and so does any command that fails;
the webhook example's event must reach its receiver through the server's deliverer.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.live import free_port

README = Path(__file__).resolve().parents[1] / "README.md"
_BLOCK = re.compile(r"(?P<before>[^\n]*)\n```sh\n(?P<body>.*?)\n```", re.S)
_SKIP = re.compile(r"<!-- readme-test: skip \((?P<reason>[^)]+)\) -->")

# Records what each example's curl answered (status and body), for the test to judge.
# Calls that choose their own output (-o, -w, -D) run as written and are not recorded.
CURL_RECORDER = r"""
curl() {
  local arg
  for arg in "$@"; do
    case "$arg" in -o|--output|-w|--write-out|-D|--dump-header) command curl "$@"; return;; esac
  done
  local body status
  body=$(mktemp)
  status=$(command curl -o "$body" -w '%{http_code}' "$@")
  cat "$body"; echo
  printf '%s %s\n' "$status" "$(base64 -w0 < "$body")" >> "$README_RESPONSES"
  rm -f "$body"
}
"""


def shell_blocks(text: str) -> list[tuple[str, str | None]]:
    """Each ```sh block of the README and, if it is left out, why."""
    blocks = []
    for found in _BLOCK.finditer("\n" + text):
        skip = _SKIP.search(found["before"])
        blocks.append((found["body"], skip["reason"] if skip else None))
    return blocks


def test_the_readme_parser_finds_the_examples_and_honours_skips() -> None:
    blocks = shell_blocks(README.read_text())
    assert len(blocks) >= 8
    skipped = [body for body, reason in blocks if reason]
    assert all("make run" in body or "serve" in body for body in skipped)
    assert len(skipped) <= 2


def error_answer(status: int, body: bytes) -> str | None:
    """Why an answer is an error, or None."""
    if status >= 400:
        return f"status {status}"
    try:
        value: Any = json.loads(body)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    entries = (
        [value, *value.get("details", [])] if isinstance(value.get("details"), list) else [value]
    )
    for entry in entries:
        if isinstance(entry, dict) and (
            entry.get("delivery") == "false" or entry.get("status") is False
        ):
            return f"not applied: {entry.get('receipt') or entry.get('errors')}"
    return None


@pytest.fixture
def served(tmp_path: Path) -> Any:
    """`ridercrm serve --demo` in an empty directory; yields its directory, environment and port."""
    bin_dir = Path(sys.executable).parent
    # As in a fresh clone after `make run`: the virtualenv is .venv beside the database.
    (tmp_path / ".venv").symlink_to(Path(sys.prefix))
    env = {name: value for name, value in os.environ.items() if not name.startswith("RIDERCRM_")}
    port = free_port()
    # HOOK_PORT: the webhook example's receiver, on a free port rather than 9000.
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        PORT=str(port),
        HOOK_PORT=str(free_port()),
    )
    log = (tmp_path / "serve.log").open("wb")
    server = subprocess.Popen(
        ["ridercrm", "serve", "--demo", "--port", str(port)],
        cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        "ridercrm serve did not start:\n" + (tmp_path / "serve.log").read_text()
                    )
                time.sleep(0.2)
        yield tmp_path, env
    finally:
        server.terminate()
        server.wait(timeout=20)
        log.close()


def test_readme_shell_examples_run_as_written(served: Any) -> None:
    directory, env = served
    created = subprocess.run(
        ["ridercrm", "keys", "create", "--name", "readme-test", "--scope", "admin"],
        cwd=directory, env=env, capture_output=True, text=True, check=True,
    )  # fmt: skip
    key = created.stdout.strip().splitlines()[-1]
    assert key.startswith("rcrm_"), created.stdout
    blocks = [body for body, reason in shell_blocks(README.read_text()) if reason is None]
    booking = [body for body in blocks if '"booking_number": "HB-102938"' in body]
    assert len(booking) == 1, "the README's booking example"
    # The booking example a second time: re-sending a booking returns the same course.
    script = "\n".join(["set -euo pipefail", CURL_RECORDER, *blocks, *booking])
    responses = directory / "responses"
    responses.touch()
    ran = subprocess.run(
        ["bash", "-c", script],
        cwd=directory,
        env={**env, "KEY": key, "README_RESPONSES": str(responses)},
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    output = f"stdout:\n{ran.stdout}\nstderr:\n{ran.stderr}"
    assert ran.returncode == 0, output
    answers = []
    for line in responses.read_text().splitlines():
        status, _, encoded = line.partition(" ")
        answers.append((int(status), base64.b64decode(encoded)))
    recorded = sum(
        1
        for body in [*blocks, *booking]
        for line in body.splitlines()
        if re.search(r"\bcurl\b", line) and not re.search(r" -[owD] ", line)
    )
    assert len(answers) == recorded, output
    errors = [
        (status, body, why) for status, body in answers if (why := error_answer(status, body))
    ]
    assert errors == [], output
    again = json.loads(answers[-1][1])["details"][0]
    assert (again["delivery"], again["receipt"]) == ("true", "Course updated."), again
    # The webhook example's receiver got the event from the server's own deliverer.
    hooks = [json.loads(line) for line in (directory / "hooks.jsonl").read_text().splitlines()]
    assert [(hook["verified"], hook["event"]["type"]) for hook in hooks] == [
        (True, "course.status_changed")
    ], hooks
    change = hooks[0]["event"]["data"]
    assert (change["course_id"], change["from"], change["to"]) == (
        "02iDEMO00000001YDA",
        "cancelled",
        "booked",
    ), hooks


@pytest.mark.parametrize(
    ("status", "body", "error"),
    [
        (200, b'{"details": [{"delivery": "true", "receipt": "Course booked."}]}', False),
        (200, b'{"delivery": "true", "receipt": "Contact found.", "ID": "003"}', False),
        (200, b'{"people": [], "next_before": null}', False),
        (400, b"Status update failed.", True),
        (401, b'{"detail": "missing API key"}', True),
        (200, b'{"details": [{"delivery": "false", "receipt": "person_id: ..."}]}', True),
        (200, b'{"delivery": "false", "receipt": "Match not found.", "ID": ""}', True),
        (200, b'{"status": false, "receipt": "One or more records could not be modified."}', True),
    ],
)
def test_error_answers_are_recognised(status: int, body: bytes, error: bool) -> None:
    assert (error_answer(status, body) is not None) is error
