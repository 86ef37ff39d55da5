"""`ridercrm --help` starts without the features, and importing the code does no work.

Each command is imported when it runs (ridercrm/cli/lazy.py), so the listing imports
typer and rich only; asserted on the modules a fresh process has loaded, not on a time
(docs/decisions.md, "The CLI starts without the features").
"""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import typer
from typer.main import get_command

from ridercrm.cli import COMMANDS, app

HEAVY = (
    "sqlalchemy",
    "pydantic",
    "pydantic_settings",
    "fastapi",
    "starlette",
    "alembic",
    "argon2",
    "httpx",
    "jinja2",
    "nicknames",
)
RIDERCRM_ON_HELP = {"ridercrm", "ridercrm.cli", "ridercrm.cli.lazy"}


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_help_imports_no_database_web_or_feature_code() -> None:
    out = _run(
        "import json, sys, contextlib, io\n"
        "sys.argv = ['ridercrm', '--help']\n"
        "from ridercrm.cli import main\n"
        "shown = io.StringIO()\n"
        "with contextlib.redirect_stdout(shown), contextlib.suppress(SystemExit):\n"
        "    main()\n"
        "print(json.dumps({'help': shown.getvalue(), 'modules': sorted(sys.modules)}))\n"
    )
    found = json.loads(out)
    assert "Usage: " in found["help"]
    assert "duplicates" in found["help"]
    loaded = set(found["modules"])
    assert [name for name in HEAVY if name in loaded] == []
    assert {name for name in loaded if name.startswith("ridercrm")} == RIDERCRM_ON_HELP


def test_each_listed_help_is_the_commands_own() -> None:
    group = get_command(app)
    ctx = typer.Context(group)
    for lazy in COMMANDS:
        command = group.get_command(ctx, lazy.name)
        assert command is not None
        assert command.help is not None
        assert inspect.cleandoc(command.help).split("\n\n")[0] == lazy.help, lazy.name
    assert list(group.list_commands(ctx)) == [lazy.name for lazy in COMMANDS]


def test_importing_the_code_hashes_no_password_and_builds_no_name_table() -> None:
    out = _run(
        "import importlib, json, pkgutil\n"
        "import argon2, nicknames\n"
        "calls = {'hash': 0, 'namer': 0}\n"
        "hash_, init = argon2.PasswordHasher.hash, nicknames.NickNamer.__init__\n"
        "def counted_hash(self, *a, **k):\n"
        "    calls['hash'] += 1\n"
        "    return hash_(self, *a, **k)\n"
        "def counted_init(self, *a, **k):\n"
        "    calls['namer'] += 1\n"
        "    return init(self, *a, **k)\n"
        "argon2.PasswordHasher.hash = counted_hash\n"
        "nicknames.NickNamer.__init__ = counted_init\n"
        "import ridercrm\n"
        "names = [m.name for m in pkgutil.walk_packages(ridercrm.__path__, 'ridercrm.')]\n"
        "names = [n for n in names if not n.endswith('__main__') and '.migrations' not in n]\n"
        "for name in names:\n"
        "    importlib.import_module(name)\n"
        "print(json.dumps({'modules': len(names), **calls}))\n"
    )
    found = json.loads(out)
    assert found["modules"] > 100
    assert (found["hash"], found["namer"]) == (0, 0)
