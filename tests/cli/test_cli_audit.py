"""CLI actions that change something leave an audit record naming who ran them: the OS
user, or `ridercrm --as NAME`; a --dry-run leaves none, and no secret is stored."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner

from ridercrm.audit.models import AuditRecord
from ridercrm.cli import app
from ridercrm.db import session_scope
from ridercrm.demo import load_demo
from ridercrm.demo_courses import CHLOE, CHLOE_AGAIN

runner = CliRunner()


def run(db_url: str, *args: str) -> str:
    env = {"RIDERCRM_DATABASE_URL": db_url, "RIDERCRM_WEBHOOK_ALLOWED_HOSTS": "127.0.0.1"}
    result = runner.invoke(app, list(args), env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def cli_records(sessions: sessionmaker[Session]) -> list[tuple[str, str | None, int, str]]:
    with session_scope(sessions) as session:
        rows = session.execute(
            select(
                AuditRecord.operation,
                AuditRecord.staff_user,
                AuditRecord.response_status,
                AuditRecord.request_body,
            )
            .where(AuditRecord.method == "CLI")
            .order_by(AuditRecord.created_at, AuditRecord.id)
        ).all()
    return [tuple(row) for row in rows]  # type: ignore[misc]


def test_every_changing_cli_action_is_audited_with_its_operator(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    load_demo(sessions)
    me = getpass.getuser()
    key = run(db_url, "keys", "create", "--name", "website", "--scope", "match").splitlines()[-1]
    run(db_url, "--as", "Dana at the desk", "keys", "revoke", "website")
    password = run(
        db_url, "users", "create", "--name", "frontdesk", "--role", "staff"
    ).splitlines()[-1]
    run(db_url, "--as", "dana", "users", "reset-password", "frontdesk")
    secret = run(db_url, "webhooks", "add", "http://127.0.0.1:9/hooks", "--event", "lead.converted")
    file = tmp_path / "new.csv"
    file.write_text("first_name,last_name\nZoe,Park\n")
    run(db_url, "import", "contacts", str(file), "--dry-run")  # writes nothing, no record
    run(db_url, "import", "contacts", str(file))
    run(db_url, "--as", "dana", "duplicates", "merge", CHLOE, CHLOE_AGAIN, "--survivor", CHLOE)
    records = cli_records(sessions)
    assert [(operation, who, status) for operation, who, status, _ in records] == [
        ("cli.keys_create", me, 200),
        ("cli.keys_revoke", "Dana at the desk", 200),
        ("cli.users_create", me, 200),
        ("cli.users_reset_password", "dana", 200),
        ("cli.webhooks_add", me, 200),
        ("cli.import_contacts", me, 200),
        ("cli.duplicates_merge", "dana", 200),
    ]
    assert json.loads(records[0][3]) == {"name": "website", "scope": ["match"]}
    assert json.loads(records[5][3])["file"] == str(file)
    stored = " ".join(body for *_, body in records)
    assert key not in stored
    assert password not in stored
    assert secret.splitlines()[-1] not in stored


def test_a_refused_action_is_audited_as_refused(
    db_url: str, sessions: sessionmaker[Session]
) -> None:
    refused = runner.invoke(
        app, ["--as", "dana", "keys", "revoke", "nobody"], env={"RIDERCRM_DATABASE_URL": db_url}
    )
    assert refused.exit_code != 0
    assert cli_records(sessions) == [("cli.keys_revoke", "dana", 400, '{"ident": "nobody"}')]


def test_an_operator_name_with_control_characters_is_refused(
    db_url: str, sessions: sessionmaker[Session]
) -> None:
    """`--as` is written into audit records and shown on terminals and pages: a line break
    or an escape sequence in it could forge or hide what follows."""
    env = {"RIDERCRM_DATABASE_URL": db_url}
    for name in ("dana\nstaff_user: admin", "dana\x1b[2K", "dana\u202eatad", "dana\x00"):
        result = runner.invoke(app, ["--as", name, "keys", "create", "--name", "w"], env=env)
        assert result.exit_code == 2, (name, result.output)
        assert "--as" in result.output
        assert "control characters" in result.output
    assert cli_records(sessions) == []
