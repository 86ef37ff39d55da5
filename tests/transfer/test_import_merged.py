"""An export's merged records stay merged when it is imported (docs/decisions.md, Duplicates)."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.duplicates.merge import merge_people
from ridercrm.events.manage import create_endpoint
from ridercrm.events.models import Event
from ridercrm.ids import RecordKind, new_id
from ridercrm.netsafety import AllowList
from ridercrm.people import service as people_service
from ridercrm.people.models import CONTACT, Person, PersonKey
from ridercrm.people.schemas import PersonCreate
from tests.transfer.helpers import assert_match_keys_in_step, cli, write_csv


def merged_into(sessions: sessionmaker[Session]) -> dict[str, str | None]:
    with session_scope(sessions) as session:
        return dict(session.execute(select(Person.id, Person.merged_into)).all())


@pytest.mark.parametrize("form", ["ours", "salesforce"])
def test_export_then_import_keeps_a_merged_record_merged_into_its_survivor(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session], form: str
) -> None:
    with session_scope(sessions, write=True) as session:
        ann, anne, annie = (
            people_service.create_person(
                session, kind=CONTACT, data=PersonCreate(first_name=name, last_name="Nguyen")
            ).id
            for name in ("Ann", "Anne", "Annie")
        )
        merge_people(session, people_ids=[ann, anne], survivor_id=ann)
        merge_people(session, people_ids=[annie, ann], survivor_id=annie)
        # Merges keep every merged record one hop from its survivor (anne now points at
        # annie); a chain as versions before that stored it, which their exports hold:
        session.execute(update(Person).where(Person.id == anne).values(merged_into=ann))
    before = merged_into(sessions)
    assert before == {ann: annie, anne: ann, annie: None}
    path = tmp_path / "contacts.csv"
    assert cli(db_url, "export", "contacts", "-o", str(path), "--format", form).exit_code == 0
    # The merged records first: their survivors come later in the file.
    with path.open(encoding="utf-8") as handle:
        header, *rows = list(csv.reader(handle))
    rows.sort(key=lambda row: row[-1] == "")
    write_csv(path, header, rows)
    with session_scope(sessions, write=True) as session:
        session.execute(delete(PersonKey))
        session.execute(delete(Person))
        announced = set(session.scalars(select(Event.id)))
        # Events are stored only for the types an endpoint lists (docs/decisions.md,
        # "Events (webhooks)"): one listens for the people the import announces.
        create_endpoint(
            session,
            url="http://127.0.0.1:9/hook",
            event_types=["person.created"],
            description="listens to the import",
            allow=AllowList.parse("127.0.0.1"),
        )

    result = cli(db_url, "import", "contacts", str(path))
    assert result.exit_code == 0, result.output
    assert "ignored columns" not in result.output
    assert result.output.strip().splitlines()[-1] == "imported 3 contacts, 0 bad rows"
    assert merged_into(sessions) == before
    assert_match_keys_in_step(sessions)
    with session_scope(sessions) as session:
        # Only the live person was announced: the merged records stand for it.
        events = session.execute(select(Event.id, Event.type, Event.subject)).all()
        new = [(kind, subject) for id_, kind, subject in events if id_ not in announced]
        assert new == [("person.created", f"person:{annie}")]
    # Every old id works: the admin API reads the survivor through them.
    with session_scope(sessions) as session:
        assert people_service.resolve(session, anne).id == annie  # type: ignore[union-attr]


def test_a_merged_record_whose_survivor_is_nowhere_is_a_bad_row(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    stored, missing = new_id(RecordKind.CONTACT), new_id(RecordKind.CONTACT)
    first, second, third = (new_id(RecordKind.CONTACT) for _ in range(3))
    write_csv(tmp_path / "one.csv", ["id", "last_name"], [[stored, "Lee"]])
    assert cli(db_url, "import", "contacts", str(tmp_path / "one.csv")).exit_code == 0
    file = write_csv(
        tmp_path / "contacts.csv",
        ["id", "last_name", "merged_into"],
        [
            [first, "Lee", stored],  # into a person stored before
            [second, "Lee", missing],  # into no one
            [third, "Lee", "not-an-id"],
        ],
    )
    dry = cli(db_url, "import", "contacts", str(file), "--dry-run")
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 1, result.output
    lines = result.output.strip().splitlines()
    assert f"line 3: merged_into: {missing} is not stored nor in the file" in lines
    assert any(
        line.startswith("line 4: merged_into: not-an-id is not a contact id") for line in lines
    )
    assert lines[-1] == "imported 1 contact, 2 bad rows"
    assert dry.output.strip().splitlines()[-1] == "would import 1 contact, 2 bad rows"
    assert merged_into(sessions) == {stored: None, first: stored}
