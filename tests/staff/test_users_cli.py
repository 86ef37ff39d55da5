"""`ridercrm users create|list|disable|enable|reset-password` and the first start's console admin."""

from __future__ import annotations

import os
import re
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

import httpx
from click.testing import Result
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ridercrm.cli import app
from tests.console.conftest import sign_in
from tests.live import free_port
from tests.security.test_serve import RIDERCRM, environment, stop, wait_healthy

runner = CliRunner()


def ridercrm(db_url: str, *args: str, given: str | None = None) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url}, input=given)


def test_create_prints_the_password_alone_on_the_last_line(
    db_url: str, make_client: Callable[..., TestClient]
) -> None:
    made = ridercrm(db_url, "users", "create", "--name", "desk", "--role", "staff")
    assert made.exit_code == 0, made.output
    password = made.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"[A-Za-z0-9_-]{20}", password)
    client = make_client()
    client.follow_redirects = False
    assert sign_in(client, "desk", password).status_code == 303
    listed = ridercrm(db_url, "users", "list")
    assert "desk" in listed.stdout
    assert "staff" in listed.stdout
    assert password not in listed.stdout


def test_a_password_from_the_prompt(db_url: str, make_client: Callable[..., TestClient]) -> None:
    chosen = "a long enough passphrase"
    made = ridercrm(
        db_url, "users", "create", "--name", "ida", "--role", "viewer", "--password-prompt",
        given=f"{chosen}\n{chosen}\n",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert chosen not in made.stdout
    client = make_client()
    client.follow_redirects = False
    assert sign_in(client, "ida", chosen).status_code == 303
    short = ridercrm(
        db_url, "users", "create", "--name", "jo", "--role", "viewer", "--password-prompt",
        given="short\nshort\n",
    )  # fmt: skip
    assert short.exit_code == 2
    assert "at least 12 characters" in short.output
    spaces = ridercrm(
        db_url, "users", "create", "--name", "jo", "--role", "viewer", "--password-prompt",
        given=" " * 12 + "\n" + " " * 12 + "\n",
    )  # fmt: skip
    assert spaces.exit_code == 2
    assert "a password is not only spaces" in spaces.output


def test_bad_roles_names_and_unknown_users_are_one_error_line(db_url: str) -> None:
    assert ridercrm(db_url, "users", "create", "--name", "x", "--role", "boss").exit_code == 2
    assert ridercrm(db_url, "users", "create", "--name", "a/b", "--role", "viewer").exit_code == 2
    assert ridercrm(db_url, "users", "disable", "nobody").exit_code == 2
    assert ridercrm(db_url, "users", "reset-password", "nobody").exit_code == 2
    ridercrm(db_url, "users", "create", "--name", "twice", "--role", "viewer")
    again = ridercrm(db_url, "users", "create", "--name", "twice", "--role", "viewer")
    assert again.exit_code == 2
    assert "exists already" in again.output
    # A name differing only in case (or width) would pass for the other one.
    for other in ("TWICE", "Twice", "\uff34wice"):
        cased = ridercrm(db_url, "users", "create", "--name", other, "--role", "admin")
        assert cased.exit_code == 2, (other, cased.output)
        assert "a staff user named 'twice' exists already" in cased.output


def test_disable_and_reset_end_sessions(
    db_url: str, make_client: Callable[..., TestClient]
) -> None:
    password = ridercrm(
        db_url, "users", "create", "--name", "kim", "--role", "staff"
    ).stdout.split()[-1]
    client = make_client()
    client.follow_redirects = False
    assert sign_in(client, "kim", password).status_code == 303
    reset = ridercrm(db_url, "users", "reset-password", "kim")
    assert reset.exit_code == 0
    new_password = reset.stdout.strip().splitlines()[-1]
    assert client.get("/console/people").status_code == 303
    assert sign_in(client, "kim", password).status_code == 401
    assert sign_in(client, "kim", new_password).status_code == 303
    assert ridercrm(db_url, "users", "disable", "kim").exit_code == 0
    assert client.get("/console/people").status_code == 303
    assert sign_in(client, "kim", new_password).status_code == 401
    assert "disabled" in ridercrm(db_url, "users", "list").stdout
    assert ridercrm(db_url, "users", "enable", "kim").exit_code == 0
    assert sign_in(client, "kim", new_password).status_code == 303


def test_the_first_start_writes_the_console_sign_in_to_an_owner_only_file(tmp_path: Path) -> None:
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
            sign_in_file = tmp_path / "ridercrm-console-admin.txt"
            assert stat.S_IMODE(sign_in_file.stat().st_mode) == 0o600
            lines = dict(line.split(": ", 1) for line in sign_in_file.read_text().splitlines())
            assert lines["url"] == f"http://127.0.0.1:{port}/console/login"
            assert lines["username"] == "admin"
            with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
                page = client.get("/console/login")
                token = re.search(r'name="csrf" value="([^"]+)"', page.text)
                assert token
                answer = client.post(
                    "/console/login",
                    data={
                        "csrf": token.group(1),
                        "username": "admin",
                        "password": lines["password"],
                    },
                )
                assert answer.status_code == 303
                assert client.get("/console/admin/users").status_code == 200
        finally:
            stop(process)
    stderr = (tmp_path / "err").read_text()
    assert lines["password"] not in stderr
    assert lines["password"] not in (tmp_path / "out").read_text()
    assert str(sign_in_file) in stderr
    os.remove(sign_in_file)
