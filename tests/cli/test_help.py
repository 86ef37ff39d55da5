"""Help in the usual flag forms, `-h` everywhere, and `keys revoke` by the listed prefix."""

from __future__ import annotations

import re

import pytest
from click.testing import Result
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from ridercrm.cli import app

runner = CliRunner()


def ridercrm(db_url: str, *args: str) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url})


COMMANDS = [
    [],
    ["serve"],
    ["db"],
    ["db", "upgrade"],
    ["keys"],
    ["keys", "create"],
    ["keys", "list"],
    ["keys", "revoke"],
    ["audit", "show"],
    ["audit", "purge"],
    ["import"],
    ["import", "contacts"],
    ["export"],
    ["demo"],
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "ridercrm")
def test_help_shows_flags_as_flags_and_accepts_dash_h(command: list[str]) -> None:
    long = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    short = runner.invoke(app, [*command, "-h"], env={"COLUMNS": "100"})
    assert long.exit_code == 0, long.output
    assert short.exit_code == 0, short.output
    assert short.output == long.output
    assert "Usage: " in long.output
    # A flag takes no value, so its help line shows none; no option shows a Python type.
    assert not re.search(r"--help\s+<", long.output), long.output
    assert "<bool>" not in long.output
    assert "list[" not in long.output


def test_demo_force_is_a_flag(db_url: str) -> None:
    result = ridercrm(db_url, "demo", "--force")
    assert result.exit_code == 0, result.output
    assert "--force" in ridercrm(db_url, "demo", "-h").output


def test_keys_revoke_takes_the_prefix_as_keys_list_shows_it(
    db_url: str, client: TestClient
) -> None:
    created = ridercrm(db_url, "keys", "create", "--name", "website", "--scope", "admin")
    assert created.exit_code == 0, created.output
    key = created.stdout.splitlines()[-1]
    listing = runner.invoke(
        app, ["keys", "list"], env={"RIDERCRM_DATABASE_URL": db_url, "COLUMNS": "200"}
    )
    shown = re.search(r"rcrm_\S*…", listing.stdout)
    assert shown, listing.stdout
    revoked = ridercrm(db_url, "keys", "revoke", shown.group(0))
    assert revoked.exit_code == 0, revoked.output
    assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 401


def test_keys_revoke_takes_the_prefix_with_three_dots(db_url: str, client: TestClient) -> None:
    created = ridercrm(db_url, "keys", "create", "--name", "website", "--scope", "admin")
    key = created.stdout.splitlines()[-1]
    assert ridercrm(db_url, "keys", "revoke", key[:12] + "...").exit_code == 0
    assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 401
