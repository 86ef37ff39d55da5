"""The `ridercrm keys` commands, on the real database (the audit and db commands: tests/audit/test_cli.py, tests/db/test_cli.py)."""

from __future__ import annotations

import datetime as dt
import json
import re

import pytest
from click.testing import Result
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import person_body
from typer.testing import CliRunner

from ridercrm.cli import app
from ridercrm.db import session_scope
from ridercrm.keys.models import ApiKey

runner = CliRunner()


def ridercrm(db_url: str, *args: str) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url})


def create_key(db_url: str, name: str, *scopes: str) -> str:
    arguments = ["keys", "create", "--name", name]
    for scope in scopes:
        arguments += ["--scope", scope]
    result = ridercrm(db_url, *arguments)
    assert result.exit_code == 0, result.output
    return result.stdout.splitlines()[-1]


def key_count(sessions: sessionmaker[Session]) -> int:
    with session_scope(sessions) as session:
        return int(session.scalar(select(func.count()).select_from(ApiKey)) or 0)


# --- keys -----------------------------------------------------------------------------


def test_keys_create_prints_the_key_alone_on_the_last_line(db_url: str, client: TestClient) -> None:
    result = ridercrm(
        db_url,
        "keys",
        "create",
        "--name",
        "booking site",
        "--scope",
        "products",
        "--scope",
        "match",
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    key = lines[-1]
    assert key.startswith("rcrm_")
    assert key == key.strip()
    assert len(key) >= 40
    assert " " not in key
    assert "booking site" in result.stdout
    assert "match, products" in result.stdout
    # It authenticates, with exactly its scopes.
    assert (
        client.get("/crm/products", headers={"Authorization": f"Bearer {key}"}).status_code == 200
    )
    assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 403


def test_keys_create_admin_key_can_do_everything(db_url: str, client: TestClient) -> None:
    key = create_key(db_url, "operator", "admin")
    response = client.post("/admin/contacts", json=person_body(), headers={"X-API-Key": key})
    assert response.status_code == 201


@pytest.mark.parametrize(
    "arguments",
    [
        ["--name", "x", "--scope", "everything"],
        ["--name", "x", "--scope", "match", "--scope", "root"],
        ["--name", "x", "--scope", "ADMIN"],
        ["--name", "x"],
        ["--name", "   ", "--scope", "match"],
        ["--name", "x" * 121, "--scope", "match"],
        ["--scope", "match"],
        ["--name", "k\x1b[31mred", "--scope", "match"],
        ["--name", "line1\nline2", "--scope", "match"],
        ["--name", "tab\u202eevil", "--scope", "match"],
    ],
    ids=[
        "unknown", "one-unknown", "wrong-case", "no-scope", "blank-name", "long-name", "no-name",
        "escape", "line-break", "direction-override",
    ],
)  # fmt: skip
def test_keys_create_refuses_bad_requests_and_makes_no_key(
    db_url: str, sessions: sessionmaker[Session], arguments: list[str]
) -> None:
    result = ridercrm(db_url, "keys", "create", *arguments)
    assert result.exit_code != 0
    assert isinstance(result.exception, SystemExit), result.exception
    assert "rcrm_" not in result.output
    assert key_count(sessions) == 0
    if any(char in "".join(arguments) for char in "\x1b\n\u202e"):
        assert "must not contain control characters" in result.output


def test_keys_create_names_the_scopes_when_one_is_unknown(db_url: str) -> None:
    result = ridercrm(db_url, "keys", "create", "--name", "x", "--scope", "everything")
    assert result.exit_code == 2
    assert "unknown scope everything" in result.stderr
    for scope in ("courses", "people", "match", "products", "admin"):
        assert scope in result.stderr


def test_keys_list_shows_keys_without_their_secrets(db_url: str) -> None:
    first = create_key(db_url, "website", "courses", "match")
    second = create_key(db_url, "staff", "admin")
    result = ridercrm(db_url, "keys", "list")
    assert result.exit_code == 0, result.output
    for name, key in (("website", first), ("staff", second)):
        assert name in result.stdout
        assert key not in result.stdout
        assert key[12:] not in result.stdout
        assert key[12:20] not in result.stdout
        assert key[:12] in result.stdout
    assert "courses,match" in result.stdout


@pytest.mark.parametrize("name", ["site [staging]", "[red]alert", "[/]", "a\\[b]"])
def test_key_names_are_shown_as_written(db_url: str, name: str) -> None:
    created = ridercrm(db_url, "keys", "create", "--name", name, "--scope", "match")
    assert created.exit_code == 0, created.output
    assert f"({name})" in created.stdout
    listing = ridercrm(db_url, "keys", "list")
    assert listing.exit_code == 0, listing.output
    assert name in listing.stdout
    revoked = ridercrm(db_url, "keys", "revoke", name)
    assert revoked.exit_code == 0, revoked.output
    assert f"({name})" in revoked.stdout


@pytest.mark.parametrize(
    "arguments",
    [
        ["keys", "revoke", "[/]"],
        ["keys", "create", "--name", "x", "--scope", "[/]"],
        ["audit", "show", "[/]"],
    ],
)
def test_odd_arguments_give_an_error_message_not_a_traceback(
    db_url: str, arguments: list[str]
) -> None:
    result = ridercrm(db_url, *arguments)
    assert result.exit_code in (1, 2)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "[/]" in result.stderr


def test_keys_revoke_makes_the_key_fail(db_url: str, client: TestClient) -> None:
    key = create_key(db_url, "leaving", "admin")
    keep = create_key(db_url, "staying", "admin")
    assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 200
    result = ridercrm(db_url, "keys", "revoke", "leaving")
    assert result.exit_code == 0, result.output
    assert "revoked" in result.stdout
    assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 401
    assert client.get("/admin/audit", headers={"X-API-Key": keep}).status_code == 200
    listing = ridercrm(db_url, "keys", "list")
    assert dt.date.today().isoformat() in listing.stdout.split("leaving")[1].splitlines()[0]


def test_keys_revoke_by_prefix_or_id(
    db_url: str, client: TestClient, sessions: sessionmaker[Session]
) -> None:
    by_prefix = create_key(db_url, "a", "admin")
    by_id = create_key(db_url, "b", "admin")
    assert ridercrm(db_url, "keys", "revoke", by_prefix[:12]).exit_code == 0
    with session_scope(sessions) as session:
        ident = session.scalar(select(ApiKey.id).where(ApiKey.name == "b"))
    assert ridercrm(db_url, "keys", "revoke", str(ident)).exit_code == 0
    for key in (by_prefix, by_id):
        assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 401


def test_keys_revoke_refuses_unknown_or_ambiguous_keys(db_url: str, client: TestClient) -> None:
    first = create_key(db_url, "twin", "admin")
    second = create_key(db_url, "twin", "admin")
    unknown = ridercrm(db_url, "keys", "revoke", "nobody")
    assert unknown.exit_code != 0
    assert "no active key" in unknown.stderr
    ambiguous = ridercrm(db_url, "keys", "revoke", "twin")
    assert ambiguous.exit_code != 0
    assert "use the id" in ambiguous.stderr
    for key in (first, second):
        assert client.get("/admin/audit", headers={"X-API-Key": key}).status_code == 200


def test_an_id_revokes_its_key_though_another_key_is_named_like_it(
    db_url: str, client: TestClient, sessions: sessionmaker[Session]
) -> None:
    """The refusal says "use the id": a key named "2" must not make key 2 unrevocable."""
    first = create_key(db_url, "first", "admin")
    with session_scope(sessions) as session:
        ident = str(session.scalar(select(ApiKey.id).where(ApiKey.name == "first")))
    named = create_key(db_url, ident, "admin")
    revoked = ridercrm(db_url, "keys", "revoke", ident)
    assert revoked.exit_code == 0, revoked.stderr
    assert client.get("/admin/audit", headers={"X-API-Key": first}).status_code == 401
    assert client.get("/admin/audit", headers={"X-API-Key": named}).status_code == 200


def test_keys_list_never_cuts_a_name_in_a_narrow_or_piped_output(db_url: str) -> None:
    name = "the booking website of Kilsyth, Somerton and Toowoomba"
    create_key(db_url, name, "courses", "match")
    narrow = runner.invoke(
        app, ["keys", "list"], env={"RIDERCRM_DATABASE_URL": db_url, "COLUMNS": "40"}
    )
    assert narrow.exit_code == 0, narrow.output
    assert name in narrow.stdout
    assert "courses,match" in narrow.stdout
    machines = runner.invoke(app, ["keys", "list", "--json"], env={"RIDERCRM_DATABASE_URL": db_url})
    (listed,) = json.loads(machines.stdout)
    assert listed["name"] == name
    assert listed["scopes"] == ["courses", "match"]


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
