"""An imported person's page, and `GET /admin/people/{id}`, say where the person came from:
the import run's file, the person's line in it, when and by whom (`ridercrm --as NAME` or
the OS user)."""

from __future__ import annotations

import getpass
from collections.abc import Callable
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from testkit.factories import create_person

from ridercrm.db import session_scope
from ridercrm.people.models import Person
from ridercrm.transfer.models import ImportRun
from tests.transfer.helpers import cli


def test_an_imported_persons_page_shows_the_import_run_and_line(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    console_as: Callable[..., TestClient],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    file = tmp_path / "spring-intake.csv"
    file.write_text("first_name,last_name\nZoe,Park\nYusuf,Ali\n")
    result = cli(db_url, "--as", "Dana at the desk", "import", "contacts", str(file))
    assert result.exit_code == 0, result.output
    again = tmp_path / "more.csv"
    again.write_text("first_name,last_name\nXavier,Ng\n")
    assert cli(db_url, "import", "leads", str(again)).exit_code == 0
    with session_scope(sessions) as session:
        yusuf = session.scalars(select(Person).where(Person.last_name == "Ali")).one()
        xavier = session.scalars(select(Person).where(Person.last_name == "Ng")).one()
        run = session.get(ImportRun, yusuf.import_run_id)
        assert run is not None
        assert (run.operator, run.imported, yusuf.import_line) == ("Dana at the desk", 2, 3)
        yusuf_id, xavier_id, run_id = yusuf.id, xavier.id, run.id
    viewer = console_as("viewer")
    page = viewer.get(f"/console/people/{yusuf_id}")
    assert page.status_code == 200
    assert "spring-intake.csv</code>, line 3, on " in page.text
    assert f"by Dana at the desk (import run {run_id}, contacts)" in page.text
    other = viewer.get(f"/console/people/{xavier_id}").text
    assert "more.csv</code>, line 2," in other
    assert f"by {getpass.getuser()} (import run" in other
    # The admin API reads the same origin.
    read = client.get(f"/admin/people/{yusuf_id}", headers=admin_headers).json()
    origin = read["imported_from"]
    assert origin.pop("imported_at").startswith(str(run.created_at.year))
    assert origin == {
        "run_id": run_id,
        "target": "contacts",
        "file_name": str(file),  # as the command was given it
        "operator": "Dana at the desk",
        "line": 3,
    }
    # A person created another way has no origin.
    made = create_person(client, admin_headers)
    page = viewer.get(f"/console/people/{made}")
    assert page.status_code == 200
    assert 'id="origin"' not in page.text
    made_read = client.get(f"/admin/people/{made}", headers=admin_headers).json()
    assert made_read["imported_from"] is None
    # A list shows people as they are stored, without reading their imports.
    listed = client.get("/admin/people", headers=admin_headers).json()["people"]
    assert all("imported_from" not in person for person in listed)
