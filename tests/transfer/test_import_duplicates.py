"""`ridercrm import` after a duplicates scan: the people it writes are re-checked."""

from __future__ import annotations

import json
from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.duplicates import recheck
from ridercrm.people.models import Person
from tests.duplicates.test_scan import household, queue, run_scan
from tests.transfer.helpers import cli, write_csv


def waiting(sessions: sessionmaker[Session]) -> set[str]:
    with session_scope(sessions) as session:
        return recheck.waiting(session)


def test_the_import_command_marks_the_people_it_writes_and_the_recheck_finds_the_duplicate(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    people = household(client, admin_headers)
    run_scan(sessions)
    assert cli(db_url, "duplicates", "recheck").exit_code == 0  # what the scan left
    assert waiting(sessions) == set()
    before = {tuple(c["people"]) for c in queue(client, admin_headers)["clusters"]}
    assert before == {tuple(sorted([people["ann"], people["again"]]))}

    # A third record of the rider, from another system's export; and a stranger.
    file = write_csv(
        tmp_path / "contacts.csv",
        ["first_name", "last_name", "email", "date_of_birth", "drivers_license", "postcode"],
        [
            ["Ann", "Nguyen", "ann.nguyen@example.org", "1999-04-12", "L1234567", "3064"],
            ["Zed", "Park", "zed@example.com", "1980-01-01", "", "3000"],
        ],
    )
    imported = cli(db_url, "import", "contacts", str(file), "--on-match", "add")
    assert imported.exit_code == 0, imported.output
    with session_scope(sessions) as session:
        new = set(session.scalars(select(Person.id).where(Person.id.not_in(people.values()))))
    assert len(new) == 2
    assert waiting(sessions) == new

    rechecked = cli(db_url, "duplicates", "recheck")
    assert rechecked.exit_code == 0, rechecked.output
    assert json.loads(rechecked.stdout) == {"rechecked": 2}
    assert waiting(sessions) == set()
    with session_scope(sessions) as session:
        third = session.scalar(select(Person.id).where(Person.email == "ann.nguyen@example.org"))
    after = [sorted(c["people"]) for c in queue(client, admin_headers)["clusters"]]
    assert after == [sorted([people["ann"], people["again"], third])]
