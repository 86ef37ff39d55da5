"""Help in the usual flag forms, `-h` everywhere, and flags that take no value
(`keys revoke` by the listed prefix: tests/keys/test_cli.py)."""

from __future__ import annotations

import re

import pytest
from click.testing import Result
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
