"""Helpers of the import, export and demo tests: the CLI, CSV files, stored records."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from typer.testing import CliRunner, Result

from ridercrm.cli import app
from ridercrm.db import session_scope
from ridercrm.ids import RecordKind, new_id
from ridercrm.people.blocking import stored_keys
from ridercrm.people.index import identity_of
from ridercrm.people.models import PERSON_FIELDS, Person, PersonKey
from ridercrm.people.normalize import name_search
from ridercrm.products.models import Product

runner = CliRunner()

OUR_HEADER = ["id", *PERSON_FIELDS]
SALESFORCE_CONTACT = [
    "Id", "FirstName", "LastName", "Birthdate", "Email", "MailingPostalCode", "MobilePhone",
    "HomePhone", "MailingStreet", "MailingCity", "MailingState", "MailingCountry",
    "LeadSource", "HasOptedOutOfEmail", "Drivers_License__c", "License_Type__c", "Opt_In__c",
    "AccountId",
]  # fmt: skip


def cli(db_url: str, *args: str) -> Result:
    return runner.invoke(app, list(args), env={"RIDERCRM_DATABASE_URL": db_url})


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> Path:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(header)
        writer.writerows(rows)
    return path


def people(sessions: sessionmaker[Session]) -> dict[str, dict[str, Any]]:
    """Every stored person by id, with the fields an export carries."""
    names = ("id", "kind", *PERSON_FIELDS, "converted_contact_id")
    with session_scope(sessions) as session:
        rows = session.execute(select(*(Person.__table__.c[name] for name in names)))
        return {row.id: dict(row._mapping) for row in rows}


def products(sessions: sessionmaker[Session]) -> dict[str, dict[str, Any]]:
    table = Product.__table__
    with session_scope(sessions) as session:
        rows = session.execute(select(table.c.id, table.c.name, table.c.code, table.c.price,
                                      table.c.active))  # fmt: skip
        return {row.id: dict(row._mapping) for row in rows}


def assert_match_keys_in_step(sessions: sessionmaker[Session]) -> None:
    """Every stored person has exactly the matching keys the service computes, and their
    names' search forms (``normalize.name_search``) as the model keeps them."""
    with session_scope(sessions) as session:
        stored: dict[str, set[int]] = {}
        for key, person_id in session.execute(select(PersonKey.key, PersonKey.person_id)):
            stored.setdefault(person_id, set()).add(key)
        for person in session.scalars(select(Person)):
            assert stored.pop(person.id, set()) == stored_keys(identity_of(person)), person.id
            searched = (person.first_name_search, person.last_name_search)
            assert searched == (name_search(person.first_name), name_search(person.last_name))
        assert stored == {}


def fifteen(kind: RecordKind) -> str:
    return new_id(kind)[:15]
