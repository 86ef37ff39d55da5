"""Re-running an import: matched rows are skipped or update, an identical file is refused."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.people.models import Person
from tests.transfer.helpers import assert_match_keys_in_step, cli, people, write_csv

HEADER = ["FirstName", "LastName", "Birthdate", "Email", "MobilePhone", "MailingPostalCode",
          "MailingCity"]  # fmt: skip
SURNAMES = ["Nguyen", "Okafor", "Brennan", "Kowalski", "Haddad", "Lindqvist", "Moreau",
            "Takahashi", "Oyelaran", "Castellanos"]  # fmt: skip
GIVEN = ["Ann", "Bilal", "Chiara", "Dmitri", "Esi", "Farid", "Greta", "Hemi", "Ines", "Jonah"]


def hundred_people(city: str = "Somerton") -> list[list[str]]:
    """100 different people, as a Salesforce export without an Id column writes them."""
    rows = []
    for i in range(100):
        given, surname = GIVEN[i % 10], SURNAMES[i // 10]
        rows.append([given, surname, f"19{70 + i % 30}-0{1 + i % 9}-1{i % 10}",
                     f"{given}.{surname}.{i}@example.com".lower(), f"04{12000000 + i * 7919:08d}",
                     f"30{10 + i % 90:02d}", city])  # fmt: skip
    return rows


def test_the_same_file_twice_is_refused_and_stores_nobody_twice(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = write_csv(tmp_path / "contacts.csv", HEADER, hundred_people())
    first = cli(db_url, "import", "contacts", str(file))
    assert first.exit_code == 0, first.output
    assert first.stdout.strip().splitlines()[-1] == "imported 100 contacts, 0 bad rows"
    again = cli(db_url, "import", "contacts", str(file))
    assert again.exit_code == 2, again.output
    assert "--force" in again.stderr
    assert "same content" in again.stderr
    assert len(people(sessions)) == 100
    # Forced, the rows all match the people they made: reported and skipped.
    forced = cli(db_url, "import", "contacts", str(file), "--force")
    assert forced.exit_code == 0, forced.output
    lines = forced.stdout.strip().splitlines()
    assert lines[-1] == "imported 0 contacts, 100 skipped as already stored, 0 bad rows"
    assert sum(": skipped" in line and "matches contact 003" in line for line in lines) == 100
    assert len(people(sessions)) == 100


def test_a_changed_file_skips_matches_by_default_and_adds_the_new(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    assert cli(db_url, "import", "contacts", str(write_csv(tmp_path / "a.csv", HEADER,
               hundred_people()))).exit_code == 0  # fmt: skip
    newcomer = ["Kiri", "Walker", "1988-02-03", "kiri@example.com", "0499111222", "3064", "X"]
    changed = write_csv(tmp_path / "b.csv", HEADER, [*hundred_people("Kilsyth"), newcomer])
    result = cli(db_url, "import", "contacts", str(changed))
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == (
        "imported 1 contact, 100 skipped as already stored, 0 bad rows"
    )
    stored = people(sessions)
    assert len(stored) == 101
    assert sum(p["city"] == "Somerton" for p in stored.values()) == 100


def test_on_match_update_writes_the_rows_to_the_matched_people(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    assert cli(db_url, "import", "contacts", str(write_csv(tmp_path / "a.csv", HEADER,
               hundred_people()))).exit_code == 0  # fmt: skip
    moved = hundred_people("Kilsyth")
    moved[0][4] = "0400999888"  # a new mobile: the matching keys follow it
    changed = write_csv(tmp_path / "b.csv", HEADER, moved)
    dry = cli(db_url, "import", "contacts", str(changed), "--on-match", "update", "--dry-run")
    assert dry.stdout.strip().splitlines()[-1] == (
        "would import 0 contacts, 100 would be updated, 0 bad rows"
    )
    assert all(p["city"] == "Somerton" for p in people(sessions).values())
    result = cli(db_url, "import", "contacts", str(changed), "--on-match", "update")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == "imported 0 contacts, 100 updated, 0 bad rows"
    stored = people(sessions)
    assert len(stored) == 100
    assert all(p["city"] == "Kilsyth" for p in stored.values())
    assert sum(str(p["mobile_phone"]).endswith("400999888") for p in stored.values()) == 1
    assert_match_keys_in_step(sessions)


def test_on_match_add_stores_every_row_again(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = write_csv(tmp_path / "contacts.csv", HEADER, hundred_people())
    assert cli(db_url, "import", "contacts", str(file)).exit_code == 0
    result = cli(db_url, "import", "contacts", str(file), "--on-match", "add", "--force")
    assert result.exit_code == 0, result.output
    assert len(people(sessions)) == 200


def test_leads_are_matched_against_leads(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    rows = hundred_people()[:20]
    assert cli(db_url, "import", "contacts", str(write_csv(tmp_path / "c.csv", HEADER,
               rows))).exit_code == 0  # fmt: skip
    leads = write_csv(tmp_path / "l.csv", HEADER, rows)
    first = cli(db_url, "import", "leads", str(leads))
    # The same people as contacts do not stop them being stored as leads.
    assert first.stdout.strip().splitlines()[-1] == "imported 20 leads, 0 bad rows"
    again = write_csv(tmp_path / "l2.csv", HEADER, [*rows, rows[0]])
    second = cli(db_url, "import", "leads", str(again))
    assert second.exit_code == 0, second.output
    assert second.stdout.strip().splitlines()[-1] == (
        "imported 0 leads, 21 skipped as already stored, 0 bad rows"
    )
    assert len(people(sessions)) == 40


def test_a_dry_run_does_not_count_as_an_import(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    file = write_csv(tmp_path / "contacts.csv", HEADER, hundred_people())
    assert cli(db_url, "import", "contacts", str(file), "--dry-run").exit_code == 0
    result = cli(db_url, "import", "contacts", str(file))
    assert result.exit_code == 0, result.output
    assert len(people(sessions)) == 100


ID_HEADER = ["Id", *HEADER]


def test_a_rerun_with_an_id_column_recognises_the_stored_ids(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session]
) -> None:
    rows = [[new_id(RecordKind.CONTACT), *row] for row in hundred_people()[:10]]
    assert cli(db_url, "import", "contacts", str(write_csv(tmp_path / "a.csv", ID_HEADER,
               rows))).exit_code == 0  # fmt: skip
    # A corrected export: other cities, the same ids (15-character forms for some).
    corrected = [[r[0][:15] if n % 2 else r[0], *r[1:-1], "Kilsyth"] for n, r in enumerate(rows)]
    file = write_csv(tmp_path / "b.csv", ID_HEADER, corrected)
    skipped = cli(db_url, "import", "contacts", str(file))
    assert skipped.exit_code == 0, skipped.output
    lines = skipped.stdout.strip().splitlines()
    assert lines[-1] == "imported 0 contacts, 10 skipped as already stored, 0 bad rows"
    assert f"line 2: is contact {rows[0][0]}: skipped" in lines
    updated = cli(db_url, "import", "contacts", str(file), "--on-match", "update", "--force")
    assert updated.stdout.strip().splitlines()[-1] == "imported 0 contacts, 10 updated, 0 bad rows"
    stored = people(sessions)
    assert len(stored) == 10
    assert all(p["city"] == "Kilsyth" for p in stored.values())
    assert_match_keys_in_step(sessions)


def test_a_matched_rows_own_id_is_kept_and_works_afterwards(
    db_url: str,
    tmp_path: Path,
    sessions: sessionmaker[Session],
    client: TestClient,
    admin_headers: dict[str, str],
) -> None:
    assert cli(db_url, "import", "contacts", str(write_csv(tmp_path / "a.csv", HEADER,
               hundred_people()[:3]))).exit_code == 0  # fmt: skip
    before = people(sessions)
    # Another CRM's export of the same people, with its own ids.
    theirs = [[new_id(RecordKind.CONTACT), *row] for row in hundred_people()[:3]]
    result = cli(db_url, "import", "contacts", str(write_csv(tmp_path / "b.csv", ID_HEADER,
                 theirs)))  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.stdout.strip().splitlines()[-1] == (
        "imported 0 contacts, 3 skipped as already stored, 3 ids kept as aliases, 0 bad rows"
    )
    with session_scope(sessions) as session:
        for row in theirs:
            alias = session.get(Person, row[0])
            assert alias is not None
            assert alias.merged_into in before
    # The other CRM's id works in the operations and the admin API: it is the person.
    alias_id, email = theirs[0][0], theirs[0][4]
    shown = client.get(f"/admin/people/{alias_id}", headers=admin_headers).json()
    assert shown["merged_into"] in before
    survivor = shown["merged_into"]
    modified = client.post(
        "/crm/modify",
        json={"people_data": [{"ID": alias_id, "city": "Geelong"}]},
        headers=admin_headers,
    ).json()
    assert modified["details"][0]["status"] is True, modified
    assert people(sessions)[survivor]["city"] == "Geelong"
    assert people(sessions)[survivor]["email"] == email
    # A re-run of their file (forced: the same bytes) now recognises every id.
    again = cli(db_url, "import", "contacts", str(write_csv(tmp_path / "c.csv", ID_HEADER,
                theirs)), "--force")  # fmt: skip
    assert again.stdout.strip().splitlines()[-1] == (
        "imported 0 contacts, 3 skipped as already stored, 0 bad rows"
    )
    assert_match_keys_in_step(sessions)
